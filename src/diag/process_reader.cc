// Process fate and progress, in any framework's or launcher's wording: signals and exit codes
// (torchrun, mpirun, srun, subprocess, shells), the kernel's OOM killer, Python exceptions, CUDA
// errors, cancels and interrupts, preemption notices, node health, queue capacity, training
// progress and completion. Patterns and their sources: docs/diagnose.md, "Families".
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// The signal number an exit status stands for: -N (Python's returncode of a signalled child,
// torchrun's exitcode) or 128+N (a shell's or a container's exit status). 0 for any other.
int SignalOfStatus(int64_t status) {
  if (status < 0 && status >= -64) return static_cast<int>(-status);
  if (status > 128 && status <= 128 + 64) return static_cast<int>(status - 128);
  return 0;
}

// The exit status a launcher, a shell or a runtime reports: "exitcode: -9", "exit code 137",
// "exit status 143", "returncode=-9", DeepSpeed's "exits with return code = -9", "exited with
// code 1"; nullopt when the line reports none.
std::optional<int64_t> ExitStatusOf(std::string_view t) {
  static constexpr std::array<std::string_view, 13> kMarkers = {
      "exitcode: ",        "exitcode=",    "exit code ",     "exit code: ",   "exit status ",
      "returncode=",       "returncode: ", "return code = ", "return code: ", "exit code = ",
      "exited with code ", "exit_code=",   "exit_code: "};
  for (std::string_view m : kMarkers) {
    if (auto v = IntAfter(t, m); v && *v >= -64 && *v <= 255) return v;
  }
  return std::nullopt;
}

// A signal's number from its name as C, Python, Go and the shell print it: "SIGKILL", "Killed"
// (strsignal), "killed" (Go's "signal: killed"); 0 for none.
int SignalNamed(std::string_view name) {
  static constexpr std::array<std::pair<std::string_view, int>, 21> kNames = {
      {{"SIGHUP", 1},
       {"SIGINT", 2},
       {"SIGQUIT", 3},
       {"SIGILL", 4},
       {"SIGABRT", 6},
       {"SIGBUS", 7},
       {"SIGFPE", 8},
       {"SIGKILL", 9},
       {"SIGUSR1", 10},
       {"SIGSEGV", 11},
       {"SIGUSR2", 12},
       {"SIGPIPE", 13},
       {"SIGTERM", 15},
       {"Killed", 9},
       {"killed", 9},
       {"Terminated", 15},
       {"terminated", 15},
       {"Aborted", 6},
       {"Segmentation fault", 11},
       {"Bus error", 7},
       {"Hangup", 1}}};
  for (const auto& [n, sig] : kNames) {
    if (name.starts_with(n)) return sig;
  }
  return 0;
}

// A shell's report of a child a signal ended: "line 5: 12345 Killed   python train.py", "[1]+
// Killed  python x.py", "Segmentation fault (core dumped)", "Killed" alone on its line.
int SignalOfShellLine(std::string_view t) {
  for (std::string_view name : {"Killed", "Segmentation fault", "Aborted", "Bus error"}) {
    const size_t p = t.find(name);
    if (p == std::string_view::npos) continue;
    if (SkipSpaces(t) == name || Has(t.substr(p), " (core dumped)")) return SignalNamed(name);
    // The token before it: a pid or a job number ("[1]+").
    size_t e = p;
    while (e > 0 && (t[e - 1] == ' ' || t[e - 1] == '\t')) --e;
    if (e == p) continue;
    size_t b = e;
    while (b > 0 && t[b - 1] != ' ' && t[b - 1] != '\t' && t[b - 1] != ':') --b;
    const std::string_view tok = t.substr(b, e - b);
    const bool pid = !tok.empty() && tok.find_first_not_of("0123456789") == std::string_view::npos;
    const bool job =
        tok.size() >= 3 && tok.front() == '[' && (tok.back() == '+' || tok.back() == '-');
    if (pid || job) return SignalNamed(name);
  }
  return 0;
}

