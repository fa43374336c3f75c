// NCCL_DEBUG=INFO/WARN lines (NCCL's own wording, any version since 2.4) and the PyTorch
// ProcessGroupNCCL lines that wrap NCCL errors. Patterns: docs/diagnose.md, source "NCCL".
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
  if (Has(t, "GPU Direct RDMA Disabled for HCA") && Has(t, "NET/IB")) {
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
  if (Has(t, "Got completion from peer")) {
    if (Evidence* e = out.Add(Kind::kNcclIbCompletionError, line)) {
      auto status = IntAfter(t, "status=");
      if (!status) status = IntAfter(t, "with error ");
      if (status) e->fields.emplace_back("status", std::to_string(*status));
      if (auto vendor = IntAfter(t, "vendor err ")) {
        e->fields.emplace_back("vendor_err", std::to_string(*vendor));
      }
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
  // Newer NCCL retries the bootstrap connect: "socketPollConnect: connect returned No route to
  // host, retrying (26/34)".
  if (Has(t, "socketPollConnect") && Has(t, "retrying")) out.Add(Kind::kNcclConnectFailed, line);
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

}  // namespace

void ReadNcclLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "NET/") || Has(t, "Using network")) ReadNetSelection(line, out);
  if (Has(t, " via ")) ReadChannel(line, out);
  if (Has(t, "Channel ")) ReadRingOrder(line, out);
  if (Has(t, "Connected all rings") || Has(t, "Connected all trees")) {
    out.Add(Kind::kNcclConnected, line);
  }
  if (Has(t, "NVLS multicast support is available")) out.Add(Kind::kNcclNvlsAvailable, line);
  // A feature the job asked for that NCCL will not use: "CollNet is not supported or fails to
  // initialize, ignoring NCCL_ALGO=COLLNET".
  if (Has(t, "NCCL WARN") && Has(t, "not supported") && Has(t, "ignoring")) {
    out.Add(Kind::kNcclFeatureIgnored, line);
  }
  if (Has(t, "NCCL_IB_DISABLE set by environment to 1")) out.Add(Kind::kNcclIbDisabled, line);
  if (Has(t, "Failed to open libibverbs")) out.Add(Kind::kNcclIbverbsMissing, line);
  if (Has(t, "onnect") || Has(t, "rror") || Has(t, "atchdog") || Has(t, "ailure") ||
      Has(t, "ailed") || Has(t, "completion")) {
    ReadErrors(line, out);
    // Read on the same error lines only (an HCA's error event says "error", a failed call
    // "failed"), so that the lines of a healthy run cost no more searches.
    if (Has(t, "async event") || Has(t, "Call to ibv_")) ReadFabric(line, out);
    // EPIPE: a write to a socket whose other end has closed (the peer process ended).
    if (Has(t, "Broken pipe")) out.Add(Kind::kPeerGone, line);
  }
}

}  // namespace toposched::diag
