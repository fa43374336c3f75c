#include "cli/data_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

// Set by CMakeLists.txt on this file only, so a new prefix recompiles one file.
#ifndef TS_BUILD_DIR
#define TS_BUILD_DIR ""
#endif
#ifndef TS_SOURCE_DATA_DIR
#define TS_SOURCE_DATA_DIR ""
#endif
#ifndef TS_INSTALL_DATA_DIR
#define TS_INSTALL_DATA_DIR ""
#endif

namespace toposched::cli {

namespace {

namespace fs = std::filesystem;

bool HoldsData(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "hardware" / "links.json", ec);
}

// The directory of the running executable (symlinks resolved), or "" when unknown.
fs::path ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  return exe.parent_path();
}

bool SameDir(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return !a.empty() && !b.empty() && fs::equivalent(a, b, ec) && !ec;
}

}  // namespace

std::string DataDir() {
  if (const char* env = std::getenv("TOPOSCHED_DATA_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  const fs::path exe_dir = ExecutableDir();
  if (!exe_dir.empty()) {
    const fs::path beside = (exe_dir.parent_path() / "share" / "toposched").lexically_normal();
    if (HoldsData(beside)) return beside.string();
  }
  if (SameDir(exe_dir, TS_BUILD_DIR) && HoldsData(TS_SOURCE_DATA_DIR)) return TS_SOURCE_DATA_DIR;
  if (HoldsData(TS_INSTALL_DATA_DIR)) return TS_INSTALL_DATA_DIR;
  return "";
}

std::string DataFile(const std::string& relative) {
  const std::string dir = DataDir();
  return (fs::path(dir.empty() ? "data" : dir) / relative).string();
}

}  // namespace toposched::cli
