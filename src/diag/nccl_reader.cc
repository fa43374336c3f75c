// NCCL_DEBUG=INFO/WARN lines (NCCL's own wording, any version since 2.4) and the PyTorch
// ProcessGroupNCCL lines that wrap NCCL errors. Patterns: docs/diagnose.md, source "NCCL".
#include <optional>
#include <string>
#include <string_view>

#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// "[0]mlx5_0:1/IB [1]mlx5_1:1/IB" or "[0]eth0:10.0.0.1<0> [1]ib0:..." -> "mlx5_0,mlx5_1" or
// "eth0,ib0": each device name sits between "]" and ":".
std::string DeviceList(std::string_view list) {
  std::string out;
  for (size_t p = list.find(']'); p != std::string_view::npos; p = list.find(']', p + 1)) {
    std::string_view rest = list.substr(p + 1);
    const size_t end = rest.find_first_of(": \t;<");
    std::string_view name = rest.substr(0, end);
    if (name.empty() || name == "RO") continue;
    if (!out.empty()) out += ',';
    out += name;
  }
  return out;
}

// "NET/IB : Using ...", "NET/Socket : Using ...", "Using network X", "No device found".
void ReadNetSelection(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (auto ib = After(t, "NET/IB : Using ")) {
    if (Evidence* e = out.Add(Kind::kNcclNetIb, line)) {
      const std::string_view list = ib->substr(0, ib->find("; OOB"));
      e->fields.emplace_back("devices", DeviceList(list));
      e->fields.emplace_back("link_layer", Has(list, "/RoCE") ? "roce" : "ib");
    }
  } else if (auto sock = After(t, "NET/Socket : Using ")) {
    if (Evidence* e = out.Add(Kind::kNcclNetSocket, line)) {
      e->fields.emplace_back("interfaces", DeviceList(*sock));
    }
  } else if (auto net = After(t, "Using network ")) {
    if (net->starts_with("Socket")) {
      out.Add(Kind::kNcclNetworkSocket, line);
    } else if (net->starts_with("IB")) {
      out.Add(Kind::kNcclNetworkIb, line);
    }
  }
  if (Has(t, "NET/IB : No device found")) out.Add(Kind::kNcclIbNoDevice, line);
  // A net plugin the job named that the loader could not open ("NET/Plugin : dlerror=...:
  // cannot open shared object file"), and one that selected its provider ("NET/OFI Selected
  // Provider is efa"): the inter-node data path set up, as "NET/IB : Using" says for IB.
  // A plugin that loaded but could not start ("NET/OFI aws-ofi-nccl initialization failed",
  // "NET/OFI Initializing plugin failed") is as missing: its network was expected.
  if ((Has(t, "NET/Plugin") && (Has(t, "dlerror") || Has(t, "cannot open shared object"))) ||
      (Has(t, "NET/OFI") &&
       (Has(t, "initialization failed") || Has(t, "Initializing plugin failed")))) {
    out.Add(Kind::kNcclPluginMissing, line);
  }
  if (Has(t, "Selected Provider is") || Has(t, "Selected provider is")) {
    out.Add(Kind::kRunStarted, line);
  }
  // "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)", "GPU Direct RDMA Disabled
  // for GPU 1a000 / HCA 0 (distance 5 > 4)"; never on a socket line (sockets have no GDR).
  if (Has(t, "GPU Direct RDMA Disabled for") && !Has(t, "NET/Socket")) {
    if (Evidence* e = out.Add(Kind::kNcclGdrDisabled, line)) {
      std::string_view dev = TokenAfter(t, "'", "'");
      e->fields.emplace_back("device", std::string(dev));
    }
  }
}

// "Channel 00 : 3[4a000] -> 6[44000] [send] via NET/IB/0/GDRDMA", "Ring 00 : 15 -> 0 [receive]
// via NET/Socket/0", "... via P2P/IPC/read", "... via direct shared memory".
void ReadChannel(const LineRef& line, EvidenceSet& out) {
  auto via = After(line.text, " via ");
  if (!via) return;
  if (via->starts_with("NET/IB")) {
    if (Evidence* e = out.Add(Kind::kNcclChannelIb, line)) {
      e->fields.emplace_back("gdr", Has(*via, "GDRDMA") ? "1" : "0");
    }
  } else if (via->starts_with("NET/Socket")) {
    out.Add(Kind::kNcclChannelSocket, line);
  } else if (via->starts_with("P2P") || via->starts_with("SHM") || via->starts_with("NVLS") ||
             via->starts_with("direct shared memory") || via->starts_with("CollNet")) {
    out.Add(Kind::kNcclChannelIntra, line);
  }
}

