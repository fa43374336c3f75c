// The rule family for a process's fate as any framework or launcher words it (the symptom
// families of docs/diagnose.md): the kernel's OOM killer and SIGKILL, cancels and interrupts,
// preemption notices, node health, queue capacity, eviction pressure, GPU and CUDA errors, and
// the program's own exceptions. Confidences sit below a direct statement of the same cause by a
// scheduler or a driver (those rules are in rules.cc), and an exception of the program below
// every platform cause, so that a cause that explains another ranks first.
#include <string>
#include <string_view>
#include <vector>

#include "diag/rules_internal.h"

namespace toposched::diag::internal {

namespace {

// The first line of `kind` whose "signal" field is `signal`, or nullptr.
const Evidence* WithSignal(const EvidenceSet& ev, Kind kind, std::string_view signal) {
  for (const Evidence& e : ev.examples(kind)) {
    if (e.Field("signal") == signal) return &e;
  }
  return nullptr;
}

void KillRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (ev.has(Kind::kKernelOomKill)) {
    out.push_back(MakeCause(Category::kHostOom, 0.92,
                            "the kernel's OOM killer ended a process: the node (or the job's "
                            "cgroup) ran out of host memory",
                            "raise the job's memory request or lower host memory use (data-loader "
                            "workers, pinned buffers, checkpoint loading on every rank at once)",
                            ev, {Kind::kKernelOomKill, Kind::kKilledBySignal}));
  }
  if (WithSignal(ev, Kind::kKilledBySignal, "9") != nullptr) {
    out.push_back(MakeCause(Category::kHostOom, 0.65,
                            "a process was killed by SIGKILL (signal 9, exit status -9 or 137) "
                            "from outside, most often the kernel or cgroup OOM killer",
                            "check the node's kernel log (dmesg) or the pod's last state for the "
                            "OOM killer and raise the memory limit; otherwise find who sent "
                            "SIGKILL (a time limit, a preemption, an operator)",
                            ev, {Kind::kKilledBySignal}));
  }
  // SIGABRT (exit status -6 or 134) of a distributed worker: the process aborted itself. In a
  // job on NCCL the usual one is ProcessGroupNCCL's watchdog, which on a collective's timeout or
  // error tears the process down with std::abort ("terminate called after throwing an instance
  // of 'c10::DistBackendError'"; PyTorch's TORCH_NCCL_ASYNC_ERROR_HANDLING, default 3 since
  // 2.2). Weak: a failed assertion in native code aborts the same way.
  if (WithSignal(ev, Kind::kKilledBySignal, "6") != nullptr) {
    out.push_back(MakeCause(Category::kNcclTimeout, 0.45,
                            "a worker aborted itself (SIGABRT, exit status -6 or 134): in a job on "
                            "NCCL most often the process group's watchdog ending it after a "
                            "collective timed out or failed",
                            "read that worker's own log for the watchdog's line (the collective, "
                            "its sequence number and timeout) and find the rank that stopped "
                            "calling it",
                            ev, {Kind::kKilledBySignal}));
  }
  // SIGUSR1/SIGUSR2: the warning signal a scheduler sends ahead of the time limit (Slurm's
  // sbatch --signal, submitit's timeout handler); a step that dies of it was stopped for its
  // time. Weak: a job may use these signals for its own purposes.
  if (WithSignal(ev, Kind::kKilledBySignal, "10") != nullptr ||
      WithSignal(ev, Kind::kKilledBySignal, "12") != nullptr) {
    out.push_back(MakeCause(Category::kTimeout, 0.5,
                            "a step ended on SIGUSR1/SIGUSR2, the warning signal a scheduler sends "
                            "before the time limit (sbatch --signal): it was stopped for its time",
                            "handle the signal (checkpoint and requeue) or ask for a longer time "
                            "limit; sacct -j JOB shows each step's state and signal",
                            ev, {Kind::kKilledBySignal}));
  }
  // SIGSEGV: a native crash in the program or one of its libraries.
  if (WithSignal(ev, Kind::kKilledBySignal, "11") != nullptr) {
    out.push_back(MakeCause(Category::kApplicationError, 0.5,
                            "a process crashed with a segmentation fault (SIGSEGV): a bug in "
                            "native code of the program or a library it loads",
                            "get the native stack (faulthandler, gdb on the core file); check "
                            "versions of the extensions and libraries it loads",
                            ev, {Kind::kKilledBySignal}));
  }
  if (ev.has(Kind::kSlurmCancelled)) {
    out.push_back(MakeCause(Category::kCancelled, 0.85,
                            "the job was cancelled (scancel, or an operator): Slurm gives no "
                            "other reason",
                            "nothing failed: ask who cancelled it (sacct -j JOB -o State,Reason)",
                            ev, {Kind::kSlurmCancelled}));
  }
  const Evidence* term = WithSignal(ev, Kind::kKilledBySignal, "15");
  if (ev.has(Kind::kUserInterrupt) || term != nullptr) {
    out.push_back(MakeCause(Category::kCancelled, 0.55,
                            "the job was stopped from outside (SIGINT/SIGTERM: a user's Ctrl-C, "
                            "a kill, or the launcher shutting its workers down)",
                            "nothing failed in the job itself: find who stopped it; a scheduler's "
                            "time limit or preemption also sends SIGTERM, and says so in its log",
                            ev, {Kind::kUserInterrupt, Kind::kKilledBySignal}));
  }
}

// A cause that one kind of line states by itself: its category, rank, summary and fix.
struct OneKindRule {
  Kind kind;
  Category category;
  double confidence;
  const char* summary;
  const char* fix;
};

constexpr const char* kCheckGpu =
    "drain the node and check the GPU (nvidia-smi -q, dmesg for Xid lines, dcgmi diag -r 3) "
    "before resuming; requeue the job elsewhere";

// In the order the causes are offered (ties of category and confidence keep the first).
constexpr OneKindRule kOneKindRules[] = {
    {Kind::kRendezvousClosed, Category::kPeerFailure, 0.6,
     "the job's rendezvous was closed under this node's agent: another node's agent ended or "
     "left first",
     "read the other nodes' logs for the one that ended first and why"},
    {Kind::kPreemptNotice, Category::kPreempted, 0.85,
     "the job's machines were preempted (a spot/preemptible instance reclaimed, or the "
     "launcher's preemption signal)",
     "checkpoint often and requeue automatically; use on-demand capacity for jobs that cannot "
     "lose progress"},
    {Kind::kNodeUnhealthy, Category::kNodeFailure, 0.8,
     "the cluster's controller marked a node of the job unhealthy or unreachable",
     "requeue avoiding the node; check it (its health check, kubelet or slurmd) before resuming "
     "it"},
    {Kind::kQueuedNoCapacity, Category::kUnschedulable, 0.8,
     "the job cannot be placed or admitted: not enough free GPUs or quota for the whole job",
     "ask for fewer GPUs or a flavor/partition with room, raise the queue's quota, or free "
     "capacity held by other workloads"},
    {Kind::kEvictionPressure, Category::kEvicted, 0.75,
     "the job's pods were evicted (node pressure or the queue's admission timeout)",
     "set requests equal to real use (pods above their requests are evicted first), give the "
     "node headroom, or lengthen the admission timeout"},
    {Kind::kGpuInitFailed, Category::kGpuFault, 0.85,
     "the driver could not bring a GPU up (RmInitAdapter failed)", kCheckGpu},
    {Kind::kNcclNvlsFailed, Category::kGpuFault, 0.6,
     "NCCL could not set up NVLink SHARP (NVLS) multicast on the node's NVSwitch fabric (a CUDA "
     "call of its set-up failed): most often the fabric manager is not running or its version "
     "does not match the driver's",
     "check nvidia-fabricmanager on the node (systemctl status, its log) and that its version "
     "matches the driver; NCCL_NVLS_ENABLE=0 runs without NVLS meanwhile"},
    {Kind::kCudaUnknownError, Category::kGpuFault, 0.6,
     "CUDA reported an unknown error: the driver lost the GPU's context, most often a GPU or "
     "driver fault",
     kCheckGpu},
    {Kind::kNcclInvalidUsage, Category::kApplicationError, 0.75,
     "NCCL refused a call as invalid usage: the program set up or called its communicators "
     "wrong (ranks, devices, group sizes)",
     "rerun with NCCL_DEBUG=WARN for NCCL's reason; check that each rank uses its own GPU and "
     "that every rank makes the same calls"},
    {Kind::kCudaIllegalAccess, Category::kApplicationError, 0.6,
     "a CUDA kernel failed (an illegal memory access, a device-side assert, a misaligned address "
     "or a failed launch): most often a bug in the program or a kernel library",
     "rerun with CUDA_LAUNCH_BLOCKING=1 to find the kernel; if it happens on one GPU only, check "
     "that GPU"},
    {Kind::kCudaHardwareError, Category::kGpuFault, 0.85,
     "CUDA reported a hardware fault of the GPU (an uncorrectable ECC or NVLink error)", kCheckGpu},
    {Kind::kNodeLost, Category::kNodeFailure, 0.8,
     "a node of the job went away (the launcher or the cluster lost it, or its kernel reported a "
     "fatal hardware error or a panic)",
     "requeue avoiding the node; check it (its kernel log, BMC/IPMI event log, the cluster's node "
     "state) before resuming it"},
    {Kind::kJobDeadline, Category::kTimeout, 0.85,
     "the job reached its time limit (the scheduler's deadline or walltime)",
     "ask for a longer limit from the job's measured rate, or checkpoint and resubmit"},
    {Kind::kHostAllocFailed, Category::kHostOom, 0.7,
     "a process could not get host memory (the CPU allocator failed, MemoryError, ENOMEM, or too "
     "little shared memory for the data-loader workers)",
     "raise the job's memory request (and the container's /dev/shm, --shm-size) or lower host "
     "memory use: fewer data-loader workers, load checkpoints on fewer ranks at once"},
    {Kind::kCollectiveMismatch, Category::kApplicationError, 0.75,
     "the ranks called different collectives (or the same one with different shapes): they took "
     "different code paths",
     "find where the ranks' control flow diverges (a data-dependent branch, an early exit, an "
     "uneven last batch) and make every rank make the same calls"},
};

void OneKindRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  for (const OneKindRule& r : kOneKindRules) {
    if (ev.has(r.kind)) {
      out.push_back(MakeCause(r.category, r.confidence, r.summary, r.fix, ev, {r.kind}));
    }
  }
}

