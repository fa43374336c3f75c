#include "core/source_error.h"

namespace toposched {

Status SourceError(const std::string& source, SourcePos pos, const std::string& field,
                   const std::string& msg) {
  std::string out = source;
  if (pos.line > 0) out += ":" + std::to_string(pos.line);
  if (pos.line > 0 && pos.column > 0) out += ":" + std::to_string(pos.column);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  return InvalidArgumentError(out + msg);
}

}  // namespace toposched