// "exited on signal 9 (Killed)", "killed by signal 9", "terminated with signal SIGKILL",
// "is killed by signal: Killed.", "Signals.SIGKILL", "signal: killed", "task 0: Killed".
int SignalOfKillLine(std::string_view t) {
  // torchelastic's SignalException: "Process 1234 got signal: 15".
  for (std::string_view m :
       {"on signal ", "by signal ", "with signal ", "by signal: ", "got signal: "}) {
    auto rest = After(t, m);
    if (!rest) continue;
    if (auto v = LeadingInt(*rest); v && *v > 0 && *v <= 64) return static_cast<int>(*v);
    if (const int sig = SignalNamed(SkipSpaces(*rest))) return sig;
  }
  if (auto name = After(t, "Signals.")) {
    if (const int sig = SignalNamed(*name)) return sig;
  }
  if (auto name = After(t, "signal: ")) {
    if (const int sig = SignalNamed(*name)) return sig;
  }
  // srun's "task 0: Killed".
  if (Has(t, "srun: error:") && Has(t, ": Killed")) return 9;
  return SignalOfShellLine(t);
}

void ReadSignal(const LineRef& line, EvidenceSet& out) {
  const std::optional<int64_t> status = ExitStatusOf(line.text);
  int sig = status ? SignalOfStatus(*status) : 0;
  if (sig == 0) sig = SignalOfKillLine(line.text);
  if (sig == 0) {
    // A nonzero status that is no signal: the program itself exited with an error.
    if (status && *status > 0 && *status < 128) {
      if (Evidence* e = out.Add(Kind::kWorkerFailed, line)) {
        e->fields.emplace_back("code", std::to_string(*status));
      }
    }
    return;
  }
  if (Evidence* e = out.Add(Kind::kKilledBySignal, line)) {
    e->fields.emplace_back("signal", std::to_string(sig));
  }
}

// The kernel's, a cgroup's or a user-space OOM killer's own words: dmesg "invoked oom-killer",
// "Out of memory: Killed process", "Memory cgroup out of memory", cgroup v1 "Task in /kubepods/...
// killed as a result of limit of ...", Slurm's "Detected 1 oom_kill event" / "OOM Killed",
// systemd-oomd's "Killed /user.slice/... due to memory pressure", earlyoom "sending SIGKILL",
// Ray's "node running low on memory".
bool IsKernelOomLine(std::string_view t) {
  return Has(t, "invoked oom-killer") || Has(t, "Out of memory: Kill") ||
         Has(t, "Memory cgroup out of memory") || Has(t, "oom-kill:") ||
         Has(t, "oom_reaper: reaped") || Has(t, "node running low on memory") ||
         Has(t, "oom_kill event") || Has(t, "OOM Killed") || Has(t, "OOM-killed") ||
         Has(t, "killed as a result of limit of") || (Has(t, "systemd-oomd") && Has(t, "Killed")) ||
         (Has(t, "earlyoom") && Has(t, "sending SIG")) ||
         (Has(t, "Killed process ") && Has(t, "total-vm:"));
}

// A device out of memory in any framework's words: PyTorch's "CUDA out of memory" and
// OutOfMemoryError, the CUDA runtime's "CUDA error: out of memory" (cudaErrorMemoryAllocation,
// CUDA_ERROR_OUT_OF_MEMORY), cuBLAS/cuDNN's allocation failures, ROCm's "HIP out of memory", Ascend
// and Intel's "NPU"/"XPU out of memory", Apple's "MPS backend out of memory", XLA/JAX's
// "RESOURCE_EXHAUSTED: Out of memory", TensorFlow's "OOM when allocating tensor". Ray's
// OutOfMemoryError ("... the node running low on memory") is the host's: the process reader.
bool IsDeviceOomLine(std::string_view t) {
  if (Has(t, "running low on memory")) return false;
  return Has(t, "CUDA out of memory") || Has(t, "OutOfMemoryError") ||
         Has(t, "CUDA error: out of memory") || Has(t, "CUDA_ERROR_OUT_OF_MEMORY") ||
         Has(t, "cudaErrorMemoryAllocation") || Has(t, "CUBLAS_STATUS_ALLOC_FAILED") ||
         Has(t, "CUDNN_STATUS_ALLOC_FAILED") || Has(t, "HIP out of memory") ||
         Has(t, "NPU out of memory") || Has(t, "XPU out of memory") ||
         Has(t, "MPS backend out of memory") || Has(t, "RESOURCE_EXHAUSTED: Out of memory") ||
         Has(t, "OOM when allocating tensor");
}