// The program's own exception, below every platform cause; and, weaker still, a traceback whose
// exception line was not read. A worker's bare nonzero exit (kWorkerFailed) names no cause: on
// the development set it led three times and was wrong each time (the cause was elsewhere, out
// of the excerpt); it stays a candidate of "no known cause".
void ExceptionRule(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (const Evidence* e = ev.first(Kind::kPythonException)) {
    out.push_back(MakeCause(Category::kApplicationError, 0.55,
                            "the program raised " + std::string(e->Field("type")) +
                                ": the training code (or its configuration) failed, not the "
                                "platform",
                            "read the traceback above the exception; fix the code or the "
                            "configuration it names, then resubmit",
                            ev, {Kind::kPythonException}));
    return;
  }
  if (ev.has(Kind::kPythonTraceback)) {
    out.push_back(MakeCause(Category::kApplicationError, 0.4,
                            "an uncaught exception ended a thread or the program (its traceback; "
                            "the exception's own line was not read) and no line names a platform "
                            "cause",
                            "read the traceback for the exception and the code that raised it", ev,
                            {Kind::kPythonTraceback, Kind::kWorkerFailed}));
  }
}

// A pod or job listed as Pending: not placed yet (weak: a moment's pending is normal).
void PendingRule(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (!ev.has(Kind::kPodPending)) return;
  out.push_back(MakeCause(Category::kUnschedulable, 0.5,
                          "the job's pods (or the job) are listed as Pending: not placed",
                          "kubectl describe the pod for the scheduler's reason (FailedScheduling) "
                          "and free or add the resources it waits for, or fix its node selector",
                          ev, {Kind::kPodPending}));
}

}  // namespace

void ProcessRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  KillRules(ev, out);
  OneKindRules(ev, out);
  ExceptionRule(ev, out);
  PendingRule(ev, out);
}

}  // namespace toposched::diag::internal
