// `toposched exec` and `toposched export slurm --dir` through the real binary (no Slurm needed).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli/cli_util.h"

namespace toposched::cli_testing {
namespace {

// Sets variables for the duration of a test (children inherit them).
class ScopedEnv {
 public:
  explicit ScopedEnv(std::vector<std::pair<std::string, std::string>> vars)
      : vars_(std::move(vars)) {
    for (const auto& [k, v] : vars_) setenv(k.c_str(), v.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : vars_) unsetenv(k.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::string>> vars_;
};

TEST(ExecCli, SetsTheRingAndExecsTheCommand) {
  ScopedEnv env({{"SLURM_JOB_GPUS", "0,1,2,3,4,5,6,7"},
                 {"SLURM_LOCALID", "1"},
                 {"SLURM_PROCID", "9"},
                 {"SLURM_TASKS_PER_NODE", "8(x2)"},
                 {"SLURM_NODEID", "1"}});
  Result r = RunCli("exec --print --topo " + kV100 +
                    " -- printenv CUDA_VISIBLE_DEVICES NCCL_IB_HCA TOPOSCHED_RANK_GPUS");
  ASSERT_EQ(r.code, 0) << r.err;
  // The plan line, then what the command saw: the NVLink ring, the NIC, local rank 1's GPU.
  EXPECT_NE(r.out.find("toposched exec: rank 9 (local 1/8)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n0,3,2,1,5,6,7,4\n=mlx5_0\n3\n"), std::string::npos) << r.out;
}

TEST(ExecCli, NoGpusIsAClearError) {
  unsetenv("CUDA_VISIBLE_DEVICES");
  Result r = RunCli("exec --topo " + kV100 + " -- true");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("no GPUs visible"), std::string::npos) << r.err;
}

TEST(ExportSlurmCli, WritesNodeLines) {
  std::string dir = TempDir() + "/slurm-export";
  Result r = RunCli("export slurm " + std::string(TS_SOURCE_DIR) +
                    "/data/clusters/slurm-8node.yaml --dir " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string nodes = Slurp(dir + "/nodes.conf");
  EXPECT_NE(nodes.find("NodeName=gpu08 CPUs=48 Sockets=2 CoresPerSocket=12 ThreadsPerCore=2 "
                       "Gres=gpu:v100:8\n"),
            std::string::npos)
      << nodes;
  std::string gres = Slurp(dir + "/gres.conf");
  EXPECT_NE(gres.find("File=/dev/nvidia4 Cores=12-23 Links=2,0,0,0,-1,1,1,2\n"), std::string::npos)
      << gres;
}

}  // namespace
}  // namespace toposched::cli_testing
