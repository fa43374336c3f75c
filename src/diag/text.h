// Diagnosis: the few string_view helpers the log readers share (substring tests, whole-word
// tests, numbers after a marker). No regex: readers run on every line of logs of any size.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace toposched::diag {

inline bool Has(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

// The text after the first `marker`, or nullopt.
inline std::optional<std::string_view> After(std::string_view text, std::string_view marker) {
  const size_t p = text.find(marker);
  if (p == std::string_view::npos) return std::nullopt;
  return text.substr(p + marker.size());
}

inline bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Whether `word` occurs in `text` with no letter, digit or '_' right before or after it.
inline bool HasWord(std::string_view text, std::string_view word) {
  for (size_t p = text.find(word); p != std::string_view::npos; p = text.find(word, p + 1)) {
    const bool left = p == 0 || !IsWordChar(text[p - 1]);
    const size_t end = p + word.size();
    const bool right = end >= text.size() || !IsWordChar(text[end]);
    if (left && right) return true;
  }
  return false;
}

// Whether `s` is a nonempty run of decimal digits.
inline bool AllDigits(std::string_view s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string_view::npos;
}

inline std::string_view SkipSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

// The (optionally signed) decimal integer at the start of `s` after spaces, or nullopt.
inline std::optional<int64_t> LeadingInt(std::string_view s) {
  s = SkipSpaces(s);
  bool neg = false;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) {
    neg = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty() || s.front() < '0' || s.front() > '9') return std::nullopt;
  int64_t v = 0;
  for (size_t i = 0; i < s.size() && i < 18 && s[i] >= '0' && s[i] <= '9'; ++i) {
    v = v * 10 + (s[i] - '0');
  }
  return neg ? -v : v;
}

// The integer right after `marker` (spaces skipped), or nullopt.
inline std::optional<int64_t> IntAfter(std::string_view text, std::string_view marker) {
  auto rest = After(text, marker);
  if (!rest) return std::nullopt;
  return LeadingInt(*rest);
}

// The run of characters after `marker` up to the first of `stops` (or the end).
inline std::string_view TokenAfter(std::string_view text, std::string_view marker,
                                   std::string_view stops = " \t,;)") {
  auto rest = After(text, marker);
  if (!rest) return {};
  return rest->substr(0, rest->find_first_of(stops));
}

}  // namespace toposched::diag
