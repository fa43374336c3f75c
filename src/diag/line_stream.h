// Diagnosis: reads a log as a stream of lines in bounded memory, whatever its size or content
// (binary bytes, no newline at all, tqdm's carriage returns). Knows nothing of what the lines
// mean.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "diag/evidence.h"

namespace toposched::diag {

struct LineStreamOptions {
  // A longer line is cut to its first max_line_bytes (the rest up to the newline is skipped):
  // memory stays O(chunk_bytes + max_line_bytes) for any input.
  size_t max_line_bytes = 64 << 10;
  size_t chunk_bytes = 1 << 20;
  // The first line of a file in the project's log samples names its provenance
  // ("# PROVENANCE: ..."); it describes the log, it is not part of it.
  bool skip_provenance_line = true;
  Status Validate() const;
};

struct LineStreamStats {
  int64_t bytes = 0;
  int64_t lines = 0;
  int64_t truncated_lines = 0;
};

using LineFn = std::function<void(const LineRef&)>;

// Calls `fn` for every line of the file, split on '\n'; a line holding carriage returns (progress
// bars redrawn in place) is handed over as its '\r'-separated segments, each with the line's
// number; empty segments are skipped. NotFound/FailedPrecondition (with the path and the
// system's reason) when the file cannot be opened or read; a directory is refused.
Status StreamFile(const std::string& path, const LineStreamOptions& options, const LineFn& fn,
                  LineStreamStats* stats = nullptr);

// The same over text in memory; `name` is the file name the LineRefs carry.
void StreamText(std::string_view text, const std::string& name, const LineStreamOptions& options,
                const LineFn& fn, LineStreamStats* stats = nullptr);

}  // namespace toposched::diag
