// sys/identity.cpp: see identity.hpp. The variables read, per launcher:
//   Slurm       SLURM_JOB_ID (SLURM_JOBID), SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS
//               (SLURM_NPROCS), SLURM_JOB_NODELIST (SLURM_NODELIST), SLURMD_NODENAME
//   OpenMPI     OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_SIZE;
//               the job id from PMIX_NAMESPACE (OpenMPI 5) or OMPI_MCA_ess_base_jobid (4)
//   PMIx        PMIX_RANK, PMIX_NAMESPACE (any PMIx launcher: prterun, Slurm's --mpi=pmix)
//   Kubernetes  KUBERNETES_SERVICE_HOST (inside a pod), POD_NAME, POD_NAMESPACE, NODE_NAME,
//               JOB_NAME (the Downward API variables deploy/ sets), JOB_COMPLETION_INDEX
//               (Indexed Jobs)
#include "sys/identity.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdlib>

#include "core/error.hpp"

namespace gb::sys {

namespace {

std::optional<int> parse_int(const std::optional<std::string>& text) {
  if (!text || text->empty()) return std::nullopt;
  int v = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, v);
  if (ec != std::errc() || ptr != end || v < 0) return std::nullopt;
  return v;
}

// The first of the variables that is set and not empty.
std::optional<std::string> first_set(const EnvLookup& env,
                                     std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (auto v = env(name); v && !v->empty()) return v;
  return std::nullopt;
}

std::string gethostname_string() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  return buf;
}

// A file-name-safe form of a placeholder's value.
std::string file_safe(std::string s) {
  for (char& c : s)
    if (c == '/' || c == '\0') c = '_';
  return s.empty() ? std::string("_") : s;
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

RunIdentity read_identity(const EnvLookup& env, const std::string& hostname) {
  RunIdentity id;
  id.host = hostname;
  id.scheduler = "none";

  const auto slurm_job = first_set(env, {"SLURM_JOB_ID", "SLURM_JOBID"});
  const auto slurm_rank = parse_int(env("SLURM_PROCID"));
  const auto ompi_rank = parse_int(env("OMPI_COMM_WORLD_RANK"));
  const auto pmix_rank = parse_int(env("PMIX_RANK"));
  const bool in_pod = first_set(env, {"KUBERNETES_SERVICE_HOST"}).has_value();

  if (slurm_job || slurm_rank) {
    id.scheduler = "slurm";
    id.job_id = slurm_job;
    id.rank = slurm_rank;
    id.local_rank = parse_int(env("SLURM_LOCALID"));
    id.world_size = parse_int(first_set(env, {"SLURM_NTASKS", "SLURM_NPROCS"}));
    id.node_list = first_set(env, {"SLURM_JOB_NODELIST", "SLURM_NODELIST"});
    if (auto node = first_set(env, {"SLURMD_NODENAME"})) id.host = *node;
  }
  if (ompi_rank && !id.rank) {
    if (id.scheduler == "none") id.scheduler = "openmpi";
    id.rank = ompi_rank;
    id.local_rank = parse_int(env("OMPI_COMM_WORLD_LOCAL_RANK"));
    id.world_size = parse_int(env("OMPI_COMM_WORLD_SIZE"));
  }
  if (pmix_rank && !id.rank) {
    if (id.scheduler == "none") id.scheduler = "pmix";
    id.rank = pmix_rank;
  }
  if ((ompi_rank || pmix_rank) && !id.job_id)
    id.job_id = first_set(env, {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"});
  if (in_pod) {
    if (id.scheduler == "none") id.scheduler = "kubernetes";
    id.pod = first_set(env, {"POD_NAME", "HOSTNAME"});
    id.pod_namespace = first_set(env, {"POD_NAMESPACE"});
    if (!id.rank) id.rank = parse_int(env("JOB_COMPLETION_INDEX"));
    if (!id.job_id) id.job_id = first_set(env, {"JOB_NAME"});
    // A pod's host name is the pod's; the node it runs on is what a fleet is grouped by.
    if (auto node = first_set(env, {"NODE_NAME"}); node && id.scheduler == "kubernetes")
      id.host = *node;
  }
  return id;
}

RunIdentity current_identity() { return read_identity(process_env(), gethostname_string()); }

std::vector<Fact> identity_facts(const RunIdentity& id) {
  std::vector<Fact> facts;
  facts.push_back(Fact::text("run.host", "host", id.host));
  facts.push_back(Fact::text("run.scheduler", "launched by", id.scheduler));
  if (id.job_id) facts.push_back(Fact::text("run.job_id", "job id", *id.job_id));
  if (id.rank) facts.push_back(Fact::numeric("run.rank", "rank", *id.rank, "", 0));
  if (id.local_rank)
    facts.push_back(Fact::numeric("run.local_rank", "local rank", *id.local_rank, "", 0));
  if (id.world_size)
    facts.push_back(Fact::numeric("run.world_size", "world size", *id.world_size, "", 0));
  if (id.node_list) facts.push_back(Fact::text("run.node_list", "nodes", *id.node_list));
  if (id.pod) facts.push_back(Fact::text("run.pod", "pod", *id.pod));
  if (id.pod_namespace) facts.push_back(Fact::text("run.namespace", "namespace", *id.pod_namespace));
  return facts;
}

bool has_gpu_placeholder(const std::string& pattern) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == 'g') return true;
    ++i;  // skip the placeholder's letter (%%g is a '%' and a 'g')
  }
  return false;
}

std::string expand_output_pattern(const std::string& pattern, const RunIdentity& id,
                                  std::optional<int> gpu) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    if (i + 1 == pattern.size())
      throw Error(ErrorKind::usage, "-o " + pattern +
                                        ": a '%' at the end; placeholders are %N (host), %r "
                                        "(rank), %j (job id), %g (GPU index), %% (a '%')");
    const char c = pattern[++i];
    switch (c) {
      case 'N': out += file_safe(id.host); break;
      case 'r': out += std::to_string(id.rank.value_or(0)); break;
      case 'j': out += file_safe(id.job_id.value_or("nojob")); break;
      case 'g':
        if (!gpu)
          throw Error(ErrorKind::usage, "-o " + pattern +
                                            ": %g (the GPU index) is for commands that run on a "
                                            "GPU (probe)");
        out += std::to_string(*gpu);
        break;
      case '%': out += '%'; break;
      default:
        throw Error(ErrorKind::usage,
                    "-o " + pattern + ": unknown placeholder %" + std::string(1, c) +
                        " (placeholders: %N host, %r rank, %j job id, %g GPU index, %% a '%')");
    }
  }
  return out;
}

}  // namespace gb::sys
