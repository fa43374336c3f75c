// PyTorch: CUDA out-of-memory errors, torchrun/elastic ChildFailedError summaries, rendezvous
// and c10d store errors. Patterns: docs/diagnose.md, source "PyTorch" (torch.distributed.elastic
// and c10d messages).
#include <string>
#include <string_view>

#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// A collective that did not complete, in the words of PyTorch's watchdog dumps and heartbeat
// monitor ("Timeout at NCCL work: 5, last enqueued NCCL work: 5", "Heartbeat monitor timed out",
// "ProcessGroupNCCL's watchdog got stuck for 480 seconds") and of Gloo ("Timed out waiting
// 1800000ms for recv operation to complete").
bool IsCollectiveTimeoutLine(std::string_view t) {
  return (Has(t, "NCCL work") && Has(t, "Timeout at NCCL work")) ||
         Has(t, "Heartbeat monitor timed out") || Has(t, "watchdog got stuck") ||
         (Has(t, "Timed out waiting") && Has(t, "operation to complete"));
}

}  // namespace

void ReadPyTorchLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  // A device out of memory, in any framework's words: the process reader (it shares the
  // memory words' searches with the host's OOM families).
  if (IsCollectiveTimeoutLine(t)) out.Add(Kind::kNcclWatchdogTimeout, line);
  // c10d's collective check (TORCH_DISTRIBUTED_DEBUG=DETAIL): the ranks called different
  // collectives, or the same one with different shapes.
  if (Has(t, "mismatch between collectives")) out.Add(Kind::kCollectiveMismatch, line);
  if (auto code = IntAfter(t, "exitcode  :")) {  // the ChildFailedError "Root Cause" block
    if (Evidence* e = out.Add(Kind::kChildFailed, line)) {
      e->fields.emplace_back("exitcode", std::to_string(*code));
    }
    // A worker's own nonzero exit (not a signal's -N or 128+N): the program failed.
    if (*code > 0 && *code < 128) {
      if (Evidence* e = out.Add(Kind::kWorkerFailed, line)) {
        e->fields.emplace_back("code", std::to_string(*code));
      }
    }
  } else if (auto sig = IntAfter(t, "Signal ")) {
    if (Has(t, "received by PID")) {
      if (Evidence* e = out.Add(Kind::kChildFailed, line)) {
        e->fields.emplace_back("signal", std::to_string(*sig));
      }
    }
  }
  if (Has(t, "Rendezvous") && (Has(t, "ConnectionError") || Has(t, "TimeoutError"))) {
    out.Add(Kind::kRendezvousError, line);
  }
  // The rendezvous was closed under this agent: another node's agent ended or left.
  if (Has(t, "RendezvousClosedError")) out.Add(Kind::kRendezvousClosed, line);
  if (Has(t, "[c10d]") && Has(t, "timed out") && Has(t, "trying to connect")) {
    out.Add(Kind::kRendezvousError, line);
  }
  // The c10d client's own words, whatever the launcher: "[c10d] The client socket has failed to
  // connect to ...", "The client socket has timed out after 1800s while trying to connect".
  if ((Has(t, "[c10d]") && Has(t, "failed to connect")) ||
      Has(t, "The client socket has timed out after") ||
      (Has(t, "DistNetworkError") && (Has(t, "connect") || Has(t, "timed out")))) {
    out.Add(Kind::kC10dSocketError, line);
  }
  if (Has(t, "waitForInput") && Has(t, "timed out")) out.Add(Kind::kStoreTimeout, line);
  // A rank waiting on the store for another's NCCL id ("store->get('0') got error: Socket
  // Timeout"): the rank that should have posted it never did in time.
  if (Has(t, "->get(") && (Has(t, "Timeout") || Has(t, "timed out"))) {
    out.Add(Kind::kStoreTimeout, line);
  }
  // A failure inside the store-based barrier of init_process_group (its traceback frame), or
  // the barrier's own timeout; "Completed store-based barrier" is a healthy start.
  if (Has(t, "_store_based_barrier(") || Has(t, "Waiting in store based barrier") ||
      Has(t, "in store based barrier") || Has(t, "DistStoreError")) {
    out.Add(Kind::kStoreTimeout, line);
  }
  // c10d names the peer it lost: "This may indicate a possible application crash on rank 0 or a
  // network set up issue", and the TCPStore client "Connection was likely closed. Did the remote
  // TCPStore server shutdown or crash?".
  // Two searches on every line ("rash", "likely closed"), the rest only on those lines.
  const bool crash = Has(t, "rash");
  if (crash || Has(t, "likely closed")) {
    if (auto rank = IntAfter(t, "application crash on rank ")) {
      if (Evidence* e = out.Add(Kind::kPeerGone, line)) {
        e->fields.emplace_back("rank", std::to_string(*rank));
      }
    } else if ((crash && Has(t, "TCPStore server shutdown or crash")) ||
               Has(t, "Connection was likely closed")) {
      out.Add(Kind::kPeerGone, line);
    }
  }
  if (Has(t, "Address already in use") || Has(t, "EADDRINUSE")) {
    out.Add(Kind::kAddressInUse, line);
  }
}

}  // namespace toposched::diag
