// The second round of symptom families (docs/diagnose.md, "Families, second round"), written
// against the misses of data/diagnosis-corpus/dev grouped by the family the rules did not know:
// for one dev log per family, the top cause is its label and cites the line that says so. Then
// each family's other wordings, one line each: those lines are written from the emitting tool's
// own message format (the source named beside each), not taken from a log; and the traps.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diag/dev_corpus_case.h"
#include "diag/diagnose.h"

namespace toposched::diag {
namespace {

using Case = DevCorpusCase;

const std::vector<Case> kSecondRound = {
    // NCCL's topology search settling for less; a PCI tree it cannot read (weak)
    {"efa-p4d-topo-no-path-pattern4-bad-performance-awsofi-64.log", "nccl_degraded",
     "Could not find a path for pattern 4"},
    {"topo-cannot-read-pcie-link-speed-1-channel-low-ib-bw-nccltests-182.log", "nccl_degraded",
     "Topology detection : could not read"},
    // c10d's collective check: the ranks took different paths
    {"collective-mismatch-allgather-vs-reduce-rank1-rank7-simpletuner-2712.log",
     "application_error", "Detected mismatch between collectives on ranks"},
    // a traceback whose exception line was cut: the program failed (weak)
    {"connection-reset-by-peer-pin-memory-thread-after-last-step-trap-deepspeed-887.log",
     "application_error", "Traceback (most recent call last):"},
    // an eviction after the workload was admitted: the earlier "no capacity" has passed
    {"kueue-workload-evicted-podsready-timeout-events-kueue-2376.log", "evicted",
     "EvictedDueToPodsReadyTimeout"},
    // kubectl rows of a job and its pod still Pending
    {"vcjob-pending-npu-node-label-check-failed-volcano-4446.log", "unschedulable",
     "mindx-dls-test   Pending"},
    // sacct's ExitCode column: a step ended by SIGUSR1, the time limit's warning signal
    {"sacct-steps-cancelled-exit-0-10-unhandled-sigusr1-cluster-utils-87.log", "timeout",
     "CANCELLED|0:10"},
    // NCCL's bootstrap unwinding a system error
    {"nccl-bootstrap-socket-connect-in-progress-master-node-g105-allreduce-hang-pytorch-131781.log",
     "rendezvous_failure", "bootstrap.cc:275 -> 2"},
    // an RDMA provider that cannot open the device; a net plugin that failed to start
    {"rccl-bnxt-re-provider-kernel-abi-mismatch-no-ib-device-socket-codeidx-71646980707.log",
     "nccl_transport_fallback", "does not support the kernel ABI"},
    {"ofi-plugin-init-failed-endpoint-invalid-arg-falls-to-socket-cloudwatch-awsofi-889.log",
     "nccl_transport_fallback", "aws-ofi-nccl initialization failed"},
    // NVLS unavailable in an otherwise normal start: degraded, not healthy
    {"nvls-multicast-not-available-2node-megatron-sft-ms-swift-6107.log", "nccl_degraded",
     "NVLS multicast support is not available"},
};

class SecondRoundLog : public ::testing::TestWithParam<Case> {};

TEST_P(SecondRoundLog, TopCauseIsTheLabelAndCitesTheLineThatSaysSo) {
  ExpectTopCauseCites(GetParam());
}

INSTANTIATE_TEST_SUITE_P(DevCorpus, SecondRoundLog, ::testing::ValuesIn(kSecondRound),
                         DevCorpusCaseName);

std::string TopOf2(const std::string& text) {
  const Diagnosis d = DiagnoseText(text, "lines", nullptr);
  return d.causes.empty() ? "none" : CategoryName(d.causes.front().category);
}

TEST(SecondRoundWordings, SignalsInEveryLaunchersWords) {
  // torch.multiprocessing.spawn's ProcessExitedException; the DataLoader's worker check;
  // DeepSpeed's launcher; bash's job report; a core dump.
  EXPECT_EQ(TopOf2("ProcessExitedException: process 1 terminated with signal SIGKILL\n"),
            "host_oom");
  EXPECT_EQ(TopOf2("RuntimeError: DataLoader worker (pid 12345) is killed by signal: Killed.\n"),
            "host_oom");
  EXPECT_EQ(TopOf2("[INFO] [launch.py:350:main] Process 123 exits with return code = -9\n"),
            "host_oom");
  EXPECT_EQ(TopOf2("slurm_script: line 20: 12345 Killed                  python train.py\n"),
            "host_oom");
  EXPECT_EQ(TopOf2("Segmentation fault (core dumped)\n"), "application_error");
  // torchelastic's agent told to stop (a cancel, a preemption or a time limit sends SIGTERM).
  EXPECT_EQ(TopOf2("torch.distributed.elastic.multiprocessing.api.SignalException: Process 4321 "
                   "got signal: 15\n"),
            "cancelled");
  // torchelastic closing the other workers after one failed is no signal of the job's fate.
  EXPECT_EQ(TopOf2("Sending process 4567 closing signal SIGTERM\n"), "none");
}

TEST(SecondRoundWordings, HostMemoryInTheKillersAndTheAllocatorsWords) {
  // Slurm >= 21.08's task/cgroup message; PyTorch's CPU allocator; Python's MemoryError.
  EXPECT_EQ(TopOf2("slurmstepd: error: Detected 1 oom_kill event in StepId=123.0. Some of the "
                   "step tasks have been OOM Killed.\n"),
            "host_oom");
  EXPECT_EQ(TopOf2("RuntimeError: [enforce fail at alloc_cpu.cpp:83] data. DefaultCPUAllocator: "
                   "can't allocate memory: you tried to allocate 123 bytes.\n"),
            "host_oom");
  EXPECT_EQ(TopOf2("MemoryError: Unable to allocate 3.2 GiB for an array\n"), "host_oom");
  // A verbs call's ENOMEM is a memlock limit, not the host's memory.
  EXPECT_EQ(TopOf2("NCCL WARN Call to ibv_reg_mr failed with error Cannot allocate memory\n") ==
                "host_oom",
            false);
}

TEST(SecondRoundWordings, DeviceMemoryInEveryFrameworksWords) {
  EXPECT_EQ(TopOf2("RuntimeError: CUDA error: out of memory\n"), "gpu_oom");
  EXPECT_EQ(TopOf2("XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
                   "1.2GiB\n"),
            "gpu_oom");
  EXPECT_EQ(TopOf2("torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB\n"),
            "gpu_oom");
}

TEST(SecondRoundWordings, CudaErrorsTheProgramsAndTheHardwares) {
  EXPECT_EQ(TopOf2("RuntimeError: CUDA error: device-side assert triggered\n"),
            "application_error");
  EXPECT_EQ(TopOf2("RuntimeError: CUDA error: misaligned address\n"), "application_error");
  EXPECT_EQ(TopOf2("RuntimeError: CUDA error: an uncorrectable NVLink error was detected during "
                   "the execution\n"),
            "gpu_fault");
  // The Kubernetes device plugin's health check names the Xid as "Xid=79".
  EXPECT_EQ(TopOf2("XidCriticalError: Xid=79 on Device=GPU-1234, the device will go unhealthy.\n"),
            "gpu_fault");
}

TEST(SecondRoundWordings, CollectiveTimeoutsOfTheWatchdogDumpAndGloo) {
  EXPECT_EQ(TopOf2("[PG 0 Rank 1] Timeout at NCCL work: 5, last enqueued NCCL work: 5, last "
                   "completed NCCL work: 4.\n"),
            "nccl_timeout");
  EXPECT_EQ(TopOf2("RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting "
                   "1800000ms for recv operation to complete\n"),
            "nccl_timeout");
}

TEST(SecondRoundWordings, ANodeLostAndItsTrap) {
  EXPECT_EQ(TopOf2("srun: error: Node failure on gpu-node-12\n"), "node_failure");
  EXPECT_EQ(TopOf2("The node with node id: abc and address: 10.0.0.1 has been marked dead because "
                   "the detector has missed too many heartbeats from it.\n"),
            "node_failure");
  EXPECT_EQ(TopOf2("ORTE has lost communication with a remote daemon.\n"), "node_failure");
  // Every pod's default toleration names the unreachable taint: no node failed.
  EXPECT_EQ(TopOf2("Tolerations:  node.kubernetes.io/unreachable:NoExecute op=Exists for 300s\n"),
            "none");
  // A node lost explains its peers' watchdog timeout.
  EXPECT_EQ(TopOf2("srun: error: Node failure on gpu-node-12\n"
                   "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, "
                   "OpType=ALLREDUCE, Timeout(ms)=600000)\n"),
            "node_failure");
}

TEST(SecondRoundWordings, OtherSchedulersDeadlines) {
  EXPECT_EQ(TopOf2("  Warning  DeadlineExceeded  5m  job-controller  Job was active longer than "
                   "specified deadline\n"),
            "timeout");
  EXPECT_EQ(TopOf2("=>> PBS: job killed: walltime 3620 exceeded limit 3600\n"), "timeout");
}

TEST(SecondRoundWordings, FabricCompletionStatusesInVerbsWords) {
  EXPECT_EQ(TopOf2("NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 0, vendor err "
                   "129\n"),
            "network_error");
  EXPECT_EQ(TopOf2("UCX  ERROR  Transport retry count exceeded on mlx5_0:1/IB\n"), "network_error");
}

TEST(SecondRoundWordings, TheStoresWaitForAnotherRanksNcclId) {
  EXPECT_EQ(TopOf2("[rank1]: RuntimeError: [1] is setting up NCCL communicator and retrieving "
                   "ncclUniqueId from [0] via c10d key-value store by key '0', but "
                   "store->get('0') got error: Socket Timeout\n"),
            "rendezvous_failure");
}

TEST(SecondRoundTraps, ANormalStartIsHealthyAndAVersionInAnErrorIsNoStart) {
  EXPECT_EQ(TopOf2("h:1:2 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
                   "NCCL version 2.18.1+cuda12.1\n"),
            "healthy");
  EXPECT_EQ(TopOf2("NCCL error in: x.cpp:1, unhandled system error, NCCL version 2.19.3\n"),
            "none");
}

TEST(SecondRoundTraps, ABootstrapErrorUnderAPeersCloseIsThePeers) {
  const std::string chain = "h:1:2 [0] NCCL INFO bootstrap.cc:75 -> 2\n";
  EXPECT_EQ(TopOf2(chain), "rendezvous_failure");
  EXPECT_EQ(TopOf2("h:1:2 [0] misc/socket.cc:50 NCCL WARN socketProgress: Connection closed by "
                   "remote peer 10.0.0.2<4031>\n" +
                   chain),
            "peer_failure");
}

TEST(SecondRoundTraps, APodPlacedAfterAllIsNoLongerUnschedulable) {
  const std::string pending =
      "  Warning  FailedScheduling  2m  default-scheduler  0/4 nodes are available: 4 "
      "Insufficient nvidia.com/gpu.\n";
  EXPECT_EQ(TopOf2(pending), "unschedulable");
  EXPECT_EQ(
      TopOf2(pending +
             "  Normal   Scheduled  1m  default-scheduler  Successfully assigned ns/p to n1\n" +
             "  Warning  Evicted  10s  kubelet  The node was low on resource: memory.\n"),
      "evicted");
}

}  // namespace
}  // namespace toposched::diag
