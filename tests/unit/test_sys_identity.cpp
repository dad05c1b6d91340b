// tests/unit/test_sys_identity.cpp: the run's identity from the launcher's environment (Slurm,
// OpenMPI, PMIx, Kubernetes, none), its facts, and the -o placeholders, on fake environments
// with the variables each launcher really sets.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "sys/identity.hpp"
#include "test_cli_util.hpp"
#include "test_data_util.hpp"

namespace gb {
namespace {

sys::EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(RunIdentity, WithoutALauncherItIsTheHostAlone) {
  const auto id = sys::read_identity(fake_env({{"HOME", "/root"}}), "gpu07");
  EXPECT_EQ(id.host, "gpu07");
  EXPECT_EQ(id.scheduler, "none");
  EXPECT_FALSE(id.rank);
  EXPECT_FALSE(id.job_id);
  EXPECT_FALSE(id.world_size);
}

TEST(RunIdentity, SlurmGivesJobRankLocalRankWorldSizeAndNodes) {
  // What `srun -N 2 -n 4` exports to its second task on the second node.
  const auto id = sys::read_identity(
      fake_env({{"SLURM_JOB_ID", "4711"}, {"SLURM_PROCID", "3"}, {"SLURM_LOCALID", "1"},
                {"SLURM_NTASKS", "4"}, {"SLURM_JOB_NODELIST", "gpu[01-02]"},
                {"SLURMD_NODENAME", "gpu02"}}),
      "gpu02.cluster.example");
  EXPECT_EQ(id.scheduler, "slurm");
  EXPECT_EQ(id.host, "gpu02");  // the node's Slurm name
  EXPECT_EQ(id.job_id, "4711");
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(id.node_list, "gpu[01-02]");
}

TEST(RunIdentity, SlurmsOlderVariableNamesAreRead) {
  const auto id = sys::read_identity(
      fake_env({{"SLURM_JOBID", "12"}, {"SLURM_PROCID", "0"}, {"SLURM_NPROCS", "2"},
                {"SLURM_NODELIST", "n1"}}),
      "n1");
  EXPECT_EQ(id.job_id, "12");
  EXPECT_EQ(id.world_size, 2);
  EXPECT_EQ(id.node_list, "n1");
}

TEST(RunIdentity, OpenMpiGivesRankAndSizeAndThePmixNamespaceAsJob) {
  const auto id = sys::read_identity(
      fake_env({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                {"OMPI_COMM_WORLD_SIZE", "2"}, {"PMIX_RANK", "1"},
                {"PMIX_NAMESPACE", "prterun-node1-2203@1"}}),
      "node1");
  EXPECT_EQ(id.scheduler, "openmpi");
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 2);
  EXPECT_EQ(id.job_id, "prterun-node1-2203@1");
}

TEST(RunIdentity, PmixAloneGivesTheRank) {
  const auto id =
      sys::read_identity(fake_env({{"PMIX_RANK", "5"}, {"PMIX_NAMESPACE", "job9"}}), "n");
  EXPECT_EQ(id.scheduler, "pmix");
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.job_id, "job9");
}

TEST(RunIdentity, SlurmWinsOverPmixWhenSrunStartsAnMpiProgram) {
  const auto id = sys::read_identity(
      fake_env({{"SLURM_JOB_ID", "77"}, {"SLURM_PROCID", "2"}, {"PMIX_RANK", "2"},
                {"PMIX_NAMESPACE", "slurm.pmix.77.0"}}),
      "n");
  EXPECT_EQ(id.scheduler, "slurm");
  EXPECT_EQ(id.job_id, "77");
  EXPECT_EQ(id.rank, 2);
}

TEST(RunIdentity, KubernetesPodOfAnIndexedJobOnItsNode) {
  const auto id = sys::read_identity(
      fake_env({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"HOSTNAME", "gpubase-fleet-3-x7k2q"},
                {"POD_NAME", "gpubase-fleet-3-x7k2q"}, {"POD_NAMESPACE", "gpu-health"},
                {"NODE_NAME", "worker-17"}, {"JOB_NAME", "gpubase-fleet"},
                {"JOB_COMPLETION_INDEX", "3"}}),
      "gpubase-fleet-3-x7k2q");
  EXPECT_EQ(id.scheduler, "kubernetes");
  EXPECT_EQ(id.host, "worker-17");
  EXPECT_EQ(id.pod, "gpubase-fleet-3-x7k2q");
  EXPECT_EQ(id.pod_namespace, "gpu-health");
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.job_id, "gpubase-fleet");
}