// "Channel 00/08 :    0   7   6   5 ..." or "Channel 00 :    0   1   2 ...": the ring order.
void ReadRingOrder(const LineRef& line, EvidenceSet& out) {
  auto rest = After(line.text, "Channel ");
  if (!rest) return;
  const size_t colon = rest->find(" : ");
  if (colon == std::string_view::npos || colon > 6) return;
  std::string_view ranks = rest->substr(colon + 3);
  if (ranks.find_first_not_of(" 0123456789") != std::string_view::npos) return;
  if (ranks.find_first_of("0123456789") == std::string_view::npos) return;
  out.Add(Kind::kNcclRingOrder, line);
}

void ReadErrors(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "Got completion from peer") || Has(t, "Got completion with error")) {
    if (Evidence* e = out.Add(Kind::kNcclIbCompletionError, line)) {
      auto status = IntAfter(t, "status=");
      if (!status) status = IntAfter(t, "with error ");
      if (status) e->fields.emplace_back("status", std::to_string(*status));
      if (auto vendor = IntAfter(t, "vendor err ")) {
        e->fields.emplace_back("vendor_err", std::to_string(*vendor));
      }
    }
  }
  // The verbs completion status in its printed words (ibv_wc_status_str, UCX), and a net
  // plugin's failed request (aws-ofi-nccl "NET/OFI Request ... completed with error").
  if (!Has(t, "Got completion from peer") &&
      (Has(t, "retry counter exceeded") || Has(t, "retry count exceeded") ||
       Has(t, "RETRY_EXC_ERR") || Has(t, "Work Request Flushed Error") ||
       Has(t, "emote access error") || Has(t, "ocal protection error") ||
       (Has(t, "NET/OFI") && Has(t, "completed with error")))) {
    if (Evidence* e = out.Add(Kind::kNcclIbCompletionError, line)) {
      e->fields.emplace_back("status", Has(t, "etry") ? "12" : "?");
    }
  }
  if (Has(t, "Connection closed by")) {
    out.Add(Kind::kNcclConnectionClosed, line);
  }
  if (Has(t, "Connection reset by peer")) out.Add(Kind::kNcclConnectionReset, line);
  if (Has(t, "ncclRemoteError") || Has(t, "remote process exited or there was a network error")) {
    out.Add(Kind::kNcclRemoteError, line);
  }
  if ((Has(t, "socketStartConnect") || Has(t, "bootstrap")) && Has(t, "Connect to") &&
      Has(t, "failed")) {
    out.Add(Kind::kNcclConnectFailed, line);
  }
  // Newer NCCL (>= 2.24) retries a refused, timed-out or unreachable connect and says so at
  // INFO level: "socketPollConnect: connect returned No route to host, retrying (26/34) after
  // sleep for 2600 msec"; it gives up (and warns) only after the last of them. A retry with
  // attempts left is a transient that a healthy start may show; the last one is a failed connect.
  if (Has(t, "socketPollConnect") && Has(t, "retrying")) {
    const std::string_view count = After(t, "retrying (").value_or("");
    const size_t slash = count.find('/');
    const auto attempt = LeadingInt(count);
    const auto budget =
        slash == std::string_view::npos ? std::nullopt : LeadingInt(count.substr(slash + 1));
    if (!attempt || !budget || *attempt >= *budget) out.Add(Kind::kNcclConnectFailed, line);
  }
  if (Has(t, "Cuda failure 'out of memory'") || Has(t, "Failed to CUDA calloc")) {
    out.Add(Kind::kNcclCudaOom, line);
  }
  // The watchdog's timeout path in a C++ stack, when the message line itself was cut.
  if (Has(t, "WorkNCCL::checkTimeout")) out.Add(Kind::kNcclWatchdogTimeout, line);
  if (Has(t, "Watchdog caught collective operation timeout")) {
    if (Evidence* e = out.Add(Kind::kNcclWatchdogTimeout, line)) {
      e->fields.emplace_back("op", std::string(TokenAfter(t, "OpType=")));
      if (auto ms = IntAfter(t, "Timeout(ms)=")) {
        e->fields.emplace_back("timeout_ms", std::to_string(*ms));
      }
    }
  }
}

