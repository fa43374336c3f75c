// Diagnosis of interrupted or slow jobs: the one evidence type every per-source log reader
// produces (what a line says, where it was, which facts it carries) and the bounded set that
// collects it. Knows nothing of log formats (the readers do) nor of causes (the rules do), and
// nothing of the scheduler.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace toposched::diag {

// Where a line comes from, by the tool that wrote it.
enum class Source { kNccl, kDriver, kSlurm, kKubernetes, kPyTorch, kScheduler, kProcess };
// "nccl", "driver", "slurm", "kubernetes", "pytorch", "scheduler", "process"
const char* SourceName(Source s);

// What a line says. Positive kinds (a correct set-up) matter as much as faults: they tell a
// healthy log from one that merely lacks errors, and an IB data path from a bootstrap socket.
enum class Kind {
  // NCCL
  kNcclNetIb,           // "NET/IB : Using [0]mlx5_0:1/IB ..." (fields: devices, link_layer)
  kNcclNetSocket,       // "NET/Socket : Using [0]eth0:10.0.0.1<0>" (fields: interfaces)
  kNcclNetworkSocket,   // "Using network Socket": the data path is TCP
  kNcclNetworkIb,       // "Using network IB" / "Using network IBext..."
  kNcclChannelIb,       // "Channel 00 : 3[..] -> 6[..] [send] via NET/IB/0[/GDRDMA]" (fields: gdr)
  kNcclChannelSocket,   // "... via NET/Socket/0"
  kNcclChannelIntra,    // "... via P2P/IPC", "via SHM", "via direct shared memory", NVLS
  kNcclRingOrder,       // "Channel 00/08 :    0   7   6 ..." (ring order)
  kNcclConnected,       // "Connected all rings" / "Connected all trees"
  kNcclNvlsAvailable,   // "NVLS multicast support is available"
  kNcclIbDisabled,      // "NCCL_IB_DISABLE set by environment to 1"
  kNcclIbNoDevice,      // "NET/IB : No device found."
  kNcclIbverbsMissing,  // "Failed to open libibverbs.so"
  kNcclGdrDisabled,     // "GPU Direct RDMA Disabled for HCA 0 'mlx5_0'" (fields: device)
  kNcclIbCompletionError,  // "NET/IB : Got completion from peer ... with status=12" (fields:
                           // status)
  kNcclConnectionClosed,   // "Connection closed by remote peer" / "by localRank N"
  kNcclConnectionReset,    // "Connection reset by peer"
  kNcclRemoteError,        // ncclRemoteError / "remote process exited or there was a network error"
  kNcclConnectFailed,      // "socketStartConnect: Connect to ... failed" (bootstrap)
  kNcclCudaOom,            // NCCL WARN "Cuda failure 'out of memory'"
  kNcclWatchdogTimeout,  // "Watchdog caught collective operation timeout" (fields: op, timeout_ms)
  // Driver and GPU tools
  kXid,                  // "NVRM: Xid (PCI:...): 79, ..." (fields: code, pci, meaning)
  kFallenOffBus,         // "GPU has fallen off the bus"
  kEccUncorrectable,     // "uncorrectable ECC error", "SRAM Uncorrectable : 5" (fields: count)
  kRowRemapPending,      // "Remapped Rows ... Pending : Yes", dcgmi "row remappings are pending"
  kRowRemapFailure,      // "Remapping Failure Occurred : Yes"
  kGpuLost,              // "Unable to determine the device handle for GPU...: Unknown Error"
  kGpuDiagFail,          // dcgmi diag "Fail - GPU: 0"
  kPcieLinkLimited,      // "available PCIe bandwidth, limited by 16.0 GT/s PCIe x16 link"
  kPcieAerError,         // "PCIe Bus Error: severity=..."
  kNvlinkCountersClean,  // "Link 0: CRC Errors: 0" (every counter zero so far)
  kNvlinkErrors,         // a nonzero NVLink Replay/Recovery/CRC counter
  // Slurm
  kSlurmTimeLimit,         // "CANCELLED AT ... DUE TO TIME LIMIT", sacct state TIMEOUT
  kSlurmNodeFail,          // NODE_FAIL, "DUE TO NODE FAILURE"
  kSlurmPreempted,         // PREEMPTED, "DUE TO PREEMPTION"
  kSlurmOom,               // "oom-kill event(s)", "Out Of Memory", OUT_OF_MEMORY
  kSlurmPending,           // squeue/scontrol pending reason (fields: reason)
  kSlurmNodesUnavailable,  // sinfo drain/drng/fail/down/maint rows (fields: state, nodes)
  // Kubernetes
  kK8sOomKilled,          // "OOMKilled"
  kK8sExit137,            // "Exit Code: 137", "exitCode: 137"
  kK8sEvicted,            // "Evicted", "The node was low on resource"
  kK8sPreempted,          // "Preempted", "preempted by"
  kK8sInsufficientGpu,    // FailedScheduling "Insufficient nvidia.com/gpu"
  kK8sGangUnschedulable,  // PodGroup "tasks in gang unschedulable" / NotEnoughResources
  kK8sJobRestarting,      // "PyTorchJob ... is restarting because ..."
  kK8sExitCode,           // "Pod: ... exited with code 1" (fields: code)
  kK8sNodeNotReady,       // "NodeNotReady", "node ... not ready"
  // PyTorch
  kCudaOom,          // "CUDA out of memory" / torch.cuda.OutOfMemoryError
  kChildFailed,      // ChildFailedError summary: "exitcode  : -9" (fields: exitcode, signal)
  kRendezvousError,  // RendezvousConnectionError/RendezvousTimeoutError, c10d connect timeout
  kStoreTimeout,     // c10d "waitForInput ... timed out", "Socket Timeout" on the store
  kAddressInUse,     // "Address already in use" (store/master port)
  // toposched's own job events ("12.000000s job-7 RUNNING -> COMPLETING: time limit: ...")
  kSchedTimeLimit,  // "RUNNING -> COMPLETING: time limit"
  kSchedPreempted,  // "-> PREEMPTED: preempted by job-6 (priority 500)"
  kSchedNodeFail,   // "-> NODE_FAIL: node gpu002 unhealthy (...)" (fields: node)
  kSchedGpuFail,    // "-> FAILED: GPU 3 of gpu003 unhealthy (Xid 79)" (fields: node)
  kSchedDegraded,   // "NVLinks of GPU 5 on gpu006 degraded, predicted 0.259 -> 0.505 ms"
  kSchedCancelled,  // "cancelled by user"
  kSchedPending,    // "job-7 PENDING: <explanation>" (fields: reason)
  // "-> FAILED: exit code 1: cause gpu_fault: ..." — a report of the job's that the daemon
  // classified: an exit report, or a log report while it ran (fields: category, reason)
  kSchedExitCause,
  // More of each source, in any framework's wording (the symptom families of
  // docs/diagnose.md, "Families"): process_reader.cc and the readers above.
  kKilledBySignal,     // a process ended by a signal: "exitcode: -9", "exited on signal 9
                       // (Killed)", "Signals.SIGKILL", "task 0: Killed" (fields: signal)
  kKernelOomKill,      // the kernel's OOM killer: "invoked oom-killer", "Out of memory: Killed
                       // process", "Memory cgroup out of memory"
  kPythonException,    // "ValueError: ...", "[rank0]: RuntimeError: ..." (fields: type)
  kCudaIllegalAccess,  // "an illegal memory access was encountered", "unspecified launch failure"
  kCudaUnknownError,   // "CUDA error: unknown error" (the driver lost the GPU's context)
  kGpuInitFailed,      // "NVRM: RmInitAdapter failed": the driver cannot bring a GPU up
  kNcclInvalidUsage,   // NCCL "invalid usage" (ncclInvalidUsage): the program called NCCL wrong
  kUserInterrupt,      // "Received 2 death signal", "KeyboardInterrupt", "^C" (fields: signal)
  kSlurmCancelled,     // "*** JOB 3 ON c1 CANCELLED AT ..." with no "DUE TO", sacct "CANCELLED by"
  kPreemptNotice,      // a cloud or launcher notice: "is preempted", "Preempt Scheduled", spot
                       // interruption
  kNodeUnhealthy,      // a controller marks a node bad: "reason set to: ... health check failed",
                       // "Kubelet stopped posting node status", "not responding"
  kQueuedNoCapacity,   // a queue or scheduler has no room: "0/8 nodes are available", "insufficient
                       // unused quota", "required for gang scheduling", "Unschedulable"
  kEvictionPressure,   // the kubelet's eviction manager acting on a pressure signal
  kTrainingProgress,   // a step/iteration with its loss: "step: 22  loss:  6.2250", "{"loss": 0.07"
  kNcclInitComplete,   // the process group's start completed: NCCL "comm 0x... rank 3 nranks 8
                       // ... - Init COMPLETE", Lightning "All distributed processes registered"
  kRendezvousClosed,   // "RendezvousClosedError": another agent closed the job's rendezvous
  kNcclFeatureIgnored,  // NCCL WARN "... is not supported ..., ignoring NCCL_ALGO=COLLNET"
  kC10dSocketError,     // the c10d client's own socket errors: "[c10d] The client socket has
                        // failed to connect to ...", "has timed out after 1800s", DistNetworkError
  kRunCompleted,        // a run that ended well: sacct COMPLETED, a pod Completed/Succeeded, "Test
                        // PASSED", dcgmi diag "Pass"
  // The fabric itself (network_rules.cc: evidence that a link or an HCA failed, not a peer):
  kIbAsyncEvent,   // NCCL WARN "NET/IB : Got async event : local catastrophic error" (fields:
                   // event); benign events (port active, GID change) are not kept
  kIbVerbsFailed,  // NCCL WARN "Call to ibv_modify_qp failed with error No such device" (fields:
                   // verb)
  kNicLinkDown,    // the kernel's NIC driver: "mlx5_core 0000:...: Link down", "NIC Link is Down"
  // A peer that ended, named by the survivor: "Broken pipe" on a send, c10d's "possible
  // application crash on rank 0", TCPStore's "Connection was likely closed" (fields: rank)
  kPeerGone,
  // Signs that a distributed start went through, in the launchers' and net plugins' own words
  // (process_reader.cc, nccl_reader.cc): Lightning "initializing ddp: GLOBAL_RANK: 3, MEMBER:
  // 4/8", Accelerate "Distributed environment: MULTI_GPU", a net plugin's "NET/OFI Selected
  // Provider is ...", a kernel "NIC Link is Up" / "link becomes ready". Positive only: they make
  // a log with no fault healthy (weakly), never hide a fault.
  kRunStarted,
  // NCCL's communicator spans one node ("comm 0x... rank 0 nRanks 2 nNodes 1", or "nranks 1"):
  // its network transport carries no data, so a NET/Socket selection is no fallback.
  kNcclSingleNode,
  kNcclNvlsUnavailable,  // "NVLS multicast support is not available on dev 0" (NCCL INFO)
  kNcclNvlsFailed,       // an NVLS set-up call that failed: "transport/nvls.cc:165 NCCL WARN Cuda
                         // failure 'invalid argument'" (the NVSwitch fabric / multicast)
  // A net plugin the job named (NCCL_NET_PLUGIN) that the loader could not open: "NET/Plugin :
  // dlerror=librccl-net-ofi.so: cannot open shared object file": its network was expected.
  kNcclPluginMissing,
  // Families added for logs the rules were not written against (docs/diagnose.md, "Families, second
  // round"):
  kNcclMultiNode,        // "comm 0x... rank 0 nRanks 16 nNodes 2 ...": the communicator spans nodes
  kRdmaProviderFailed,   // libibverbs could not use the node's RDMA device: "libibverbs: Warning:
                         // Driver bnxt_re does not support the kernel ABI", "couldn't load driver",
                         // NCCL "NET/IB : Unable to open device mlx5_0": the RDMA NIC exists
  kNcclTopoFallback,     // NCCL's topology search settled for less: "Could not find a path for
                         // pattern 4, falling back to simple order"; "P2P is disabled between
                         // NVLINK connected GPUs"
  kNcclTopoUnreadable,   // "Topology detection : could not read /sys/.../max_link_speed, ignoring"
                         // (a virtualised PCI tree: NCCL assumes slow paths)
  kNcclBootstrapFailed,  // NCCL's bootstrap (its own rendezvous) failed: a system error unwinding
                         // through bootstrap.cc ("bootstrap.cc:275 -> 2"), "Bootstrap : no socket
                         // interface found", a connect that used up its retries
  kCollectiveMismatch,   // c10d's collective check: "Detected mismatch between collectives on
                         // ranks" (TORCH_DISTRIBUTED_DEBUG=DETAIL): ranks took different paths
  kCudaHardwareError,    // CUDA names a hardware fault: "uncorrectable NVLink error",
                         // CUDA_ERROR_ECC_UNCORRECTABLE, cudaErrorECCUncorrectable
  kHostAllocFailed,      // the process could not get host memory: Python "MemoryError",
                         // "DefaultCPUAllocator: can't allocate memory", "std::bad_alloc",
                         // "[Errno 12] Cannot allocate memory"
  kNodeLost,             // a node of the job went away, in a launcher's or a cluster's words: Slurm
                         // "Node failure on", Ray "has been marked dead", Open MPI "lost
                         // communication with a remote daemon", Kubernetes "node.kubernetes.io/
                         // unreachable", the kernel's panic or machine-check (fields: how)
  kPythonTraceback,      // "Traceback (most recent call last):": an exception ended a thread or the
                         // program (its type line may be cut)
  kWorkerFailed,         // a worker or step ended with a nonzero exit code that is no signal:
                         // torchrun "exitcode : 1", sacct "FAILED 1:0", kubectl "CrashLoopBackOff"
  kPodPending,           // a job or pod listed in state Pending (kubectl get vcjob/pods)
  kAdmitted,             // the scheduler placed or admitted it after all: "Successfully assigned",
                         // Kueue "Admitted by ClusterQueue"
  kJobDeadline,  // a time limit in another scheduler's words: Kubernetes "DeadlineExceeded",
                 // PBS "walltime ... exceeded limit", LSF "TERM_RUNLIMIT"
  kCount,
};
constexpr int kKindCount = static_cast<int>(Kind::kCount);
const char* KindName(Kind k);  // "nccl_net_ib", ...
Source KindSource(Kind k);

