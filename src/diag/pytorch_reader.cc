// PyTorch: CUDA out-of-memory errors, torchrun/elastic ChildFailedError summaries, rendezvous
// and c10d store errors. Patterns: docs/diagnose.md, source "PyTorch" (torch.distributed.elastic
// and c10d messages).
#include <string>
#include <string_view>

#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

void ReadPyTorchLine(const LineRef& line, EvidenceSet& out) {
  const std::string_view t = line.text;
  if (Has(t, "CUDA out of memory") || Has(t, "OutOfMemoryError")) out.Add(Kind::kCudaOom, line);
  if (auto code = IntAfter(t, "exitcode  :")) {  // the ChildFailedError "Root Cause" block
    if (Evidence* e = out.Add(Kind::kChildFailed, line)) {
      e->fields.emplace_back("exitcode", std::to_string(*code));
    }
  } else if (auto sig = IntAfter(t, "Signal ")) {
    if (Has(t, "received by PID")) {
      if (Evidence* e = out.Add(Kind::kChildFailed, line)) {
        e->fields.emplace_back("signal", std::to_string(*sig));
      }
    }
  }
  if (Has(t, "Rendezvous") &&
      (Has(t, "ConnectionError") || Has(t, "TimeoutError") || Has(t, "ClosedError"))) {
    out.Add(Kind::kRendezvousError, line);
  }
  if (Has(t, "[c10d]") && Has(t, "timed out") && Has(t, "trying to connect")) {
    out.Add(Kind::kRendezvousError, line);
  }
  if (Has(t, "waitForInput") && Has(t, "timed out")) out.Add(Kind::kStoreTimeout, line);
  if (Has(t, "Address already in use") || Has(t, "EADDRINUSE")) {
    out.Add(Kind::kAddressInUse, line);
  }
}

}  // namespace toposched::diag