// The fabric's own reports through NCCL's IB transport: an asynchronous event of the HCA
// ("NET/IB : Got async event : local catastrophic error"; port active, LID/GID changes and
// client reregistration are routine and not kept) and a verbs call that failed ("Call to
// ibv_modify_qp failed with error Network is unreachable"; ibv_fork_init's warning is routine).
void ReadFabric(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (auto ev = After(t, "Got async event")) {
    const size_t at = ev->find_first_not_of(" :");
    const std::string_view event = at == std::string_view::npos ? "" : ev->substr(at);
    if (Has(event, "rror") || Has(event, "atal") || Has(event, "atastrophic") ||
        Has(event, "DOWN") || Has(event, "down")) {
      if (Evidence* e = out.Add(Kind::kIbAsyncEvent, line)) {
        e->fields.emplace_back("event", std::string(event.substr(0, 64)));
      }
    }
  }
  if (auto verb = After(t, "Call to ibv_")) {
    if (Has(*verb, "failed") && !verb->starts_with("fork_init")) {
      if (Evidence* e = out.Add(Kind::kIbVerbsFailed, line)) {
        e->fields.emplace_back("verb", "ibv_" + std::string(verb->substr(0, verb->find(' '))));
      }
    }
  }
}

// "comm 0x... rank 0 nRanks 2 nNodes 1 localRanks 2 ..." (NCCL >= 2.12) or "comm 0x... rank 0
// nranks 1 cudaDev 0 ...": one node (or one rank), so no data crosses the network (NCCL's NET
// transport connects ranks of different nodes only).
void ReadCommShape(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  auto nodes = IntAfter(t, "nNodes ");
  auto ranks = IntAfter(t, "nranks ");
  if (!ranks) ranks = IntAfter(t, "nRanks ");
  if ((nodes && *nodes == 1) || (ranks && *ranks == 1)) out.Add(Kind::kNcclSingleNode, line);
  if (nodes && *nodes > 1) out.Add(Kind::kNcclMultiNode, line);
}

// NCCL's message after "NCCL INFO " / "NCCL WARN " of a start that is going through: the
// bootstrap's interface, the driver's version, a communicator's start, CPU affinity, the tree
// layout. A weak positive sign: a log with no fault and only these is a normal start.
bool IsStartMessage(std::string_view msg) {
  return msg.starts_with("Bootstrap : Using") || msg.starts_with("cudaDriverVersion") ||
         msg.starts_with("Setting affinity for GPU") || msg.starts_with("Trees [") ||
         (msg.starts_with("comm 0x") && Has(msg, "Init START"));
}

// Features and paths NCCL reports it does without (docs/diagnose.md, "nccl_degraded"): the
// topology search settling for a simple ring order, NVLink-connected GPUs without P2P, a PCI
// tree it cannot read (a virtualised one: it assumes slow links).
void ReadTopology(const LineRef& line, std::string_view msg, EvidenceSet& out) {
  if (msg.starts_with("Could not find a path for pattern") ||
      msg.starts_with("P2P is disabled between NVLINK connected GPUs")) {
    out.Add(Kind::kNcclTopoFallback, line);
  }
  if (msg.starts_with("Topology detection") && Has(msg, "could not read")) {
    out.Add(Kind::kNcclTopoUnreadable, line);
  }
}

// NCCL unwinds an error with one INFO line per frame, "bootstrap.cc:275 -> 2": a system error (2,
// ncclSystemError: a socket call failed) out of the bootstrap is its rendezvous failing; and the
// bootstrap's own warnings that it has no interface to meet on.
void ReadBootstrap(const LineRef& line, std::string_view msg, bool warn, EvidenceSet& out) {
  if (msg.starts_with("bootstrap.cc:")) {
    if (auto rc = IntAfter(msg, "-> "); rc && *rc == 2) out.Add(Kind::kNcclBootstrapFailed, line);
    return;
  }
  if (warn &&
      (Has(msg, "no socket interface found") || Has(msg, "No usable listening interface found") ||
       msg.starts_with("Bootstrap Root : mismatch"))) {
    out.Add(Kind::kNcclBootstrapFailed, line);
  }
}

