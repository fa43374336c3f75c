// The symptom families (docs/diagnose.md, "Families") on the logs of data/diagnosis-corpus/dev
// they were written against: for one log per family and wording, the top cause is the one its
// thread concluded and cites the line that says so. Then the traps each family must not fall
// into, line by line: a healthy start's store-barrier line, a node's "Unschedulable: false", a
// host OOM worded like a GPU one, an exception that names a platform cause.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diag/dev_corpus_case.h"
#include "diag/diagnose.h"
#include "testing/samples.h"

namespace toposched::diag {
namespace {

using Case = DevCorpusCase;

const std::vector<Case> kCases = {
    // killed by a signal, in three launchers' words
    {"exitcode-minus9-sigkill-loading-codellama-7b-wsl2-torchrun-codellama-118.log", "host_oom",
     "failed (exitcode: -9)"},
    {"mpijob-worker-rank1-killed-signal9-oom-mpi-operator-90.launcher.log", "host_oom",
     "exited on signal 9 (Killed)"},
    // stopped from outside
    {"scancel-step-cancelled-srun-terminated-exit-143-codeidx-60298187986.log", "cancelled",
     "CANCELLED AT 2023-07-06T11:24:37"},
    {"torchrun-ctrl-c-received-2-death-signal-sigint-workers-lerobot-3818.log", "cancelled",
     "Received 2 death signal"},
    {"elastic-agent-killed-sigterm-15-death-signal-2node-g4dn-pytorch-150916.nodeB.log",
     "cancelled", "Received 15 death signal"},
    // preemption notices: a cloud node condition, a launcher, a managed-spot controller
    {"aks-spot-vmeventscheduled-preempt-scheduled-node-condition-gpu-codeidx-61409935492.log",
     "preempted", "Preempt Scheduled"},
    {"submitit-sighup-preempted-requeued-distributed-2rank-submitit-1701.log", "preempted",
     "this job is preempted"},
    {"skypilot-managed-spot-cluster-preempted-recovering-bert-qa-804.log", "preempted",
     "The cluster is preempted"},
    // a node marked bad by its controller
    {"slurmctld-scheduler-health-check-failed-nodes-parallelcluster-6842.log", "node_failure",
     "Scheduler health check failed"},
    // no capacity: a gang scheduler and a quota
    {"kai-podgroup-unschedulable-gang-3-of-2-gpus-resources-found-for-2-pods-codeidx-61409935492."
     "log",
     "unschedulable", "\"reason\":\"Unschedulable\""},
    {"kueue-jobset-gb200-workload-not-admitted-insufficient-unused-quota-gpu-codeidx-70891052445."
     "log",
     "unschedulable", "insufficient unused quota for nvidia.com/gpu"},
    // eviction by the kubelet's eviction manager
    {"kubelet-eviction-manager-memorypressure-negative-available-kubernetes-52386.log", "evicted",
     "eviction manager:"},
    // rendezvous in the c10d client's own words, and a failure inside the store barrier
    {"c10d-client-socket-errno110-master-addr-numeric-6841231-opensora-667.log",
     "rendezvous_failure", "The client socket has failed to connect"},
    {"tcpstore-client-timeout-1800s-127001-env-rendezvous-adaface-87.log", "rendezvous_failure",
     "The client socket has timed out after 1800s"},
    {"connection-reset-by-peer-store-based-barrier-init-multinode-deepspeed-2973.log",
     "rendezvous_failure", "_store_based_barrier("},
    {"nccl-bootstrap-socketpollconnect-no-route-to-host-retries-worker-node-llamafactory-8045.log",
     "rendezvous_failure", "socketPollConnect: connect returned No route to host"},
    // GPU and CUDA
    {"rminitadapter-failed-gpu-missing-node-cordon-pai-4344.log", "gpu_fault",
     "RmInitAdapter failed!"},
    {"watchdog-cuda-unknown-error-2xh100-deepspeed-chat-deepspeed-4648.log", "gpu_fault",
     "CUDA error: unknown error"},
    {"xid45-caused-by-previous-xid149-xid145-nvlink-python3-ogkm-1150.log", "gpu_fault",
     "caused by previous Xid"},
    {"illegal-memory-access-flash-attn-unpad-input-3xl40-axolotl-1706.log", "application_error",
     "an illegal memory access was encountered"},
    {"ncclinvalidusage-duplicate-gpu-ranks-3-7-on-rank0-device-barrier-megatron-661.log",
     "application_error", "invalid usage"},
    // the program's own exception
    {"fsdp-flatten-uniform-dtype-bf16-fp32-valueerror-rank0-peft-484.log", "application_error",
     "ValueError: Must flatten tensors"},
    {"ddp-unused-parameters-reduction-not-finished-rank3-cutie-125.log", "application_error",
     "RuntimeError: Expected to have finished reduction"},
    // a feature NCCL ignored
    {"collnet-not-supported-ignoring-algo-collnet-ib-gdrdma-2node-nccltests-133.log",
     "nccl_degraded", "CollNet is not supported"},
    // a local rank's end, echoed by its peers
    {"peer-broken-pipe-remote-process-exited-abort-worker0-llamafactory-6849.log", "peer_failure",
     "Connection closed by localRank"},
    // progress and completion
    {"healthy-torchtitan-small-model-steps-22-29-dataset-relooped-torchtitan-950.log", "healthy",
     "loss:  6.2250"},
    {"healthy-swift-logging-jsonl-loss-eval-steps-3000-3200-ms-swift-4408.log", "healthy",
     "{\"loss\": 0.07945381"},
    {"healthy-multinode-deepspeed-microstep-timers-gpt-neox-965.log", "healthy",
     "forward_microstep:"},
    {"healthy-ddp-8-ranks-2-nodes-epoch-loss-capitalised-snapshot-saved-awsome-distributed-ai-"
     "1039.log",
     "healthy", "Loss: 0.24456023513240382"},
    {"k8s-job-pi-completed-1-of-1-pod-completed-codeidx-13170713780.log", "healthy", "Completed"},
    {"dcgmi-diag-r3-deployment-checks-all-pass-dcgm-55.log", "healthy", "| Pass"},
    // a start that went through, in a launcher's, a net plugin's and the kernel's words
    {"healthy-ddp-init-13-nodes-78-gpus-summit-lsf-lightning-10216.log", "healthy",
     "initializing ddp: GLOBAL_RANK"},
    {"healthy-accelerate-test-node-a-multi-node-rng-synched-dataloader-accelerate-806.log",
     "healthy", "Distributed environment: MULTI_GPU"},
    {"healthy-aws-ofi-plugin-on-roce-cluster-invalid-pci-bus-falls-to-internal-ib-codeidx.log",
     "healthy", "NET/OFI Selected Provider is"},
    {"kmsg-nvswitch-node-calico-pods-no-errors-healthy-gpud-fixture.log", "healthy",
     "link becomes ready"},
    // a collective benchmark's result rows and its data check
    {"nccl-tests-all-reduce-rows-out-of-bounds-0-ok-busbw-96-of-4x200g-target-nccltests-119.log",
     "healthy", "float     sum"},
    // one rank: its NET/Socket selection carries no data
    {"healthy-single-gpu-nccl-init-socket-lib-wrapper-warn-ds0172-works-deepspeed-8248.log",
     "healthy", "Channel 00/64 : 0"},
    // a net plugin the job named and could not load
    {"rccl-ofi-plugin-missing-socket-over-slingshot-hsn-nid007971-codeidx-3195311793.log",
     "nccl_transport_fallback", "dlerror=librccl-net-ofi.so"},
    // NVLS: unavailable (weak), and its set-up failing on the NVSwitch fabric
    {"nvls-multicast-not-available-2node-megatron-sft-ms-swift-6107.log", "nccl_degraded",
     "NVLS multicast support is not available"},
    {"nvls-cuda-invalid-argument-init-fails-3plus-gpus-h100-fabricmanager-nccl-976.log",
     "gpu_fault", "Cuda failure 'invalid argument'"},
    // the watchdog's timeout seen only in its stack, and as the worker's SIGABRT
    {"watchdog-reduce-scatter-timeout-distbackenderror-megatron-935.log", "nccl_timeout",
     "WorkNCCL::checkTimeout"},
    {"watchdog-allreduce-timeout-2node-16rank-a6000-checkpoint-save-transformers-28119.agent.log",
     "nccl_timeout", "failed (exitcode: -6)"},
    // a cloud VM's soft-off, an operator's record of a deletion
    {"gcp-spot-v100-worker-power-key-pressed-preemption-mozilla-translations-400.log", "preempted",
     "Power key pressed"},
    {"tfjob-master-failed-then-deleted-by-user-operator-log-trainer-366.log", "cancelled",
     "deleted by the user"},
};

class FamilyLog : public ::testing::TestWithParam<Case> {};

TEST_P(FamilyLog, TopCauseIsTheThreadsAndCitesTheLineThatSaysSo) {
  ExpectTopCauseCites(GetParam());
}

INSTANTIATE_TEST_SUITE_P(DevCorpus, FamilyLog, ::testing::ValuesIn(kCases), DevCorpusCaseName);

// The top cause of a few lines of text, or "none".
std::string TopOf(const std::string& text) {
  const Diagnosis d = DiagnoseText(text, "lines", nullptr);
  return d.causes.empty() ? "none" : CategoryName(d.causes.front().category);
}

TEST(FamilyTraps, AHealthyStartsStoreBarrierIsNoRendezvousFailure) {
  // The barrier's completion is a start that went through.
  EXPECT_EQ(TopOf("INFO | torch.distributed.distributed_c10d | Added key: "
                  "store_based_barrier_key:1 to store for rank: 2\n"
                  "INFO | torch.distributed.distributed_c10d | Rank 1: Completed store-based "
                  "barrier for key:store_based_barrier_key:1 with 2 nodes.\n"),
            "healthy");
}

TEST(FamilyTraps, ASingleNodesSocketSelectionIsNoFallback) {
  const std::string socket =
      "h:1:2 [0] NCCL INFO NET/IB : No device found.\n"
      "h:1:2 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>\n"
      "h:1:2 [0] NCCL INFO Using network Socket\n";
  EXPECT_EQ(TopOf(socket), "nccl_transport_fallback");
  EXPECT_EQ(TopOf(socket + "h:1:2 [0] NCCL INFO comm 0x5 rank 0 nRanks 2 nNodes 1 localRanks 2 "
                           "localRank 0 MNNVL 0\n"),
            "none");
  EXPECT_EQ(TopOf(socket + "h:1:2 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 2 localRanks 8 "
                           "localRank 0 MNNVL 0\n"),
            "nccl_transport_fallback");
}

// A running job with a feature NCCL reports unavailable is degraded, not healthy, however
// healthy the rest of its start looks; a fault still outranks it.
TEST(FamilyTraps, NvlsUnavailableOutranksAHealthySetUpButNotAFault) {
  const std::string nvls = "h:1:2 [0] NCCL INFO NVLS multicast support is not available on dev 0\n";
  EXPECT_EQ(TopOf(nvls), "nccl_degraded");
  EXPECT_EQ(TopOf(nvls + "h:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n" +
                  "h:1:2 [0] NCCL INFO Connected all rings\n" +
                  "h:1:2 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 - Init COMPLETE\n"),
            "nccl_degraded");
  EXPECT_EQ(TopOf(nvls + "torch.OutOfMemoryError: CUDA out of memory.\n"), "gpu_oom");
}

TEST(FamilyTraps, AnAbortRanksUnderAFaultThatExplainsIt) {
  const std::string abort = "ERROR failed (exitcode: -6) local_rank: 4 (pid: 65506) of binary\n";
  EXPECT_EQ(TopOf(abort), "nccl_timeout");
  EXPECT_EQ(TopOf(abort + "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"),
            "gpu_fault");
}

TEST(FamilyTraps, AConnectRetryWithAttemptsLeftIsNoFailure) {
  const std::string retry =
      "h:1:2 [0] NCCL INFO socketPollConnect: connect returned Connection timed out, retrying ";
  EXPECT_EQ(TopOf(retry + "(1/34) after sleep for 100 msec\n"), "none");
  EXPECT_EQ(TopOf(retry + "(34/34) after sleep for 3400 msec\n"), "rendezvous_failure");
}

TEST(FamilyTraps, ABenchmarkRowNeedsItsTypeAndOp) {
  EXPECT_EQ(
      TopOf("    8388608       2097152     float     sum      -1    992.6    8.45   16.20      "
            "0    986.0    8.51   16.31      0\n"),
      "healthy");
  EXPECT_EQ(TopOf("2024 12 float sum\n"), "healthy");
  EXPECT_EQ(TopOf("2024 12 items processed\n"), "none");
}

TEST(FamilyTraps, ASchedulableNodeIsNoCapacityProblem) {
  EXPECT_EQ(TopOf("Unschedulable:      false\n"), "none");
  EXPECT_EQ(TopOf("0/8 nodes are available: 8 Insufficient nvidia.com/gpu.\n"), "unschedulable");
}

TEST(FamilyTraps, RaysHostOutOfMemoryIsNotAGpuOom) {
  EXPECT_EQ(TopOf("ray.exceptions.OutOfMemoryError: Task was killed due to the node running "
                  "low on memory.\n"),
            "host_oom");
  EXPECT_EQ(TopOf("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"),
            "gpu_oom");
}

TEST(FamilyTraps, AnExceptionThatNamesAPlatformCauseIsNotTheProgramsFault) {
  EXPECT_EQ(TopOf("RuntimeError: Connection reset by peer\n"), "peer_failure");
  EXPECT_EQ(TopOf("torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"), "none");
  EXPECT_EQ(TopOf("KeyError: 'input_ids'\n"), "application_error");
}

TEST(FamilyTraps, ExitStatusesNameTheirSignal) {
  EXPECT_EQ(TopOf("srun: error: node7: task 3: Exited with exit code 137\n"), "host_oom");
  // A nonzero code that is no signal names no cause alone (on dev the cause of such logs was
  // always elsewhere).
  EXPECT_EQ(TopOf("process exited with exit code 1\n"), "none");
  EXPECT_EQ(TopOf("Killed\n"), "host_oom");
  EXPECT_EQ(TopOf("subprocess returncode=-15\n"), "cancelled");
}

TEST(FamilyTraps, ALossWordWithoutAValueIsNoProgress) {
  EXPECT_EQ(TopOf("computing the loss over the batch\n"), "none");
  EXPECT_EQ(TopOf("step 10 | lm loss: 6.512E+00 | grad norm: 1.2\n"), "healthy");
  EXPECT_EQ(TopOf("Epoch 0 | Steps: 235 | Loss: 0.2445\n"), "healthy");
  EXPECT_EQ(TopOf("Epoch 0 | Gloss: 0.2445\n"), "none");
}

TEST(FamilyTraps, ACancelForATimeLimitIsATimeoutNotACancel) {
  EXPECT_EQ(TopOf("slurmstepd: error: *** JOB 9 ON n1 CANCELLED AT 2025-01-01T00:00:00 DUE TO "
                  "TIME LIMIT ***\n"),
            "timeout");
  EXPECT_EQ(TopOf("slurmstepd: error: *** JOB 9 ON n1 CANCELLED AT 2025-01-01T00:00:00 ***\n"),
            "cancelled");
}

}  // namespace
}  // namespace toposched::diag