// The process could not get host memory by itself (no killer involved): PyTorch's CPU
// allocator, C++'s bad_alloc, ENOMEM, a DataLoader worker short of shared memory.
bool IsHostAllocFailure(std::string_view t) {
  if (Has(t, "DefaultCPUAllocator") || Has(t, "std::bad_alloc") ||
      Has(t, "insufficient shared memory")) {
    return true;
  }
  // ENOMEM from the kernel; not a verbs or CUDA call's (a memlock limit, device memory).
  return Has(t, "Cannot allocate memory") && !Has(t, "ibv") && !Has(t, "NCCL") && !Has(t, "cuda") &&
         !Has(t, "CUDA");
}

// Exception types that name a platform cause another rule reads (or a launcher's wrapper of
// the real failure), not a fault of the training code.
constexpr std::array<std::string_view, 22> kPlatformExceptions = {"ChildFailedError",
                                                                  "DistBackendError",
                                                                  "DistNetworkError",
                                                                  "DistStoreError",
                                                                  "OutOfMemoryError",
                                                                  "TimeoutError",
                                                                  "ConnectionError",
                                                                  "ConnectionResetError",
                                                                  "ConnectionRefusedError",
                                                                  "BrokenPipeError",
                                                                  "RendezvousClosedError",
                                                                  "RendezvousTimeoutError",
                                                                  "RendezvousConnectionError",
                                                                  "ProcessExitedException",
                                                                  "CalledProcessError",
                                                                  "SystemExit",
                                                                  "KeyboardInterrupt",
                                                                  "ActorDiedError",
                                                                  "RayTaskError",
                                                                  "NcclError",
                                                                  "MemoryError",
                                                                  "SignalException"};

// Words in an exception's message that make it a platform report (NCCL, CUDA, sockets, the
// store), read by the other families, rather than the program's own error.
constexpr std::array<std::string_view, 9> kPlatformWords = {
    "NCCL", "CUDA", "cuda", "Connection", "socket", "timed out", "Timeout", "store", "memory"};

// "ValueError: ...", "[rank0]: torch.AssertionError: ...", "AssertionError" alone.
void ReadException(const LineRef& line, EvidenceSet& out) {
  std::string_view t = line.text;
  if (t.starts_with("[rank")) {
    const size_t close = t.find("]:");
    if (close != std::string_view::npos && close < 12) t = SkipSpaces(t.substr(close + 2));
  }
  size_t n = 0;
  while (n < t.size() && (IsWordChar(t[n]) || t[n] == '.')) ++n;
  if (n == 0 || n > 120 || (n < t.size() && t[n] != ':')) return;
  std::string_view path = t.substr(0, n);
  const std::string_view type =
      path.substr(path.rfind('.') == std::string_view::npos ? 0 : path.rfind('.') + 1);
  if (type == "MemoryError") {  // Python's own: the interpreter could not get host memory
    out.Add(Kind::kHostAllocFailed, line);
    return;
  }
  if (!type.ends_with("Error") && !type.ends_with("Exception")) return;
  if (type.size() <= 5 || type.front() < 'A' || type.front() > 'Z') return;
  for (std::string_view p : kPlatformExceptions) {
    if (type == p) return;
  }
  const std::string_view message = n < t.size() ? t.substr(n + 1) : std::string_view();
  for (std::string_view w : kPlatformWords) {
    if (Has(message, w)) return;
  }
  if (Evidence* e = out.Add(Kind::kPythonException, line)) {
    e->fields.emplace_back("type", std::string(type));
  }
}