// NCCL's set-up lines: the network selection, channels and rings, communicators, NVLS, features
// it ignores, IB disabled, libibverbs missing.
void ReadSetUp(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "NET/") || Has(t, "Using network")) ReadNetSelection(line, out);
  if (Has(t, " via ")) ReadChannel(line, out);
  // Positive signs only (the ring order, rings connected): looked for until their kind is full.
  if (!out.full(Kind::kNcclRingOrder) && Has(t, "Channel ")) ReadRingOrder(line, out);
  if (!out.full(Kind::kNcclConnected) &&
      (Has(t, "Connected all rings") || Has(t, "Connected all trees"))) {
    out.Add(Kind::kNcclConnected, line);
  }
  if (Has(t, "comm 0x")) ReadCommShape(line, out);
  // NVLS (NVLink SHARP, NCCL >= 2.17): "NVLS multicast support is available on dev 0" or "is not
  // available" (the GPU or its NVSwitch fabric offers no multicast: no NVLS algorithm).
  if (auto nvls = After(t, "NVLS multicast support is ")) {
    out.Add(nvls->starts_with("not") ? Kind::kNcclNvlsUnavailable : Kind::kNcclNvlsAvailable, line);
  }
  // A feature the job asked for that NCCL will not use: "CollNet is not supported or fails to
  // initialize, ignoring NCCL_ALGO=COLLNET".
  if (Has(t, "NCCL WARN") && Has(t, "not supported") && Has(t, "ignoring")) {
    out.Add(Kind::kNcclFeatureIgnored, line);
  }
  if (Has(t, "NCCL_IB_DISABLE set by environment to 1")) out.Add(Kind::kNcclIbDisabled, line);
  // libibverbs could not be loaded: "Failed to open libibverbs.so[.1]", or in newer NCCL its
  // verbs wrapper's "misc/ibvwrap.cc:173 NCCL WARN lib wrapper not initialized.".
  if (Has(t, "ibv") &&
      (Has(t, "Failed to open libibverbs") || Has(t, "lib wrapper not initialized"))) {
    out.Add(Kind::kNcclIbverbsMissing, line);
  }
}

}  // namespace

void ReadNcclLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  // NCCL's message: the text after "NCCL INFO " or "NCCL WARN " (one search; the families below
  // test its start, not the whole line). The banner "NCCL version 2.18.1+cuda12.1" is a start
  // too; a version inside an error line ("..., NCCL version 2.19.3") is not.
  const size_t n = t.find("NCCL ");
  if (n != std::string_view::npos) {
    const std::string_view rest = t.substr(n + 5);
    const bool warn = rest.starts_with("WARN ");
    if (warn || rest.starts_with("INFO ")) {
      const std::string_view msg = rest.substr(5);
      if (!out.full(Kind::kRunStarted) && IsStartMessage(msg)) out.Add(Kind::kRunStarted, line);
      ReadTopology(line, msg, out);
      ReadBootstrap(line, msg, warn, out);
      // NCCL could not open the node's RDMA device: the NIC is there.
      if (msg.starts_with("NET/IB : Unable to open device")) {
        out.Add(Kind::kRdmaProviderFailed, line);
      }
    } else if (rest.starts_with("version 2.") && Has(rest, "+cuda") &&
               !out.full(Kind::kRunStarted)) {
      out.Add(Kind::kRunStarted, line);
    }
  }
  // libibverbs saw the node's RDMA device but could not use it: its user-space provider is
  // missing or does not match the kernel driver.
  if (t.starts_with("libibverbs: ") && (Has(t, "no userspace device-specific driver found") ||
                                        Has(t, "does not support the kernel ABI"))) {
    out.Add(Kind::kRdmaProviderFailed, line);
  }
  // Read on every line: logs are often pasted with NCCL's "host:pid:tid [d] NCCL INFO" prefix
  // stripped.
  ReadSetUp(line, out);
  if (Has(t, "onnect") || Has(t, "rror") || Has(t, "atchdog") || Has(t, "ailure") ||
      Has(t, "ailed") || Has(t, "completion") || Has(t, "checkTimeout") || Has(t, "xceeded")) {
    ReadErrors(line, out);
    // Read on the same error lines only (an HCA's error event says "error", a failed call
    // "failed"), so that the lines of a healthy run cost no more searches.
    if (Has(t, "async event") || Has(t, "Call to ibv_")) ReadFabric(line, out);
    // A CUDA call of NVLS's set-up that failed ("transport/nvls.cc:165 NCCL WARN Cuda failure
    // 'invalid argument'"): the NVSwitch fabric's multicast could not be set up.
    if (Has(t, "nvls.cc") && Has(t, "NCCL WARN")) out.Add(Kind::kNcclNvlsFailed, line);
    // EPIPE: a write to a socket whose other end has closed (the peer process ended).
    if (Has(t, "Broken pipe")) out.Add(Kind::kPeerGone, line);
  }
}

}  // namespace toposched::diag
