// sys/identity.hpp: who and where a run is, for merging the runs of many GPUs and nodes: the
// host name, and what the launcher put into the environment -- the scheduler's job id, the
// process's rank, local rank and world size, the node list (Slurm `SLURM_*`, OpenMPI
// `OMPI_COMM_WORLD_*`, PMIx `PMIX_RANK`, a Kubernetes pod's name, namespace and
// `JOB_COMPLETION_INDEX`). Read from a lookup function so the CPU tests feed a fake environment.
// Also the `-o` placeholders built on it (%N host, %r rank, %j job id, %g GPU index, %% a '%').
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"

namespace gb::sys {

// A variable's value, or empty when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
// The process's real environment (getenv).
EnvLookup process_env();

struct RunIdentity {
  std::string host;       // gethostname (Slurm's SLURMD_NODENAME when set: the node's Slurm name)
  std::string scheduler;  // "slurm", "openmpi", "pmix", "kubernetes" or "none"
  std::optional<std::string> job_id;
  std::optional<int> rank;
  std::optional<int> local_rank;
  std::optional<int> world_size;
  std::optional<std::string> node_list;  // Slurm's compact form ("gpu[01-04]")
  std::optional<std::string> pod;        // Kubernetes pod name
  std::optional<std::string> pod_namespace;
};

// Reads the identity from `env`; `hostname` is the kernel's host name. When several launchers'
// variables are present (srun starting an MPI program under PMIx), Slurm wins for the job id and
// node list, and the first of Slurm, OpenMPI, PMIx, Kubernetes that names a rank gives the rank.
RunIdentity read_identity(const EnvLookup& env, const std::string& hostname);
// read_identity(process_env(), gethostname()).
RunIdentity current_identity();

// The run's identity facts: run.host (always), run.scheduler (always), run.job_id, run.rank,
// run.local_rank, run.world_size, run.node_list, run.pod, run.namespace (each only when known).
std::vector<Fact> identity_facts(const RunIdentity& id);

// Expands -o placeholders: %N host, %r rank (0 without a launcher), %j job id ("nojob" without
// one), %g the GPU's CUDA index (commands that run on one GPU of several: `gpu`; a usage error
// where it is empty), %% a '%'. Throws gb::Error (usage) for any other '%' sequence, naming it.
// Characters that cannot be in a file name ('/' in a host name) become '_'.
std::string expand_output_pattern(const std::string& pattern, const RunIdentity& id,
                                  std::optional<int> gpu = std::nullopt);
// True when the pattern has a %g placeholder (one file per GPU).
bool has_gpu_placeholder(const std::string& pattern);

}  // namespace gb::sys
