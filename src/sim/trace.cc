#include "sim/trace.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "core/enum_names.h"
#include "core/file.h"
#include "core/strings.h"
#include "core/time_units.h"

namespace toposched::sim {

namespace {

struct Row {
  int line = 0;
  std::vector<std::string> cells;
};

// The header's columns by name, and the data rows (blank lines skipped, CR stripped).
struct Table {
  std::map<std::string, int> columns;
  std::vector<Row> rows;
};

StatusOr<Table> SplitCsv(const std::string& text, const std::string& source) {
  Table t;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  bool header = false;
  size_t width = 0;
  while (std::getline(in, line)) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (Trim(line).empty() || Trim(line)[0] == '#') continue;  // blank or comment line
    std::vector<std::string> cells = Split(line, ',');
    for (std::string& c : cells) c = std::string(Trim(c));
    if (!header) {
      header = true;
      width = cells.size();
      for (size_t i = 0; i < cells.size(); ++i) {
        if (cells[i].empty()) {
          return InvalidArgumentError(source + ":" + std::to_string(n) + ": empty column name " +
                                      "in the header (column " + std::to_string(i + 1) + ")");
        }
        if (!t.columns.emplace(cells[i], static_cast<int>(i)).second) {
          return InvalidArgumentError(source + ":" + std::to_string(n) + ": column \"" + cells[i] +
                                      "\" given twice in the header");
        }
      }
      continue;
    }
    if (cells.size() != width) {
      return InvalidArgumentError(source + ":" + std::to_string(n) + ": expected " +
                                  std::to_string(width) + " fields (as the header), got " +
                                  std::to_string(cells.size()));
    }
    t.rows.push_back(Row{n, std::move(cells)});
  }
  if (!header) return InvalidArgumentError(source + ": empty trace (no header line)");
  return t;
}

// Typed access to one row with file:line: column context in every error.
class Cells {
 public:
  Cells(const Table& t, const Row& r, const std::string& source) : t_(t), r_(r), source_(source) {}

