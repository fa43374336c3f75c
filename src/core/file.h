// Reading a whole file with a limit on the bytes actually read, not on the size the file claims:
// devices and pipes (/dev/zero, a FIFO) report size 0 and never end, so a stat() check alone lets
// them grow a string without bound.
#pragma once

#include <cstddef>
#include <string>

#include "core/status.h"

namespace toposched {

// The file's bytes. NotFound when it cannot be opened; InvalidArgument for a directory or when
// more than `max_bytes` could be read ("<path>: more than the limit of N bytes for <what>").
StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes,
                                      const std::string& what = "this file");

}  // namespace toposched