// One line that says something. `fields` carry the facts a rule needs (a Xid code, an interface
// name), as (key, value) pairs in the order found.
struct Evidence {
  Source source = Source::kNccl;
  std::string file;
  int64_t line = 0;  // 1-based line number in `file`
  std::string text;  // the line (a '\r'-separated segment of it), trimmed to kMaxEvidenceText
  Kind kind = Kind::kNcclNetIb;
  std::vector<std::pair<std::string, std::string>> fields;

  std::string_view Field(std::string_view key) const;  // "" when absent
};

constexpr size_t kMaxEvidenceText = 512;

// What one line, as the readers see it: the text (no line break), its file and line number.
struct LineRef {
  std::string_view text;
  const std::string* file = nullptr;
  int64_t line = 0;
};

// Collects evidence with bounded memory: per kind, the count and the first kMaxExamples lines.
// Not thread-safe; one per diagnosis.
class EvidenceSet {
 public:
  static constexpr int kMaxExamples = 6;

  // Records one piece of evidence of `kind` from `line`; the text is copied only when kept.
  // Returns the stored Evidence (to add fields to), or nullptr when the kind is full.
  Evidence* Add(Kind kind, const LineRef& line);

  int64_t count(Kind k) const { return counts_[static_cast<int>(k)]; }
  bool has(Kind k) const { return count(k) > 0; }
  // Whether `k` keeps no more examples. Readers stop looking for a positive sign (progress, a
  // start) once its kind is full: such signs only decide whether a log is healthy and which lines
  // it cites, so their counts stop at kMaxExamples.
  bool full(Kind k) const { return examples(k).size() >= static_cast<size_t>(kMaxExamples); }
  const std::vector<Evidence>& examples(Kind k) const { return examples_[static_cast<int>(k)]; }
  const Evidence* first(Kind k) const;
  // Adds what `later` collected, as if its lines had been read after this set's: counts add,
  // examples fill up to kMaxExamples in order.
  void Merge(const EvidenceSet& later);
  int64_t total() const;
  // The time of the lines now being read ("" for none), kept on each example stored as its
  // "line_time" field: several logs of one job are put on one timeline by it (first_failure.cc
  // writes and reads it).
  void SetLineTime(std::string_view time) { line_time_.assign(time); }

 private:
  std::string line_time_;
  std::array<int64_t, kKindCount> counts_{};
  std::array<std::vector<Evidence>, kKindCount> examples_;
};

}  // namespace toposched::diag
