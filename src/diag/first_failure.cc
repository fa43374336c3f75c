// Several logs of one job: which log failed first, and which only echo its failure. Each log is
// read alone; a log whose own top cause is an echo (a peer's closed or reset connection, a
// collective's watchdog timeout) is a consequence; of the others with a fault, the one whose
// first cited line carries the earliest time failed first (log order when times cannot be
// compared).
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/enum_names.h"
#include "diag/diagnose.h"
#include "diag/rules_internal.h"

namespace toposched::diag {

namespace {

bool Digits(std::string_view s, size_t at, size_t n) {
  if (at + n > s.size()) return false;
  for (size_t i = at; i < at + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

// Digits of a fraction after '.' or ',' at `at`, padded to 6 ("" when none).
std::string Fraction(std::string_view s, size_t at) {
  std::string f;
  if (at < s.size() && (s[at] == '.' || s[at] == ',')) {
    for (size_t i = at + 1; i < s.size() && i < at + 10 && s[i] >= '0' && s[i] <= '9'; ++i) {
      f += s[i];
    }
  }
  f.resize(6, '0');
  return f;
}

// "YYYY-MM-DD[T ]hh:mm:ss[.fff]" anywhere in the first 64 characters.
std::optional<LineTime> IsoTime(std::string_view s) {
  for (size_t i = 0; i + 19 <= s.size() && i < 64; ++i) {
    if (!Digits(s, i, 4) || s[i + 4] != '-' || !Digits(s, i + 5, 2) || s[i + 7] != '-' ||
        !Digits(s, i + 8, 2) || (s[i + 10] != 'T' && s[i + 10] != ' ') || !Digits(s, i + 11, 2) ||
        s[i + 13] != ':' || !Digits(s, i + 14, 2) || s[i + 16] != ':' || !Digits(s, i + 17, 2)) {
      continue;
    }
    std::string key;
    for (size_t k : {i, i + 5, i + 8, i + 11, i + 14, i + 17}) {
      key += s.substr(k, k == i ? 4 : 2);
    }
    return LineTime{1, key + "." + Fraction(s, i + 19)};
  }
  return std::nullopt;
}

// glog's "Lmmdd hh:mm:ss.uuuuuu" at the line's start (after a "[rankN]:" prefix).
std::optional<LineTime> GlogTime(std::string_view s) {
  if (s.starts_with("[rank")) {
    const size_t close = s.find("]:");
    if (close != std::string_view::npos && close < 12) s = s.substr(close + 2);
  }
  if (s.size() < 14 || (s[0] != 'I' && s[0] != 'W' && s[0] != 'E' && s[0] != 'F')) {
    return std::nullopt;
  }
  if (!Digits(s, 1, 4) || s[5] != ' ' || !Digits(s, 6, 2) || s[8] != ':' || !Digits(s, 9, 2) ||
      s[11] != ':' || !Digits(s, 12, 2)) {
    return std::nullopt;
  }
  std::string key(s.substr(1, 4));
  key += s.substr(6, 2);
  key += s.substr(9, 2);
  key += s.substr(12, 2);
  return LineTime{2, key + "." + Fraction(s, 14)};
}

constexpr EnumName<LogRole> kLogRoleNames[] = {{LogRole::kFirstFailure, "first_failure"},
                                               {LogRole::kFailedToo, "failed_too"},
                                               {LogRole::kConsequence, "consequence"},
                                               {LogRole::kHealthy, "healthy"},
                                               {LogRole::kNoCause, "no_cause"}};

bool IsEcho(const Cause& c) {
  return c.category == Category::kPeerFailure || c.category == Category::kNcclTimeout ||
         (c.category == Category::kNetworkError && !internal::CitesFabric(c));
}

}  // namespace

const char* LogRoleName(LogRole r) { return NameOf(kLogRoleNames, r, "?"); }

std::optional<LineTime> TimeOfLine(std::string_view line) {
  if (auto t = GlogTime(line)) return t;
  return IsoTime(line);
}

std::string EncodeLineTime(const LineTime& t) { return std::to_string(t.family) + ":" + t.key; }

std::optional<LineTime> DecodeLineTime(std::string_view field) {
  const size_t colon = field.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 >= field.size()) {
    return std::nullopt;
  }
  const std::string_view family = field.substr(0, colon);
  if (family != "1" && family != "2") return std::nullopt;
  return LineTime{family[0] - '0', std::string(field.substr(colon + 1))};
}

std::vector<TimelineEntry> MergeTimeline(const std::vector<LogPart>& parts) {
  // Each log's cited lines, in line order.
  std::vector<std::vector<TimelineEntry>> queues(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].top) continue;
    for (const Evidence& e : parts[i].top->evidence) {
      TimelineEntry t{e, DecodeLineTime(e.Field("line_time")), parts[i].role, false};
      t.first_seen = parts[i].first_seen && parts[i].first_seen->line == e.line;
      queues[i].push_back(std::move(t));
    }
    std::stable_sort(
        queues[i].begin(), queues[i].end(),
        [](const TimelineEntry& a, const TimelineEntry& b) { return a.line.line < b.line.line; });
  }
  // Repeatedly take the head that comes first: a head with no time as soon as it is a head (its
  // log's order is all that places it), else the earliest time of one format (the earlier log
  // on a tie or between formats).
  std::vector<size_t> next(parts.size(), 0);
  std::vector<TimelineEntry> out;
  for (;;) {
    std::optional<size_t> best;
    for (size_t i = 0; i < queues.size(); ++i) {
      if (next[i] >= queues[i].size()) continue;
      const TimelineEntry& head = queues[i][next[i]];
      if (!head.time) {
        best = i;
        break;
      }
      const TimelineEntry* b = best ? &queues[*best][next[*best]] : nullptr;
      if (b == nullptr || (b->time->family == head.time->family && head.time->key < b->time->key)) {
        best = i;
      }
    }
    if (!best) break;
    out.push_back(queues[*best][next[*best]++]);
  }
  return out;
}

void AssignLogRoles(std::vector<LogPart>& parts) {
  std::optional<size_t> first;
  std::optional<LineTime> first_time;
  for (size_t i = 0; i < parts.size(); ++i) {
    LogPart& p = parts[i];
    if (!p.top || p.top->category == Category::kUnknown) {
      p.role = LogRole::kNoCause;
      continue;
    }
    if (p.top->category == Category::kHealthy) {
      p.role = LogRole::kHealthy;
      continue;
    }
    if (IsEcho(*p.top)) {
      p.role = LogRole::kConsequence;
      continue;
    }
    p.role = LogRole::kFailedToo;
    const std::optional<LineTime>& t = p.time;
    const bool earlier = first.has_value() && t && first_time && t->family == first_time->family &&
                         t->key < first_time->key;
    if (!first.has_value() || earlier) {
      first = i;
      first_time = t;
    }
  }
  if (first) parts[*first].role = LogRole::kFirstFailure;
}

}  // namespace toposched::diag
