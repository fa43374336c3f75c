// `toposched replay`: runs a scheduler script (sched/script.h) on a cluster and prints the
// transcript — the golden-test format, for reproducing a sequence of submissions, passes and
// failures exactly.
#pragma once

#include <CLI/CLI.hpp>

namespace toposched::cli {

// Adds `replay --cluster FILE SCRIPT`. Exit code in `rc`: 0 when the script ran (commands the
// scheduler refused show as "error:" lines), 1 for a malformed script or cluster, 2 usage.
void AddReplayCommand(CLI::App& app, int& rc);

}  // namespace toposched::cli
