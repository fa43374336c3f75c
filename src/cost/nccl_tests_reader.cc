#include "cost/nccl_tests_reader.h"

#include <cctype>
#include <cmath>

#include "core/strings.h"

namespace toposched::cost {

namespace {

bool AllDigits(std::string_view s, bool allow_minus = false) {
  if (s.empty()) return false;
  size_t i = 0;
  if (allow_minus && s[0] == '-') i = 1;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

bool AllAlpha(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!std::isalpha(static_cast<unsigned char>(c)) &&
        !std::isdigit(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return std::isalpha(static_cast<unsigned char>(s[0]));
}

// Removes "[1,0]<stdout>:" and "0: " style prefixes.
std::string_view StripPrefix(std::string_view s) {
  s = Trim(s);
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find("]<std");
    if (close != std::string_view::npos) {
      size_t colon = s.find(':', close);
      if (colon != std::string_view::npos) return Trim(s.substr(colon + 1));
    }
  }
  size_t i = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i > 0 && i < s.size() && s[i] == ':') return Trim(s.substr(i + 1));
  return s;
}

std::optional<double> Number(std::string_view s) {
  auto v = ParseDouble(s);
  if (!v.ok()) return std::nullopt;
  return *v;
}

}  // namespace

StatusOr<NcclTestsTable> ParseNcclTestsOutput(std::string_view text) {
  NcclTestsTable table;
  int line_no = 0;
  int max_rank = -1;
  for (const std::string& raw : Split(text, '\n')) {
    ++line_no;
    if (raw.find("NCCL INFO") != std::string::npos || raw.find("NCCL WARN") != std::string::npos) {
      continue;
    }
    std::string_view s = StripPrefix(raw);
    bool comment = false;
    if (!s.empty() && s[0] == '#') {
      comment = true;
      s = Trim(s.substr(1));
    }
    if (s.empty()) continue;
    if (size_t p = s.find("Collective test starting:"); p != std::string_view::npos) {
      std::string name(Trim(s.substr(p + 25)));
      if (name.size() > 5 && name.compare(name.size() - 5, 5, "_perf") == 0) {
        name.resize(name.size() - 5);
      }
      table.collective = name;
      continue;
    }
    if (StartsWith(s, "Avg bus bandwidth")) {
      size_t colon = s.find(':');
      if (colon != std::string_view::npos) {
        if (auto v = Number(Trim(s.substr(colon + 1)))) table.avg_busbw_gbps = *v;
      }
      continue;
    }
    std::vector<std::string> tok = SplitWhitespace(s);
    if (tok.size() >= 2 && tok[0] == "Rank" && AllDigits(tok[1])) {
      max_rank = std::max(max_rank, std::stoi(tok[1]));
      continue;
    }
    if (table.collective.empty()) {
      for (const std::string& t : tok) {
        size_t p = t.find("_perf");
        if (p != std::string::npos && p + 5 == t.size()) {
          size_t slash = t.rfind('/');
          std::string base = t.substr(slash == std::string::npos ? 0 : slash + 1);
          table.collective = base.substr(0, base.size() - 5);
        }
      }
    }
    if (comment) continue;
    const size_t n = tok.size();
    if ((n != 11 && n != 12 && n != 13) || !AllDigits(tok[0]) || !AllDigits(tok[1]) ||
        !AllAlpha(tok[2])) {
      continue;
    }
    NcclTestsRow row;
    row.line = line_no;
    row.bytes = std::stoll(tok[0]);
    row.count = std::stoll(tok[1]);
    row.type = tok[2];
    size_t i = 3;
    if (n >= 12) {
      if (!AllAlpha(tok[3])) continue;
      row.redop = tok[3];
      i = 4;
    }
    if (n == 13) {
      if (!AllDigits(tok[4], true)) continue;
      row.root = std::stoi(tok[4]);
      i = 5;
    }
    auto t1 = Number(tok[i]), a1 = Number(tok[i + 1]), b1 = Number(tok[i + 2]);
    auto t2 = Number(tok[i + 4]), a2 = Number(tok[i + 5]), b2 = Number(tok[i + 6]);
    if (!t1 || !a1 || !b1 || !t2 || !a2 || !b2) continue;
    row.oop_time_us = *t1;
    row.oop_algbw_gbps = *a1;
    row.oop_busbw_gbps = *b1;
    row.oop_wrong = tok[i + 3];
    row.ip_time_us = *t2;
    row.ip_algbw_gbps = *a2;
    row.ip_busbw_gbps = *b2;
    row.ip_wrong = tok[i + 7];
    table.rows.push_back(row);
  }
  table.ranks = max_rank + 1;
  if (table.rows.empty()) return InvalidArgumentError("nccl-tests output: no result rows found");
  return table;
}

StatusOr<int64_t> ParseSummarySize(std::string_view label) {
  std::string s(Trim(label));
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return InvalidArgumentError("size label \"" + s + "\": no number");
  auto v = ParseDouble(s.substr(0, i));
  if (!v.ok()) return v.status();
  std::string unit = ToLower(Trim(s.substr(i)));
  double mult = 1;
  static const char* kUnits = "kmgt";
  if (!unit.empty() && unit != "b") {
    size_t u = std::string(kUnits).find(unit[0]);
    std::string rest = unit.substr(1);
    if (u == std::string::npos || !(rest.empty() || rest == "b" || rest == "ib")) {
      return InvalidArgumentError("size label \"" + s + "\": unknown unit");
    }
    mult = std::pow(rest == "ib" ? 1024.0 : 1000.0, static_cast<double>(u + 1));
  }
  double bytes = *v * mult;
  if (bytes < 1) return static_cast<int64_t>(0);
  double p = std::round(std::log2(bytes));
  return static_cast<int64_t>(std::llround(std::pow(2.0, p)));
}

StatusOr<std::vector<BusBwSeries>> ParseBusBwSummary(std::string_view text) {
  std::vector<BusBwSeries> series;
  bool in_table = false;
  for (const std::string& raw : Split(text, '\n')) {
    std::string_view s = Trim(raw);
    if (s.empty() || s[0] != '|') {
      in_table = false;
      continue;
    }
    std::vector<std::string> cells;
    for (const std::string& c : Split(s.substr(1), '|')) cells.emplace_back(Trim(c));
    while (!cells.empty() && cells.back().empty()) cells.pop_back();
    if (cells.size() < 2) continue;
    if (!in_table) {  // header row
      in_table = true;
      series.clear();
      for (size_t c = 1; c < cells.size(); ++c) series.push_back(BusBwSeries{cells[c], {}});
      continue;
    }
    if (cells[0].find("---") != std::string::npos || StartsWith(cells[0], ":-") ||
        StartsWith(cells[0], "-")) {
      continue;
    }
    auto size = ParseSummarySize(cells[0]);
    if (!size.ok()) continue;
    for (size_t c = 1; c < cells.size() && c - 1 < series.size(); ++c) {
      std::string v = cells[c];
      for (const char* suffix : {"GBps", "GB/s", "gbps"}) {
        size_t p = v.find(suffix);
        if (p != std::string::npos && p + std::string(suffix).size() == v.size()) v.resize(p);
      }
      if (auto x = Number(Trim(v))) series[c - 1].points.push_back({*size, *x});
    }
  }
  std::vector<BusBwSeries> out;
  for (BusBwSeries& s : series) {
    if (!s.points.empty()) out.push_back(std::move(s));
  }
  if (out.empty()) return InvalidArgumentError("busbw summary: no markdown table with sizes found");
  return out;
}

int InferRanksFromBusFactor(double busbw, double algbw, bool allreduce) {
  if (!(algbw > 0) || !(busbw > 0)) return 0;
  double r = busbw / algbw;
  if (allreduce) r /= 2;  // (n-1)/n
  if (r >= 1 || r <= 0) return 0;
  double n = 1 / (1 - r);
  if (n < 1.5) return 0;
  return static_cast<int>(std::lround(n));
}

}  // namespace toposched::cost