// "loss" or "Loss" as a word followed, within a few separators, by a number: "loss:  4.99",
// "\"loss\": 0.07", "loss=0.5", "lm loss: 6.5E+00", "Epoch 0 | Loss: 0.2445".
bool HasLossValue(std::string_view t) {
  for (size_t q = t.find("oss"); q != std::string_view::npos; q = t.find("oss", q + 1)) {
    if (q == 0 || (t[q - 1] != 'l' && t[q - 1] != 'L')) continue;
    const size_t p = q - 1;
    const bool left = p == 0 || !IsWordChar(t[p - 1]);
    size_t i = p + 4;
    if (!left || (i < t.size() && IsWordChar(t[i]))) continue;
    int seps = 0;
    while (i < t.size() && seps < 4 &&
           (t[i] == ':' || t[i] == '=' || t[i] == '"' || t[i] == '\'' || t[i] == ' ')) {
      ++i;
      ++seps;
    }
    if (i < t.size() && t[i] == '-') ++i;
    if (i < t.size() && t[i] >= '0' && t[i] <= '9') return true;
  }
  return false;
}

// The next whitespace-separated token of `s` from `pos` (advanced past it); "" at the end.
std::string_view NextToken(std::string_view s, size_t& pos) {
  while (pos < s.size() && (s[pos] == ' ' || s[pos] == '\t')) ++pos;
  const size_t start = pos;
  while (pos < s.size() && s[pos] != ' ' && s[pos] != '\t') ++pos;
  return s.substr(start, pos - start);
}

// A result row of NVIDIA's nccl-tests (all_reduce_perf, all_gather_perf, ...): "   127926280
// 31981570     float     sum      -1   2560.7   49.96   95.75      0 ...", i.e. size in bytes,
// element count, data type, reduction op (then root, time, algbw, busbw, #wrong, twice). The
// columns are those of the tests' header ("size count type redop root time algbw busbw
// #wrong"); a row means a collective of that size completed.
bool IsCollectiveTestRow(std::string_view t) {
  static constexpr std::array<std::string_view, 13> kTypes = {
      "float",  "double", "half",   "bfloat16", "int8",     "uint8",   "int32",
      "uint32", "int64",  "uint64", "int",      "fp8_e4m3", "fp8_e5m2"};
  static constexpr std::array<std::string_view, 6> kOps = {"sum", "prod", "max",
                                                           "min", "avg",  "none"};
  size_t pos = 0;
  if (!AllDigits(NextToken(t, pos)) || !AllDigits(NextToken(t, pos))) return false;
  const std::string_view type = NextToken(t, pos);
  const std::string_view op = NextToken(t, pos);
  const auto in = [](std::string_view x, const auto& set) {
    for (std::string_view v : set) {
      if (x == v) return true;
    }
    return false;
  };
  return in(type, kTypes) && in(op, kOps);
}

// A rate that a running job reports: a progress bar's "1.95it/s]" or "3.20s/it]", samples or
// tokens per second, TFLOPS.
bool IsRateLine(std::string_view t) {
  if (!Has(t, "/s") && !Has(t, "/it") && !Has(t, "FLOP") && !Has(t, "flop") &&
      !Has(t, "per_second")) {
    return false;
  }
  return Has(t, "it/s]") || Has(t, "s/it]") || Has(t, "samples/sec") || Has(t, "samples/s ") ||
         Has(t, "tokens/s") || Has(t, "tok/s") || Has(t, "TFLOPS") || Has(t, "TFLOPs") ||
         Has(t, "tflops") || Has(t, "samples_per_second");
}

// A start that went through in launchers' and frameworks' words: torchelastic's "[default]
// Starting worker group", Hugging Face Trainer's "***** Running training *****", DeepSpeed's
// "Initializing TorchBackend in DeepSpeed", nvidia-smi's banner (the GPUs answered).
bool IsStartedLine(std::string_view t) {
  return Has(t, "Starting worker group") || Has(t, "***** Running training *****") ||
         Has(t, "Initializing TorchBackend") || (Has(t, "NVIDIA-SMI ") && Has(t, "Driver Version"));
}

