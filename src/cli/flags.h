// Helpers for reading flag values shared by the CLI's commands.
#pragma once

#include <string>
#include <utility>

#include "core/status.h"

namespace toposched::cli {

// "KEY=VALUE" given to `flag` as (KEY, VALUE). InvalidArgument `flag "arg": expected SHAPE` when
// there is no '=', or either side is empty.
StatusOr<std::pair<std::string, std::string>> SplitAssignment(const std::string& flag,
                                                              const std::string& arg,
                                                              const char* shape);

}  // namespace toposched::cli
