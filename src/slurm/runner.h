// How the slurm module talks to Slurm: by running its commands (scontrol, sinfo) and reading
// their output. The runner is an interface so parsing and decisions are tested on captured
// outputs; ProcessRunner runs the real commands. Knows nothing of scheduling.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace toposched::slurm {

struct CommandResult {
  int exit_code = 0;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs one command (argv[0] looked up in PATH). Implementations must be safe to call
// repeatedly from one thread; no thread-safety beyond that is promised.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Unavailable when the command cannot be started; a non-zero exit is not an error here (it is
  // in the result), callers decide.
  virtual StatusOr<CommandResult> Run(const std::vector<std::string>& argv) = 0;
};

// fork/execvp with stdout and stderr captured through pipes (each capped at 64 MiB), stdin
// from /dev/null, waiting for the child. The child inherits the environment (SLURM_CONF).
class ProcessRunner : public CommandRunner {
 public:
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv) override;
};

// Runs the command and returns stdout; an exit code other than 0 becomes Unavailable with
// "<argv joined>: exit <n>: <stderr>".
StatusOr<std::string> RunChecked(CommandRunner& runner, const std::vector<std::string>& argv);

}  // namespace toposched::slurm