bool IsCompletedLine(std::string_view t) {
  if ((Has(t, "checkpoint") || Has(t, "Checkpoint")) &&
      (Has(t, "Saving checkpoint") || Has(t, "Saved checkpoint") || Has(t, "aved checkpoint to") ||
       Has(t, "heckpoint saved"))) {
    return true;
  }
  if (Has(t, "completed") && Has(t, "raining completed")) return true;
  if (Has(t, "Test PASSED") || Has(t, "| Pass ")) return true;
  // nccl-tests' verdict on the data it checked: "# Out of bounds values : 0 OK".
  if (Has(t, "Out of bounds values : 0 OK")) return true;
  if (HasWord(t, "Succeeded") && !Has(t, "not ")) return true;
  // sacct "COMPLETED  0:0", kubectl get pods "... 0/1   Completed   0   2m".
  if (HasWord(t, "COMPLETED") && Has(t, "0:0")) return true;
  return HasWord(t, "Completed") && (Has(t, " 0/") || Has(t, " 1/"));
}

// CUDA's errors in the runtime's words ("CUDA error: an illegal memory access was encountered"),
// the driver API's and the runtime's enum names (CUDA_ERROR_ILLEGAL_ADDRESS,
// cudaErrorIllegalAddress) and PyTorch's: a kernel that faulted is the program's (or a kernel
// library's) bug; an ECC or NVLink error is the hardware's.
void ReadCudaErrors(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "illegal memory access") || Has(t, "unspecified launch failure") ||
      Has(t, "an illegal instruction was encountered") || Has(t, "device-side assert") ||
      Has(t, "misaligned address") || Has(t, "ILLEGAL_ADDRESS") || Has(t, "IllegalAddress") ||
      Has(t, "CUDA_ERROR_LAUNCH_FAILED") || Has(t, "cudaErrorLaunchFailure")) {
    out.Add(Kind::kCudaIllegalAccess, line);
  }
  if (Has(t, "uncorrectable NVLink error") || Has(t, "ECC_UNCORRECTABLE") ||
      Has(t, "ECCUncorrectable") || Has(t, "NVLINK_UNCORRECTABLE")) {
    out.Add(Kind::kCudaHardwareError, line);
  }
  if (Has(t, "CUDA error: unknown error")) out.Add(Kind::kCudaUnknownError, line);
}

// A node of the job that went away, in a launcher's, a cluster's or the kernel's words.
bool IsNodeLostLine(std::string_view t) {
  // Slurm: srun's "Node failure on nid001234", slurmctld's "Killing JobId=7 on failed node n1",
  // "Nodes n[1-2] not responding"; Ray: "has been marked dead because the detector has missed
  // too many heartbeats", "its node has died", worker exit type NODE_DIED; Open MPI/PRRTE:
  // "ORTE has lost communication with a remote daemon".
  if (Has(t, "ode failure on") || Has(t, "due to node failure") || Has(t, "on failed node") ||
      (Has(t, "Nodes ") && Has(t, "not responding")) || Has(t, "has been marked dead") ||
      Has(t, "node has died") || Has(t, "NODE_DIED") || Has(t, "lost communication with a")) {
    return true;
  }
  // Kubernetes: the node controller's taint of an unreachable node (not the default toleration
  // every pod lists: "node.kubernetes.io/unreachable:NoExecute op=Exists for 300s").
  if (Has(t, "node.kubernetes.io/unreachable") && !Has(t, "op=Exists")) return true;
  if (Has(t, "TaintManagerEviction")) return true;
  // The kernel: a panic, an uncorrected machine check, memory the hardware corrupted.
  return Has(t, "Kernel panic") ||
         (Has(t, "Hardware Error") && (Has(t, "ncorrected") || Has(t, "atal"))) ||
         (Has(t, "Memory failure:") && Has(t, "hardware memory corruption"));
}

// A time limit in other schedulers' words: Kubernetes' Job "DeadlineExceeded" ("Job was active
// longer than specified deadline"), PBS "walltime ... exceeded limit", LSF "TERM_RUNLIMIT".
bool IsDeadlineLine(std::string_view t) {
  return HasWord(t, "DeadlineExceeded") || Has(t, "active longer than specified deadline") ||
         (Has(t, "walltime") && Has(t, "exceeded limit")) || Has(t, "TERM_RUNLIMIT");
}