  bool Has(const std::string& col) const { return t_.columns.count(col) != 0; }
  std::string Text(const std::string& col) const {
    auto it = t_.columns.find(col);
    return it == t_.columns.end() ? "" : r_.cells[it->second];
  }
  Status Error(const std::string& col, const std::string& what) const {
    return InvalidArgumentError(source_ + ":" + std::to_string(r_.line) + ": column \"" + col +
                                "\": " + what);
  }
  StatusOr<double> Number(const std::string& col) const {
    const std::string s = Text(col);
    auto v = ParseDouble(s);
    if (!v.ok() || !std::isfinite(*v)) return Error(col, "expected a number, got \"" + s + "\"");
    return *v;
  }
  StatusOr<int> Int(const std::string& col, int lo, int hi) const {
    const std::string s = Text(col);
    auto v = ParseInt(s);
    if (!v.ok()) {
      // "8.0" is an integer too (some traces write counts as floats).
      auto d = ParseDouble(s);
      if (!d.ok() || *d != std::floor(*d) || std::abs(*d) > 1e9) {
        return Error(col, "expected an integer, got \"" + s + "\"");
      }
      v = static_cast<long long>(*d);
    }
    if (*v < lo || *v > hi) {
      return Error(col,
                   "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + s);
    }
    return static_cast<int>(*v);
  }
  // Seconds (≥ 0) to microseconds.
  StatusOr<int64_t> Seconds(const std::string& col) const {
    ASSIGN_OR_RETURN(double v, Number(col));
    if (v < 0 || v > 1e12) return Error(col, "seconds must be in [0, 1e12], got " + Text(col));
    return static_cast<int64_t>(std::llround(v * kUsPerS));
  }
  int line() const { return r_.line; }

 private:
  const Table& t_;
  const Row& r_;
  const std::string& source_;
};

Status RequireColumns(const Table& t, const std::string& source,
                      const std::vector<std::string>& cols, TraceFormat f) {
  for (const std::string& c : cols) {
    if (!t.columns.count(c)) {
      return InvalidArgumentError(source + ":1: " + TraceFormatName(f) +
                                  " trace: missing column \"" + c + "\"");
    }
  }
  return OkStatus();
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's civil-days method).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// "2017-10-09 07:01:55" → seconds since the epoch (UTC).
std::optional<int64_t> ParseTimestamp(const std::string& s) {
  int y, mo, d, h, mi, se;
  char tail;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d %2d:%2d:%2d%c", &y, &mo, &d, &h, &mi, &se, &tail) != 6) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || se < 0 ||
      se > 60) {
    return std::nullopt;
  }
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
         mi * 60 + se;
}

constexpr int kMaxGpus = 1 << 16;

Status ReadPhilly(const Table& t, const std::string& source, Trace& out) {
  RETURN_IF_ERROR(RequireColumns(t, source, {"timestamp", "duration", "num_gpus"}, out.format));
  for (const Row& r : t.rows) {
    Cells c(t, r, source);
    TraceJob j;
    j.line = r.line;
    auto ts = ParseTimestamp(c.Text("timestamp"));
    if (!ts) {
      return c.Error("timestamp",
                     "expected YYYY-MM-DD HH:MM:SS, got \"" + c.Text("timestamp") + "\"");
    }
    j.submit_us = *ts * kUsPerS;
    ASSIGN_OR_RETURN(j.duration_us, c.Seconds("duration"));
    ASSIGN_OR_RETURN(j.gpus, c.Int("num_gpus", 1, kMaxGpus));
    j.user = c.Text("cluster");
    j.name = "philly-" + std::to_string(r.line);
    out.jobs.push_back(std::move(j));
  }
  return OkStatus();
}

Status ReadOpenb(const Table& t, const std::string& source, Trace& out) {
  RETURN_IF_ERROR(RequireColumns(
      t, source, {"name", "num_gpu", "gpu_milli", "creation_time", "deletion_time"}, out.format));
  for (const Row& r : t.rows) {
    Cells c(t, r, source);
    ASSIGN_OR_RETURN(int gpus, c.Int("num_gpu", 0, kMaxGpus));
    if (gpus == 0) {
      ++out.skipped;
      continue;
    }
    TraceJob j;
    j.line = r.line;
    j.name = c.Text("name");
    ASSIGN_OR_RETURN(int milli, c.Int("gpu_milli", 0, 1000));
    if (gpus > 1 && milli != 1000) {
      return c.Error("gpu_milli", "a fraction of a GPU is only possible for 1-GPU pods, got " +
                                      std::to_string(milli) + " with num_gpu " +
                                      std::to_string(gpus));
    }
    if (milli == 0) milli = 1000;  // a GPU pod with no fraction given asks for whole GPUs
    if (milli < 1000) ++out.fractional;
    j.gpus = gpus;
    j.gpu_milli = milli;
    j.one_node = true;  // a pod is bound to one node
    ASSIGN_OR_RETURN(j.submit_us, c.Seconds("creation_time"));
    ASSIGN_OR_RETURN(int64_t deleted, c.Seconds("deletion_time"));
    int64_t started = j.submit_us;
    if (c.Has("scheduled_time") && !c.Text("scheduled_time").empty()) {
      ASSIGN_OR_RETURN(started, c.Seconds("scheduled_time"));
    }
    if (deleted < started) {
      return c.Error("deletion_time", "before the pod started (" + c.Text("deletion_time") + " < " +
                                          std::to_string(started / kUsPerS) + ")");
    }
    j.duration_us = std::max<int64_t>(deleted - started, kUsPerS);
    j.user = c.Text("qos");
    // gpu_spec lists the GPU types allowed ('|'-separated). One type is a required model; a
    // choice among several cannot be a single model constraint, so it is left open.
    const std::string spec = c.Text("gpu_spec");
    if (!spec.empty() && spec.find('|') == std::string::npos) j.gpu_model = spec;
    out.jobs.push_back(std::move(j));
  }
  return OkStatus();
}

Status ReadTiresias(const Table& t, const std::string& source, Trace& out) {
  RETURN_IF_ERROR(
      RequireColumns(t, source, {"job_id", "num_gpu", "submit_time", "duration"}, out.format));
  for (const Row& r : t.rows) {
    Cells c(t, r, source);
    TraceJob j;
    j.line = r.line;
    j.name = "job-" + c.Text("job_id");
    if (c.Has("model_name") && !c.Text("model_name").empty()) {
      j.model = c.Text("model_name");
      j.name += "-" + j.model;
    }
    ASSIGN_OR_RETURN(j.gpus, c.Int("num_gpu", 1, kMaxGpus));
    ASSIGN_OR_RETURN(j.submit_us, c.Seconds("submit_time"));
    ASSIGN_OR_RETURN(j.duration_us, c.Seconds("duration"));
    out.jobs.push_back(std::move(j));
  }
  return OkStatus();
}

Status ReadGenericCsv(const Table& t, const std::string& source, Trace& out) {
  static const char* const kKnown[] = {"submit_s", "duration_s",   "gpus",      "name",
                                       "user",     "tp",           "pp",        "dp",
                                       "model",    "model_params", "gpu_model", "priority"};
  for (const auto& column : t.columns) {
    const std::string& name = column.first;
    if (std::find_if(std::begin(kKnown), std::end(kKnown),
                     [&](const char* k) { return name == k; }) == std::end(kKnown)) {
      return InvalidArgumentError(source + ":1: unknown column \"" + name +
                                  "\" (columns: submit_s, duration_s, gpus, name, user, tp, pp, "
                                  "dp, model, model_params, gpu_model, priority)");
    }
  }
  RETURN_IF_ERROR(RequireColumns(t, source, {"submit_s", "duration_s", "gpus"}, out.format));
  for (const Row& r : t.rows) {
    Cells c(t, r, source);
    TraceJob j;
    j.line = r.line;
    j.name = c.Text("name");
    ASSIGN_OR_RETURN(j.submit_us, c.Seconds("submit_s"));
    ASSIGN_OR_RETURN(j.duration_us, c.Seconds("duration_s"));
    ASSIGN_OR_RETURN(j.gpus, c.Int("gpus", 1, kMaxGpus));
    j.user = c.Text("user");
    j.gpu_model = c.Text("gpu_model");
    j.model = c.Text("model");
    for (auto [col, field] : {std::pair{"tp", &j.tp}, {"pp", &j.pp}, {"dp", &j.dp}}) {
      if (!c.Text(col).empty()) {
        ASSIGN_OR_RETURN(*field, c.Int(col, 1, kMaxGpus));
      }
    }
    if (!c.Text("priority").empty()) {
      ASSIGN_OR_RETURN(j.priority, c.Int("priority", -1000000, 1000000));
    }
    if (!c.Text("model_params").empty()) {
      ASSIGN_OR_RETURN(j.model_params, c.Number("model_params"));
      if (!(j.model_params > 0)) return c.Error("model_params", "must be > 0");
    }
    out.jobs.push_back(std::move(j));
  }
  return OkStatus();
}

}  // namespace

namespace {

constexpr EnumName<TraceFormat> kTraceFormatNames[] = {{TraceFormat::kPhilly, "philly"},
                                                       {TraceFormat::kOpenb, "openb"},
                                                       {TraceFormat::kTiresias, "tiresias"},
                                                       {TraceFormat::kCsv, "csv"}};

}  // namespace

const char* TraceFormatName(TraceFormat f) { return NameOf(kTraceFormatNames, f, "?"); }

StatusOr<TraceFormat> ParseTraceFormat(const std::string& name) {
  if (std::optional<TraceFormat> f = ValueOf(kTraceFormatNames, name)) return *f;
  return InvalidArgumentError("unknown trace format \"" + name +
                              "\" (formats: philly, openb, tiresias, csv)");
}

StatusOr<Trace> ParseTrace(const std::string& text, const std::string& source, TraceFormat format,
                           int max_jobs) {
  if (max_jobs < 0) return InvalidArgumentError("max_jobs must be >= 0");
  ASSIGN_OR_RETURN(Table t, SplitCsv(text, source));
  Trace out;
  out.source = source;
  out.format = format;
  switch (format) {
    case TraceFormat::kPhilly:
      RETURN_IF_ERROR(ReadPhilly(t, source, out));
      break;
    case TraceFormat::kOpenb:
      RETURN_IF_ERROR(ReadOpenb(t, source, out));
      break;
    case TraceFormat::kTiresias:
      RETURN_IF_ERROR(ReadTiresias(t, source, out));
      break;
    case TraceFormat::kCsv:
      RETURN_IF_ERROR(ReadGenericCsv(t, source, out));
      break;
  }
  for (TraceJob& j : out.jobs) {
    if (j.duration_us <= 0) {
      return InvalidArgumentError(source + ":" + std::to_string(j.line) + ": duration must be > 0");
    }
    if (j.name.empty()) j.name = "line-" + std::to_string(j.line);
  }
  std::stable_sort(out.jobs.begin(), out.jobs.end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit_us != b.submit_us ? a.submit_us < b.submit_us : a.line < b.line;
  });
  if (max_jobs > 0 && static_cast<int>(out.jobs.size()) > max_jobs) out.jobs.resize(max_jobs);
  if (!out.jobs.empty()) {
    const int64_t t0 = out.jobs.front().submit_us;
    for (TraceJob& j : out.jobs) j.submit_us -= t0;
  }
  return out;
}

StatusOr<Trace> ReadTraceFile(const std::string& path, TraceFormat format, int max_jobs) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, size_t{2} << 30, "a trace"));
  return ParseTrace(text, path, format, max_jobs);
}

}  // namespace toposched::sim
