#include "slurm/exec_env.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/strings.h"
#include "select/ring.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/import.h"

namespace toposched::slurm {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

// 8x V100 SXM2 in the hybrid cube-mesh, GPU0-3 on socket 0 (CPUs 0-11,24-35), GPU4-7 on
// socket 1, one InfiniBand NIC (mlx5_0) at PIX to GPU2 and GPU3.
topo::NodeTopology V100() {
  auto t = topo::io::ImportTopologyFile(
      testing::SourceDir() +
          "/data/samples/nvidia-smi/02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt",
      topo::io::TopoFormat::kAuto);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return *t;
}

std::string EnvOf(const ExecPlan& p, const std::string& k) {
  for (const auto& [key, v] : p.env) {
    if (key == k) return v;
  }
  return "<unset>";
}

std::vector<int> Ints(const std::string& s) {
  std::vector<int> out;
  for (const std::string& x : Split(s, ',', true)) out.push_back(static_cast<int>(*ParseInt(x)));
  return out;
}

TEST(PlanExec, EightLocalRanksGetTheNvlinkRingInOrder) {
  topo::NodeTopology t = V100();
  std::map<std::string, std::string> env = {{"SLURM_PROCID", "11"},
                                            {"SLURM_LOCALID", "3"},
                                            {"SLURM_NODEID", "1"},
                                            {"SLURMD_NODENAME", "gpu02"},
                                            {"SLURM_STEP_TASKS_PER_NODE", "8(x2)"},
                                            {"SLURM_JOB_GPUS", "0,1,2,3,4,5,6,7"},
                                            {"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}};
  auto p = PlanExec(env, t);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->local_size, 8);
  EXPECT_EQ(p->global_rank, 11);
  ASSERT_EQ(p->ring.size(), 8u);
  EXPECT_EQ(std::set<int>(p->ring.begin(), p->ring.end()).size(), 8u);
  // Every ring edge is an NVLink edge (the cube-mesh has a Hamiltonian NVLink cycle), which the
  // index order 0..7 is not (GPU3-GPU4 is SYS).
  for (size_t i = 0; i < 8; ++i) {
    int a = t.gpu_pos(p->ring[i]), b = t.gpu_pos(p->ring[(i + 1) % 8]);
    EXPECT_EQ(t.gpu_gpu(a, b).cls, topo::PathClass::kNV)
        << p->ring[i] << "-" << p->ring[(i + 1) % 8];
  }
  EXPECT_NE(t.gpu_gpu(t.gpu_pos(3), t.gpu_pos(4)).cls, topo::PathClass::kNV);
  // One GPU per rank: every rank sees the whole ring and uses device <local rank>.
  EXPECT_EQ(Ints(EnvOf(*p, "CUDA_VISIBLE_DEVICES")), p->ring);
  ASSERT_EQ(p->rank_gpus.size(), 1u);
  EXPECT_EQ(p->rank_gpus[0], p->ring[3]);
  EXPECT_EQ(EnvOf(*p, "NCCL_IB_HCA"), "=mlx5_0");
  // Bound to the CPUs of the rank's GPU's socket.
  int g = p->rank_gpus[0];
  std::vector<int> want = g < 4 ? *ParseIntList("0-11,24-35") : *ParseIntList("12-23,36-47");
  EXPECT_EQ(p->cpus, want);
}

TEST(PlanExec, ConstrainedDevicesArePairedByPosition) {
  // With device constraint Slurm renumbers: the job holds GPUs 4-7, CUDA sees them as 0-3.
  topo::NodeTopology t = V100();
  std::map<std::string, std::string> env = {{"SLURM_LOCALID", "0"},
                                            {"SLURM_TASKS_PER_NODE", "2"},
                                            {"SLURM_JOB_GPUS", "4,5,6,7"},
                                            {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}};
  auto p = PlanExec(env, t);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->gpus, (std::vector<int>{4, 5, 6, 7}));
  ASSERT_EQ(p->rank_gpus.size(), 2u);  // 4 GPUs over 2 local ranks
  // The rank's two GPUs as CUDA names them (index - 4), in ring order, joined by NVLink.
  std::vector<int> cuda = Ints(EnvOf(*p, "CUDA_VISIBLE_DEVICES"));
  ASSERT_EQ(cuda.size(), 2u);
  EXPECT_EQ(cuda[0], p->rank_gpus[0] - 4);
  EXPECT_EQ(cuda[1], p->rank_gpus[1] - 4);
  EXPECT_EQ(t.gpu_gpu(t.gpu_pos(p->rank_gpus[0]), t.gpu_pos(p->rank_gpus[1])).cls,
            topo::PathClass::kNV);
  EXPECT_EQ(p->cpus, *ParseIntList("12-23,36-47"));
}

TEST(PlanExec, UnevenSplitGivesEveryRankTheRingWithANote) {
  std::map<std::string, std::string> env = {
      {"SLURM_LOCALID", "1"}, {"SLURM_NTASKS_PER_NODE", "3"}, {"CUDA_VISIBLE_DEVICES", "0,1,2,3"}};
  auto p = PlanExec(env, V100());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->rank_gpus, p->ring);
  ASSERT_FALSE(p->notes.empty());
  EXPECT_THAT(p->notes[0], HasSubstr("do not divide"));
}

TEST(PlanExec, Errors) {
  topo::NodeTopology t = V100();
  auto no_gpus = PlanExec({{"SLURM_LOCALID", "0"}}, t);
  ASSERT_THAT(no_gpus, StatusIs(StatusCode::kInvalidArgument, HasSubstr("no GPUs visible")));
  auto bad_gpu = PlanExec({{"SLURM_JOB_GPUS", "0,9"}}, t);
  ASSERT_THAT(bad_gpu, StatusIs(StatusCode::kInvalidArgument, HasSubstr("GPU 9")));
  auto mismatch = PlanExec({{"SLURM_JOB_GPUS", "0,1"}, {"CUDA_VISIBLE_DEVICES", "0"}}, t);
  ASSERT_THAT(mismatch, StatusIs(StatusCode::kInvalidArgument, HasSubstr("different GPU counts")));
  auto bad_local = PlanExec(
      {{"SLURM_LOCALID", "4"}, {"SLURM_TASKS_PER_NODE", "4"}, {"SLURM_JOB_GPUS", "0,1,2,3"}}, t);
  ASSERT_THAT(bad_local, StatusIs(StatusCode::kInvalidArgument, HasSubstr("SLURM_LOCALID=4")));
  auto bad_tasks = PlanExec({{"SLURM_TASKS_PER_NODE", "4(y2)"}, {"SLURM_JOB_GPUS", "0"}}, t);
  EXPECT_THAT(bad_tasks,
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("SLURM_TASKS_PER_NODE=\"4(y2)\": expected counts like 4(x2),3")));
}

TEST(FormatExecPlan, NamesWhatWasSet) {
  auto p = PlanExec({{"SLURM_LOCALID", "0"},
                     {"SLURMD_NODENAME", "gpu01"},
                     {"SLURM_TASKS_PER_NODE", "1"},
                     {"SLURM_JOB_GPUS", "2,3"}},
                    V100());
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::string s = FormatExecPlan(*p);
  EXPECT_THAT(s, HasSubstr("on gpu01")) << s;
  EXPECT_THAT(s, HasSubstr("CUDA_VISIBLE_DEVICES=2,3")) << s;
  EXPECT_THAT(s, HasSubstr("NCCL_IB_HCA==mlx5_0")) << s;
  EXPECT_THAT(s, HasSubstr("CPUs 0-11,24-35")) << s;
}

}  // namespace
}  // namespace toposched::slurm