void ReadFate(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  // CUDA's errors always name it: "CUDA error: ...", NCCL's "Cuda failure '...'", the enums.
  if (Has(t, "UDA") || Has(t, "uda")) ReadCudaErrors(line, out);
  // One gate for the node and deadline families' words, so that most lines cost two searches.
  if ((Has(t, "Node") || Has(t, "node") || Has(t, "NODE") || Has(t, "daemon") || Has(t, "panic") ||
       Has(t, "Hardware") || Has(t, "Taint") || Has(t, "Memory failure")) &&
      IsNodeLostLine(t)) {
    out.Add(Kind::kNodeLost, line);
  }
  if ((Has(t, "Deadline") || Has(t, "deadline") || Has(t, "walltime") || Has(t, "RUNLIMIT")) &&
      IsDeadlineLine(t)) {
    out.Add(Kind::kJobDeadline, line);
  }
  // A traceback printed where it happened (alone on its line, or after a rank's "[rank3]: "
  // prefix); torchrun's summary field "traceback : Traceback ..." only points at the worker's.
  if (Has(t, "Traceback (most recent call last)")) {
    std::string_view lead = SkipSpaces(t);
    if (lead.starts_with("[rank")) lead = SkipSpaces(lead.substr(lead.find(']') + 1));
    if (lead.starts_with(":")) lead = SkipSpaces(lead.substr(1));
    if (lead.starts_with("Traceback")) out.Add(Kind::kPythonTraceback, line);
  }
  if (Has(t, "RmInitAdapter failed")) out.Add(Kind::kGpuInitFailed, line);
  if (Has(t, "invalid usage") && (Has(t, "NCCL") || Has(t, "nccl"))) {
    out.Add(Kind::kNcclInvalidUsage, line);
  }
  if (auto sig = IntAfter(t, "Received ")) {
    if (Has(t, "death signal")) {
      if (Evidence* e = out.Add(Kind::kUserInterrupt, line)) {
        e->fields.emplace_back("signal", std::to_string(*sig));
      }
    }
  } else if (HasWord(t, "KeyboardInterrupt") || t.starts_with("^C")) {
    if (Evidence* e = out.Add(Kind::kUserInterrupt, line)) e->fields.emplace_back("signal", "2");
  } else if (auto by = After(t, "deleted by ");
             by && (by->starts_with("the user") || by->starts_with("user"))) {
    // A training operator's record of the job's deletion (TFJob/PyTorchJob controllers: "TFJob
    // ns:name deleted by the user"): its pods get SIGTERM.
    if (Evidence* e = out.Add(Kind::kUserInterrupt, line)) e->fields.emplace_back("signal", "15");
  }
  // systemd-logind's "Power key pressed." on a cloud VM: Compute Engine stops a preemptible or
  // spot VM with an ACPI G2 soft-off, which the guest sees as its power key (GCP's docs on
  // preemption, "Preemption process").
  if (Has(t, "is preempted") || Has(t, "Preempt Scheduled") || Has(t, "was preempted") ||
      Has(t, "Spot Instance Interruption") || Has(t, "spot instance interruption") ||
      Has(t, "preemption notice") || (Has(t, "Power key pressed") && Has(t, "logind"))) {
    out.Add(Kind::kPreemptNotice, line);
  }
  if ((Has(t, "reason set to:") && (Has(t, "health check") || Has(t, "Not responding"))) ||
      Has(t, "Kubelet stopped posting node status") || Has(t, "node is not ready")) {
    out.Add(Kind::kNodeUnhealthy, line);
  }
  if ((Has(t, " nodes are available") && Has(t, "0/")) || Has(t, "insufficient unused quota") ||
      Has(t, "couldn't assign flavors") || Has(t, "required for gang scheduling") ||
      (HasWord(t, "Unschedulable") && !Has(t, "false"))) {
    out.Add(Kind::kQueuedNoCapacity, line);
  }
  if ((Has(t, "eviction manager:") && (Has(t, "Pressure") || Has(t, "evict"))) ||
      Has(t, "EvictedDueTo")) {
    out.Add(Kind::kEvictionPressure, line);
  }
}

