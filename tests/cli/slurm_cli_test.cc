// `toposched exec` and `toposched export slurm --dir` through the real binary (no Slurm needed).
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"

namespace toposched::cli_testing {
namespace {

using ::toposched::testing::HasSubstr;

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
  EXPECT_THAT(r.out, HasSubstr("toposched exec: rank 9 (local 1/8)")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("\n0,3,2,1,5,6,7,4\n=mlx5_0\n3\n")) << r.out;
}

TEST(ExecCli, NoGpusIsAClearError) {
  unsetenv("CUDA_VISIBLE_DEVICES");
  Result r = RunCli("exec --topo " + kV100 + " -- true");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("no GPUs visible")) << r.err;
}

TEST(ExportSlurmCli, WritesNodeLines) {
  std::string dir = TempDir() + "/slurm-export";
  Result r = RunCli("export slurm " + std::string(TS_SOURCE_DIR) +
                    "/data/clusters/slurm-8node.yaml --dir " + dir);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string nodes = Slurp(dir + "/nodes.conf");
  EXPECT_THAT(nodes,
              HasSubstr("NodeName=gpu08 CPUs=48 Sockets=2 CoresPerSocket=12 ThreadsPerCore=2 "
                        "Gres=gpu:v100:8\n"))
      << nodes;
  std::string gres = Slurp(dir + "/gres.conf");
  EXPECT_THAT(gres, HasSubstr("File=/dev/nvidia4 Cores=12-23 Links=2,0,0,0,-1,1,1,2\n")) << gres;
}

}  // namespace
}  // namespace toposched::cli_testing
