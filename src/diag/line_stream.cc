#include "diag/line_stream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

namespace toposched::diag {

namespace {

constexpr std::string_view kProvenance = "# PROVENANCE:";

// Splits a stream of bytes into lines; owns the carry-over of a line cut by a chunk boundary.
class Splitter {
 public:
  Splitter(const std::string& name, const LineStreamOptions& options, const LineFn& fn,
           LineStreamStats& stats)
      : name_(name), options_(options), fn_(fn), stats_(stats) {}

  void Feed(std::string_view chunk) {
    stats_.bytes += static_cast<int64_t>(chunk.size());
    while (!chunk.empty()) {
      const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
      if (nl == nullptr) {
        Append(chunk);
        return;
      }
      const size_t n = static_cast<const char*>(nl) - chunk.data();
      if (carry_.empty() && !overflow_) {
        EmitLine(chunk.substr(0, n), false);
      } else {
        Append(chunk.substr(0, n));
        EmitLine(carry_, overflow_);
        carry_.clear();
        overflow_ = false;
      }
      chunk.remove_prefix(n + 1);
    }
  }

  void Finish() {
    if (!carry_.empty() || overflow_) EmitLine(carry_, overflow_);
    carry_.clear();
  }

 private:
  void Append(std::string_view part) {
    const size_t room = options_.max_line_bytes - std::min(options_.max_line_bytes, carry_.size());
    if (part.size() > room) overflow_ = true;
    carry_.append(part.substr(0, room));
  }

  void EmitLine(std::string_view line, bool truncated) {
    ++stats_.lines;
    if (line.size() > options_.max_line_bytes) {
      line = line.substr(0, options_.max_line_bytes);
      truncated = true;
    }
    if (truncated) ++stats_.truncated_lines;
    if (stats_.lines == 1 && options_.skip_provenance_line && line.starts_with(kProvenance)) {
      return;
    }
    LineRef ref{{}, &name_, stats_.lines};
    while (!line.empty()) {
      const size_t cr = line.find('\r');
      const std::string_view seg = line.substr(0, cr);
      if (!seg.empty()) {
        ref.text = seg;
        fn_(ref);
      }
      if (cr == std::string_view::npos) break;
      line.remove_prefix(cr + 1);
    }
  }

  const std::string& name_;
  const LineStreamOptions& options_;
  const LineFn& fn_;
  LineStreamStats& stats_;
  std::string carry_;
  bool overflow_ = false;
};

}  // namespace

Status LineStreamOptions::Validate() const {
  if (max_line_bytes == 0) {
    return InvalidArgumentError("line stream: max_line_bytes must be > 0, got 0");
  }
  if (chunk_bytes == 0) {
    return InvalidArgumentError("line stream: chunk_bytes must be > 0, got 0");
  }
  return OkStatus();
}

Status StreamFile(const std::string& path, const LineStreamOptions& options, const LineFn& fn,
                  LineStreamStats* stats) {
  RETURN_IF_ERROR(options.Validate());
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return FailedPreconditionError(path + ": is a directory, not a log file");
  }
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) {
    const int err = errno;
    std::string msg = path + ": cannot open: " + std::strerror(err);
    return err == ENOENT ? NotFoundError(msg) : FailedPreconditionError(msg);
  }
  LineStreamStats local;
  Splitter splitter(path, options, fn, stats ? *stats : local);
  std::vector<char> buf(options.chunk_bytes);
  while (true) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), f.get());
    if (n > 0) splitter.Feed(std::string_view(buf.data(), n));
    if (n < buf.size()) break;
  }
  if (std::ferror(f.get())) {
    return FailedPreconditionError(path + ": read error: " + std::strerror(errno));
  }
  splitter.Finish();
  return OkStatus();
}

void StreamText(std::string_view text, const std::string& name, const LineStreamOptions& options,
                const LineFn& fn, LineStreamStats* stats) {
  LineStreamStats local;
  Splitter splitter(name, options, fn, stats ? *stats : local);
  splitter.Feed(text);
  splitter.Finish();
}

}  // namespace toposched::diag
