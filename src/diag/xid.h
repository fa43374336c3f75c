// Diagnosis: NVIDIA driver Xid codes, their meaning and what they call for, as data. Source:
// NVIDIA's Xid catalogue ("Analyzing Xid Errors with the Xid Catalog",
// https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) and the A100/H100 GPU
// memory error management guide (row remapping). Knows nothing of logs or jobs.
#pragma once

#include <string_view>

namespace toposched::diag {

// What a Xid calls for: kApplication (the job's own fault, restart it), kResetGpu (reset the GPU
// before the next job: drain the node until then), kNodeService (reboot/RMA: drain the node).
enum class XidAction { kApplication, kResetGpu, kNodeService };

struct XidInfo {
  int code = 0;
  std::string_view meaning;  // "" for a code not in the table
  XidAction action = XidAction::kResetGpu;
  bool known = false;
};

// The table entry for `code`; an unknown code is reported as needing a GPU reset (known=false).
XidInfo LookupXid(int code);
const char* XidActionName(XidAction a);  // "restart the application", "reset the GPU", ...

}  // namespace toposched::diag
