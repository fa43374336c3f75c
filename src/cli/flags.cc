#include "cli/flags.h"

namespace toposched::cli {

StatusOr<std::pair<std::string, std::string>> SplitAssignment(const std::string& flag,
                                                              const std::string& arg,
                                                              const char* shape) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size()) {
    return InvalidArgumentError(flag + " \"" + arg + "\": expected " + shape);
  }
  return std::make_pair(arg.substr(0, eq), arg.substr(eq + 1));
}

}  // namespace toposched::cli
