#include "cli/atomic_file.h"

#include <fstream>
#include <system_error>

namespace toposched::cli {

namespace {

std::filesystem::path TmpOf(const std::filesystem::path& path) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  return tmp;
}

// Writes `text` to `tmp`; on failure removes it (when it is a file) and names the step.
Status WriteTmp(const std::filesystem::path& tmp, const std::string& text) {
  std::error_code ignored;
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) return InvalidArgumentError(tmp.string() + ": cannot open for writing");
  f << text;
  f.close();
  if (!f) {
    std::filesystem::remove(tmp, ignored);
    return InvalidArgumentError(tmp.string() + ": write failed");
  }
  return OkStatus();
}

}  // namespace

Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp = TmpOf(path);
  std::error_code ignored;
  RETURN_IF_ERROR(WriteTmp(tmp, text));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ignored);
    return InvalidArgumentError(path.string() + ": rename failed: " + ec.message());
  }
  return OkStatus();
}

Status WriteFilesAtomically(const std::filesystem::path& dir,
                            const std::vector<std::pair<std::string, std::string>>& files) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgumentError(dir.string() + ": cannot create directory: " + ec.message());
  std::vector<std::filesystem::path> written;  // temporaries, in order
  std::error_code ignored;
  for (const auto& [name, text] : files) {
    const std::filesystem::path tmp = TmpOf(dir / name);
    Status s = std::filesystem::is_directory(dir / name, ignored)
                   ? InvalidArgumentError((dir / name).string() + ": is a directory")
                   : WriteTmp(tmp, text);
    if (!s.ok()) {
      for (const std::filesystem::path& t : written) std::filesystem::remove(t, ignored);
      return s;
    }
    written.push_back(tmp);
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const std::filesystem::path target = dir / files[i].first;
    std::filesystem::rename(written[i], target, ec);
    if (ec) {
      for (size_t k = i; k < written.size(); ++k) std::filesystem::remove(written[k], ignored);
      return InvalidArgumentError(target.string() + ": rename failed: " + ec.message());
    }
  }
  return OkStatus();
}

}  // namespace toposched::cli