void ReadStarted(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  // The start went through so far (a weaker sign than the above): Lightning's "initializing ddp:
  // GLOBAL_RANK: 3, MEMBER: 4/8", Accelerate's state "Distributed environment: MULTI_GPU", the
  // kernel's "NIC Link is Up" (Intel/Mellanox drivers) and "ADDRCONF(NETDEV_CHANGE): eth0: link
  // becomes ready" (IPv6 address configuration once the link is up).
  if (!out.full(Kind::kRunStarted) &&
      (Has(t, "initializing ddp: GLOBAL_RANK") || Has(t, "Distributed environment: ") ||
       (Has(t, "ink ") && (Has(t, "NIC Link is Up") || Has(t, "link becomes ready"))) ||
       IsStartedLine(t))) {
    out.Add(Kind::kRunStarted, line);
  }
  if (!out.full(Kind::kRunCompleted) && IsCompletedLine(t)) out.Add(Kind::kRunCompleted, line);
}

// Positive signs only: each kind is looked for until it keeps kMaxExamples lines (evidence.h,
// EvidenceSet::full), so that a long healthy log pays for them on its first lines only.
void ReadProgress(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (!out.full(Kind::kTrainingProgress)) {
    // A collective benchmark's result row is progress too; only lines that open with a digit
    // are split into tokens.
    const std::string_view lead = SkipSpaces(t);
    if (HasLossValue(t) || Has(t, "_microstep: ") || IsRateLine(t) ||
        (!lead.empty() && lead.front() >= '0' && lead.front() <= '9' &&
         IsCollectiveTestRow(lead))) {
      out.Add(Kind::kTrainingProgress, line);
    }
  }
  // The start completed: NCCL's communicator, Lightning's registration of every process, the
  // c10d store-based barrier of init_process_group ("Rank 1: Completed store-based barrier for
  // key:store_based_barrier_key:1 with 2 nodes").
  if (!out.full(Kind::kNcclInitComplete) &&
      (Has(t, "Init COMPLETE") || Has(t, "All distributed processes registered") ||
       Has(t, "Completed store-based barrier") || Has(t, "Rendezvous complete for workers"))) {
    out.Add(Kind::kNcclInitComplete, line);
  }
  ReadStarted(line, out);
}

}  // namespace

void ReadProcessLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  // NCCL's INFO lines, most of an NCCL_DEBUG=INFO log, carry none of a process's fate (the NCCL
  // reader reads them): only their "Init COMPLETE".
  if (Has(t, " NCCL INFO ")) {
    if (!out.full(Kind::kNcclInitComplete) && Has(t, "Init COMPLETE")) {
      out.Add(Kind::kNcclInitComplete, line);
    }
    return;
  }
  // Gates open with rare characters: a search costs a compare per occurrence of its first
  // character ("e", "o", "a" are on every line).
  const bool kill = Has(t, "Kill");
  const bool memory = Has(t, "memory") || Has(t, "Memory");
  if (kill || Has(t, "xit") || Has(t, "ignal") || Has(t, "return") || Has(t, "dumped") ||
      Has(t, "Segmentation fault")) {
    ReadSignal(line, out);
  }
  const bool oom = Has(t, "OOM");
  if ((memory || oom || Has(t, "MEMORY") || Has(t, "ALLOC")) && IsDeviceOomLine(t)) {
    out.Add(Kind::kCudaOom, line);
  }
  if ((kill || memory || oom || Has(t, "oom") || Has(t, "killed as a")) && IsKernelOomLine(t)) {
    out.Add(Kind::kKernelOomKill, line);
  }
  if ((memory || Has(t, "Allocator") || Has(t, "bad_alloc")) && IsHostAllocFailure(t)) {
    out.Add(Kind::kHostAllocFailed, line);
  }
  if (Has(t, "Error") || Has(t, "Exception")) ReadException(line, out);
  ReadFate(line, out);
  ReadProgress(line, out);
}

}  // namespace toposched::diag
