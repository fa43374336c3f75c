// Diagnosis of the scheduler's own job events one at a time, for the daemon's event log and
// metrics: which events interrupt a running job, and the category of each.
#pragma once

#include <optional>

#include "diag/cause.h"
#include "job/job_state.h"

namespace toposched::diag {

// An event that stops a running job short of its normal end — to FAILED, CANCELLED, TIMEOUT,
// PREEMPTED or NODE_FAIL from RUNNING or COMPLETING — and its category as the scheduler-event
// reader and rules give it (kUnknown when they name none); nullopt for every other event.
std::optional<Category> InterruptionCategory(const job::JobEvent& e);

}  // namespace toposched::diag
