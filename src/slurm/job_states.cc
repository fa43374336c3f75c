#include "slurm/job_states.h"

#include <string>
#include <utility>

#include "core/strings.h"

namespace toposched::slurm {

StatusOr<job::JobState> MapSlurmJobState(std::string_view slurm_state) {
  using job::JobState;
  static const std::pair<const char*, JobState> kTable[] = {
      {"PENDING", JobState::kPending},       {"PD", JobState::kPending},
      {"REQUEUE_HOLD", JobState::kPending},  {"RH", JobState::kPending},
      {"RESV_DEL_HOLD", JobState::kPending}, {"RD", JobState::kPending},
      {"CONFIGURING", JobState::kRunning},   {"CF", JobState::kRunning},
      {"RUNNING", JobState::kRunning},       {"R", JobState::kRunning},
      {"SUSPENDED", JobState::kRunning},     {"S", JobState::kRunning},
      {"STOPPED", JobState::kRunning},       {"ST", JobState::kRunning},
      {"RESIZING", JobState::kRunning},      {"RS", JobState::kRunning},
      {"SIGNALING", JobState::kRunning},     {"SI", JobState::kRunning},
      {"COMPLETING", JobState::kCompleting}, {"CG", JobState::kCompleting},
      {"STAGE_OUT", JobState::kCompleting},  {"SO", JobState::kCompleting},
      {"COMPLETED", JobState::kCompleted},   {"CD", JobState::kCompleted},
      {"CANCELLED", JobState::kCancelled},   {"CA", JobState::kCancelled},
      {"REVOKED", JobState::kCancelled},     {"RV", JobState::kCancelled},
      {"FAILED", JobState::kFailed},         {"F", JobState::kFailed},
      {"OUT_OF_MEMORY", JobState::kFailed},  {"OOM", JobState::kFailed},
      {"SPECIAL_EXIT", JobState::kFailed},   {"SE", JobState::kFailed},
      {"TIMEOUT", JobState::kTimeout},       {"TO", JobState::kTimeout},
      {"DEADLINE", JobState::kTimeout},      {"DL", JobState::kTimeout},
      {"NODE_FAIL", JobState::kNodeFail},    {"NF", JobState::kNodeFail},
      {"BOOT_FAIL", JobState::kNodeFail},    {"BF", JobState::kNodeFail},
      {"PREEMPTED", JobState::kPreempted},   {"PR", JobState::kPreempted},
      {"REQUEUED", JobState::kRequeued},     {"RQ", JobState::kRequeued},
      {"REQUEUE_FED", JobState::kRequeued},  {"RF", JobState::kRequeued},
  };
  std::string text(Trim(slurm_state));
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::vector<std::string> parts = Split(text, '+');
  std::string base = parts.empty() ? "" : parts[0];
  for (const auto& [name, state] : kTable) {
    if (base != name) continue;
    for (size_t i = 1; i < parts.size(); ++i) {
      if (parts[i] == "COMPLETING" && job::HoldsResources(state)) return JobState::kCompleting;
    }
    return state;
  }
  return InvalidArgumentError("unknown Slurm job state \"" + std::string(slurm_state) + "\"");
}

}  // namespace toposched::slurm
