// The stored form of a scheduler input (sched/input.h): one store::InputRecord per input, its
// kind, the job it concerns and a JSON payload. Nodes are stored by name, so a store stays
// readable whatever order a cluster file lists its nodes in. The daemon encodes what it applies
// and decodes what it replays: the same Input either way.
#pragma once

#include <string>

#include "core/status.h"
#include "sched/input.h"
#include "store/job_store.h"
#include "topo/cluster.h"

namespace toposched::api {

// Kind, job id and payload of `in` (seq, time and idempotency key are the caller's). A submit's
// payload is `submit_json` when given (the daemon stores the canonical JSON it parsed the spec
// from), else the spec's canonical JSON.
store::InputRecord EncodeInput(const sched::Input& in, const topo::Cluster& cluster,
                               const std::string& submit_json = "");

// The input a stored record holds. DataLoss naming the record ("input 12 (drain): ...") for a
// malformed payload, an unknown kind or a node the cluster does not have.
StatusOr<sched::Input> DecodeInput(const store::InputRecord& rec, const topo::Cluster& cluster);

}  // namespace toposched::api