TEST(RunIdentity, ARankThatIsNotANumberIsIgnored) {
  const auto id = sys::read_identity(fake_env({{"SLURM_JOB_ID", "1"}, {"SLURM_PROCID", "x1"}}),
                                     "n");
  EXPECT_EQ(id.scheduler, "slurm");
  EXPECT_FALSE(id.rank);
}

TEST(RunIdentityFacts, HostAndSchedulerAlwaysTheRestWhenKnown) {
  sys::RunIdentity id;
  id.host = "gpu01";
  id.scheduler = "slurm";
  id.job_id = "4711";
  id.rank = 3;
  id.world_size = 8;
  gb::Run run;
  run.environment = sys::identity_facts(id);
  EXPECT_EQ(run.fact("run.host"), "gpu01");
  EXPECT_EQ(run.fact("run.scheduler"), "slurm");
  EXPECT_EQ(run.fact("run.job_id"), "4711");
  EXPECT_EQ(run.fact_number("run.rank"), 3);
  EXPECT_EQ(run.fact_number("run.world_size"), 8);
  EXPECT_EQ(run.find_fact("run.local_rank"), nullptr);
  EXPECT_EQ(run.find_fact("run.pod"), nullptr);
}

TEST(OutputPattern, PlaceholdersTakeHostRankAndJob) {
  sys::RunIdentity id;
  id.host = "gpu01";
  id.rank = 12;
  id.job_id = "4711";
  EXPECT_EQ(sys::expand_output_pattern("runs/%N-%r-%j.json", id), "runs/gpu01-12-4711.json");
  EXPECT_EQ(sys::expand_output_pattern("100%%.json", id), "100%.json");
  EXPECT_EQ(sys::expand_output_pattern("plain.json", id), "plain.json");
}

TEST(OutputPattern, WithoutALauncherRankIsZeroAndJobIsNojob) {
  sys::RunIdentity id;
  id.host = "box";
  EXPECT_EQ(sys::expand_output_pattern("%N-%r-%j", id), "box-0-nojob");
}

TEST(OutputPattern, ASlashInAValueCannotMakeAFolder) {
  sys::RunIdentity id;
  id.host = "a/b";
  id.job_id = "x/y";
  EXPECT_EQ(sys::expand_output_pattern("%N_%j", id), "a_b_x_y");
}

TEST(OutputPattern, UnknownPlaceholderOrTrailingPercentIsAUsageError) {
  sys::RunIdentity id;
  id.host = "h";
  for (const char* bad : {"run-%x.json", "run-%"}) {
    try {
      sys::expand_output_pattern(bad, id);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::usage);
      EXPECT_NE(std::string(e.what()).find("%N"), std::string::npos) << e.what();
    }
  }
}

// The whole path: `gpubase probe --only env --json -o DIR/%N-%r.json` under Slurm's variables
// writes the file the pattern names, with the identity facts in the run.
TEST(OutputPattern, AProbeRunUnderSlurmWritesItsNamedFileWithTheIdentityFacts) {
  test::TempDir dir;
  ::setenv("SLURM_JOB_ID", "4711", 1);
  ::setenv("SLURM_PROCID", "1", 1);
  ::setenv("SLURM_NTASKS", "2", 1);
  ::setenv("SLURMD_NODENAME", "node-a", 1);
  const auto o = test::run_gpubase(
      {"probe", "--only", "env", "--json", "-q", "-o", (dir / "%N-%r-%j.json").string()});
  for (const char* v : {"SLURM_JOB_ID", "SLURM_PROCID", "SLURM_NTASKS", "SLURMD_NODENAME"})
    ::unsetenv(v);
  EXPECT_TRUE(o.code == 0 || o.code == 3) << o.err;  // 3: no GPU here
  const auto file = dir / "node-a-1-4711.json";
  ASSERT_TRUE(std::filesystem::exists(file)) << o.err;
  const gb::Run run = cli::load_run(file);
  EXPECT_EQ(run.fact("run.host"), "node-a");
  EXPECT_EQ(run.fact("run.scheduler"), "slurm");
  EXPECT_EQ(run.fact("run.job_id"), "4711");
  EXPECT_EQ(run.fact_number("run.rank"), 1);
  EXPECT_EQ(run.fact_number("run.world_size"), 2);
}

}  // namespace
}  // namespace gb
