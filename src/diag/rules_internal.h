// Diagnosis, inside the rules: the helpers the rule families share and the families themselves
// (rules.cc: hardware, memory, scheduler, application; network_rules.cc: NCCL and network;
// process_rules.cc: signals, cancels, preemption, capacity, CUDA errors, exceptions).
// Not for use outside src/diag.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "diag/cause.h"
#include "diag/evidence.h"
#include "diag/topology.h"

namespace toposched::diag::internal {

// A cause citing the first lines of `kinds` (up to 2 per kind, 6 in all), in that order.
Cause MakeCause(Category category, double confidence, std::string summary, std::string fix,
                const EvidenceSet& ev, std::initializer_list<Kind> kinds);
// Number of lines of any of `kinds`.
int64_t CountOf(const EvidenceSet& ev, std::initializer_list<Kind> kinds);

// Whether `c` cites a line from the fabric itself (an IB completion error, an HCA event, a failed
// verbs call, a NIC link down): a network error with such a line is a cause, without one it may
// be the echo of a peer that ended.
bool CitesFabric(const Cause& c);

// calibration.cc: a cause's confidence from its rule's strength (its `confidence` as the rule set
// it) and the rule's record on the development corpus; and that over causes in ranked order,
// keeping the shown confidences non-increasing down the list.
double CalibratedConfidence(const Cause& c);
void Calibrate(std::vector<Cause>& ranked);

void NetworkRules(const EvidenceSet& ev, const NodeContext* node, std::vector<Cause>& out);
// process_rules.cc: a process's fate in any framework's wording.
void ProcessRules(const EvidenceSet& ev, std::vector<Cause>& out);

}  // namespace toposched::diag::internal
