// Errors that say where in a file they are: "source:line:column: field: message", the form
// every reader of the project uses (a job file, a cluster spec, nvidia-smi text, a Slurm
// config, a scheduler script). Pure functions; no I/O.
#pragma once

#include <string>

#include "core/status.h"

namespace toposched {

// A place in a file: 1-based line and column; 0 = unknown, and then left out of the message.
struct SourcePos {
  int line = 0;
  int column = 0;
};

// InvalidArgument "source:line:column: field: msg", each of line, column and field only where
// known (> 0, > 0, not empty).
Status SourceError(const std::string& source, SourcePos pos, const std::string& field,
                   const std::string& msg);
// "source:line:column: msg" (no field).
inline Status SourceError(const std::string& source, SourcePos pos, const std::string& msg) {
  return SourceError(source, pos, "", msg);
}
// "source:line: msg" (the line left out when 0).
inline Status SourceError(const std::string& source, int line, const std::string& msg) {
  return SourceError(source, SourcePos{line, 0}, "", msg);
}

// A reader's context: its source name, and errors at a line and field of it.
class SourceContext {
 public:
  explicit SourceContext(std::string source) : source_(std::move(source)) {}
  Status Err(int line, const std::string& field, const std::string& msg) const {
    return SourceError(source_, SourcePos{line, 0}, field, msg);
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

}  // namespace toposched
