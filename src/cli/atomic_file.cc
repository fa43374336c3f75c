#include "cli/atomic_file.h"

#include <fstream>
#include <system_error>

namespace toposched::cli {

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  std::error_code ignored;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return InvalidArgumentError(tmp.string() + ": cannot open for writing");
    f << text;
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ignored);
      return InvalidArgumentError(tmp.string() + ": write failed");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ignored);
    return InvalidArgumentError(path.string() + ": rename failed: " + ec.message());
  }
  return OkStatus();
}

}  // namespace toposched::cli
