#include "diag/xid.h"

#include "core/enum_names.h"

namespace toposched::diag {

namespace {

// Codes seen in training clusters; meaning and action as NVIDIA's catalogue gives them.
constexpr XidInfo kXids[] = {
    {8, "GPU stopped processing (channel idle timeout)", XidAction::kApplication, true},
    {13, "graphics engine exception (often an out-of-range access by the application)",
     XidAction::kApplication, true},
    {31, "GPU memory page fault (usually an illegal address in the application)",
     XidAction::kApplication, true},
    {32, "invalid or corrupted push buffer stream", XidAction::kResetGpu, true},
    {38, "driver firmware error", XidAction::kResetGpu, true},
    {43, "GPU stopped processing (the faulting channel was reset)", XidAction::kApplication, true},
    {45, "preemptive cleanup after a previous error", XidAction::kApplication, true},
    {48, "double-bit (uncorrectable) ECC error", XidAction::kResetGpu, true},
    {61, "internal micro-controller breakpoint/warning", XidAction::kResetGpu, true},
    {62, "internal micro-controller halt", XidAction::kResetGpu, true},
    {63, "ECC page retirement or row-remapping event (takes effect after a GPU reset)",
     XidAction::kResetGpu, true},
    {64, "ECC page retirement or row-remapping failure", XidAction::kNodeService, true},
    {74, "NVLink error", XidAction::kResetGpu, true},
    {79, "GPU has fallen off the bus", XidAction::kNodeService, true},
    {92, "high single-bit ECC error rate", XidAction::kResetGpu, true},
    {94, "contained ECC error", XidAction::kResetGpu, true},
    {95, "uncontained ECC error", XidAction::kResetGpu, true},
    {109, "context switch timeout", XidAction::kResetGpu, true},
    {119, "GSP firmware RPC timeout", XidAction::kResetGpu, true},
    {120, "GSP firmware error", XidAction::kResetGpu, true},
    {121, "C2C link corrected error", XidAction::kResetGpu, true},
    {140, "unrecovered ECC error", XidAction::kResetGpu, true},
    {143, "GPU initialization failure", XidAction::kNodeService, true},
    {154, "GPU recovery action changed (see the following recovery action)", XidAction::kResetGpu,
     true},
};

}  // namespace

XidInfo LookupXid(int code) {
  for (const XidInfo& x : kXids) {
    if (x.code == code) return x;
  }
  return XidInfo{code, "", XidAction::kResetGpu, false};
}

namespace {

constexpr EnumName<XidAction> kXidActionNames[] = {
    {XidAction::kApplication, "restart the application"},
    {XidAction::kResetGpu, "reset the GPU (drain the node until then)"},
    {XidAction::kNodeService, "drain the node for reboot or hardware service"}};

}  // namespace

const char* XidActionName(XidAction a) { return NameOf(kXidActionNames, a, "?"); }

}  // namespace toposched::diag
