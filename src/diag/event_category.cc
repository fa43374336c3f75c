#include "diag/event_category.h"

#include "diag/diagnose.h"

namespace toposched::diag {

std::optional<Category> InterruptionCategory(const job::JobEvent& e) {
  using job::JobState;
  if (e.from != JobState::kRunning && e.from != JobState::kCompleting) return std::nullopt;
  if (e.to != JobState::kFailed && e.to != JobState::kCancelled && e.to != JobState::kTimeout &&
      e.to != JobState::kPreempted && e.to != JobState::kNodeFail) {
    return std::nullopt;
  }
  const Diagnosis d = DiagnoseText(job::FormatEvent(e), "events", nullptr);
  return d.causes.empty() ? Category::kUnknown : d.causes.front().category;
}

}  // namespace toposched::diag
