#include "core/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <map>

namespace toposched {

std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    std::string_view part = s.substr(start, pos == std::string_view::npos ? s.npos : pos - start);
    if (!skip_empty || !part.empty()) out.emplace_back(part);
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> SplitWhitespace(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t b = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > b) out.emplace_back(s.substr(b, i - b));
  }
  return out;
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.substr(0, prefix.size()) == prefix;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string FieldPath(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string IndexPath(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

StatusOr<long long> ParseInt(std::string_view s) {
  std::string_view t = Trim(s);
  long long v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size()) {
    return InvalidArgumentError("expected an integer, got \"" + std::string(s.substr(0, 64)) +
                                "\"");
  }
  return v;
}

StatusOr<double> ParseDouble(std::string_view s) {
  std::string t(Trim(s));
  if (t.empty()) return InvalidArgumentError("expected a number, got an empty string");
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size()) {
    return InvalidArgumentError("expected a number, got \"" + t.substr(0, 64) + "\"");
  }
  return v;
}

StatusOr<std::vector<int>> ParseIntList(std::string_view s, int max_items) {
  std::vector<int> out;
  std::string_view t = Trim(s);
  if (t.empty()) return out;
  for (const std::string& tok : Split(t, ',')) {
    std::string_view part = Trim(tok);
    if (part.empty()) return InvalidArgumentError("empty item in list \"" + std::string(t) + "\"");
    size_t dash = part.find('-', 1);
    long long lo, hi;
    if (dash == std::string_view::npos) {
      ASSIGN_OR_RETURN(lo, ParseInt(part));
      hi = lo;
    } else {
      ASSIGN_OR_RETURN(lo, ParseInt(part.substr(0, dash)));
      ASSIGN_OR_RETURN(hi, ParseInt(part.substr(dash + 1)));
    }
    if (lo < 0 || hi < lo || hi > (1LL << 30)) {
      return InvalidArgumentError("bad range \"" + std::string(part) + "\" in list");
    }
    if (static_cast<long long>(out.size()) + (hi - lo + 1) > max_items) {
      return OutOfRangeError("list \"" + std::string(t.substr(0, 64)) + "\" has more than " +
                             std::to_string(max_items) + " items");
    }
    for (long long v = lo; v <= hi; ++v) out.push_back(static_cast<int>(v));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string FormatIntList(const std::vector<int>& values_in) {
  std::vector<int> v = values_in;
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(v[i]);
    if (j > i) out += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

namespace {

// Splits at top-level commas (commas inside brackets belong to a range list).
StatusOr<std::vector<std::string>> SplitTopLevel(std::string_view s) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') {
      if (--depth < 0)
        return InvalidArgumentError("unbalanced ']' in host list \"" + std::string(s) + "\"");
    }
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0)
    return InvalidArgumentError("unbalanced '[' in host list \"" + std::string(s) + "\"");
  out.push_back(cur);
  return out;
}

Status ExpandOne(const std::string& pattern, std::vector<std::string>& out, int max_hosts) {
  size_t lb = pattern.find('[');
  if (lb == std::string::npos) {
    if (pattern.empty()) return InvalidArgumentError("empty host name in host list");
    // A host name is at most 253 characters (RFC 1035, 2.3.4); this also bounds the memory a
    // short list of bracket groups can expand into (fuzzing: 2 GB under ASan).
    if (pattern.size() > 253) {
      return InvalidArgumentError("host name of " + std::to_string(pattern.size()) +
                                  " characters in host list (at most 253): \"" +
                                  pattern.substr(0, 64) + "...\"");
    }
    out.push_back(pattern);
    return OkStatus();
  }
  size_t rb = pattern.find(']', lb);
  std::string prefix = pattern.substr(0, lb);
  std::string body = pattern.substr(lb + 1, rb - lb - 1);
  std::string rest = pattern.substr(rb + 1);
  if (body.empty()) return InvalidArgumentError("empty brackets in host list \"" + pattern + "\"");
  for (const std::string& range : Split(body, ',')) {
    std::string r(Trim(range));
    size_t dash = r.find('-');
    std::string lo_s = dash == std::string::npos ? r : r.substr(0, dash);
    std::string hi_s = dash == std::string::npos ? r : r.substr(dash + 1);
    auto lo = ParseInt(lo_s);
    auto hi = ParseInt(hi_s);
    if (!lo.ok() || !hi.ok() || *lo < 0 || *hi < *lo) {
      return InvalidArgumentError("bad range \"" + r + "\" in host list \"" + pattern + "\"");
    }
    size_t width = lo_s.size();
    for (long long v = *lo; v <= *hi; ++v) {
      if (static_cast<int>(out.size()) >= max_hosts) {
        return OutOfRangeError("host list \"" + pattern + "\" expands to more than " +
                               std::to_string(max_hosts) + " hosts");
      }
      std::string num = std::to_string(v);
      if (num.size() < width) num = std::string(width - num.size(), '0') + num;
      RETURN_IF_ERROR(ExpandOne(prefix + num + rest, out, max_hosts));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<std::string>> ExpandHostList(std::string_view expr, int max_hosts) {
  std::vector<std::string> out;
  std::string_view t = Trim(expr);
  if (t.empty()) return out;
  ASSIGN_OR_RETURN(auto parts, SplitTopLevel(t));
  for (const std::string& p : parts) {
    std::string part(Trim(p));
    if (part.empty())
      return InvalidArgumentError("empty item in host list \"" + std::string(t) + "\"");
    RETURN_IF_ERROR(ExpandOne(part, out, max_hosts));
  }
  return out;
}

std::string CompressHostList(const std::vector<std::string>& hosts) {
  // Group consecutive hosts that share a prefix and a numeric suffix of the same width.
  std::string out;
  size_t i = 0;
  auto split = [](const std::string& h, std::string& prefix, std::string& digits) {
    size_t e = h.size();
    while (e > 0 && std::isdigit(static_cast<unsigned char>(h[e - 1]))) --e;
    prefix = h.substr(0, e);
    digits = h.substr(e);
  };
  while (i < hosts.size()) {
    std::string prefix, digits;
    split(hosts[i], prefix, digits);
    if (digits.empty()) {
      if (!out.empty()) out += ',';
      out += hosts[i++];
      continue;
    }
    std::vector<std::pair<long long, long long>> ranges;
    size_t width = digits.size();
    size_t j = i;
    while (j < hosts.size()) {
      std::string p2, d2;
      split(hosts[j], p2, d2);
      if (p2 != prefix || d2.empty() || d2.size() != width || d2.size() > 18) break;
      long long v = std::stoll(d2);
      if (!ranges.empty() && v == ranges.back().second + 1) {
        ranges.back().second = v;
      } else if (!ranges.empty() && v <= ranges.back().second) {
        break;  // not increasing: start a new group
      } else {
        ranges.push_back({v, v});
      }
      ++j;
    }
    auto pad = [width](long long v) {
      std::string s = std::to_string(v);
      return s.size() < width ? std::string(width - s.size(), '0') + s : s;
    };
    if (!out.empty()) out += ',';
    if (j == i + 1) {
      out += hosts[i];
    } else {
      out += prefix + "[";
      for (size_t k = 0; k < ranges.size(); ++k) {
        if (k) out += ',';
        out += pad(ranges[k].first);
        if (ranges[k].second != ranges[k].first) out += "-" + pad(ranges[k].second);
      }
      out += "]";
    }
    i = j;
  }
  return out;
}

}  // namespace toposched
