// Slurm's job states (as `scontrol show job` prints JobState= and squeue's compact codes) mapped
// onto toposched's job::JobState. Slurm has more states than toposched; each maps to the
// toposched state with the same consequence for resources and requeueing (table below).
#pragma once

#include <string_view>

#include "core/status.h"
#include "job/job_state.h"

namespace toposched::slurm {

// Case-insensitive; flags after '+' ("CANCELLED+", "RUNNING+COMPLETING") are ignored except
// that a "+COMPLETING" flag gives kCompleting. The mapping (docs/slurm.md):
//   PENDING (PD), REQUEUE_HOLD (RH), RESV_DEL_HOLD (RD)         -> PENDING
//   CONFIGURING (CF), RUNNING (R), SUSPENDED (S), STOPPED (ST),
//   RESIZING (RS), SIGNALING (SI)                               -> RUNNING  (hold resources)
//   COMPLETING (CG), STAGE_OUT (SO)                             -> COMPLETING
//   COMPLETED (CD)                                              -> COMPLETED
//   CANCELLED (CA), REVOKED (RV)                                -> CANCELLED
//   FAILED (F), OUT_OF_MEMORY (OOM), SPECIAL_EXIT (SE)          -> FAILED
//   TIMEOUT (TO), DEADLINE (DL)                                 -> TIMEOUT
//   NODE_FAIL (NF), BOOT_FAIL (BF)                              -> NODE_FAIL
//   PREEMPTED (PR)                                              -> PREEMPTED
//   REQUEUED (RQ), REQUEUE_FED (RF)                             -> REQUEUED
// InvalidArgument naming the text for anything else.
StatusOr<job::JobState> MapSlurmJobState(std::string_view slurm_state);

}  // namespace toposched::slurm
