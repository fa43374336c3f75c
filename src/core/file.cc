#include "core/file.h"

#include <sys/stat.h>

#include <cstdio>
#include <memory>

namespace toposched {

StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes,
                                      const std::string& what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return NotFoundError(path + ": cannot read: no such file");
  if (S_ISDIR(st.st_mode)) return InvalidArgumentError(path + ": is a directory, expected a file");
  auto too_big = [&] {
    return InvalidArgumentError(path + ": more than the limit of " + std::to_string(max_bytes) +
                                " bytes for " + what);
  };
  if (S_ISREG(st.st_mode) && static_cast<size_t>(st.st_size) > max_bytes) return too_big();
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return NotFoundError(path + ": cannot open for reading");
  std::string out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const size_t n = std::fread(buf, 1, sizeof buf, f.get());
    if (n == 0) break;
    if (out.size() + n > max_bytes) return too_big();
    out.append(buf, n);
  }
  if (std::ferror(f.get())) return InvalidArgumentError(path + ": read error");
  return out;
}

}  // namespace toposched
