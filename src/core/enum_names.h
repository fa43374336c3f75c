// An enum's names as a table instead of a hand-written switch and parser pair: each entry a
// value and a name; a value's first entry is the name it prints as, later entries are aliases
// a parser accepts.
//   constexpr EnumName<Health> kHealthNames[] = {{Health::kHealthy, "healthy"}, ...};
//   NameOf(kHealthNames, h, "healthy");  ValueOf(kHealthNames, "degraded");
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace toposched {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

// The name `v` prints as: its first entry; `fallback` for a value the table lacks.
template <typename E, size_t N>
constexpr const char* NameOf(const EnumName<E> (&table)[N], E v, const char* fallback) {
  for (const EnumName<E>& e : table) {
    if (e.value == v) return e.name;
  }
  return fallback;
}

// The value of the entry named exactly `s`; nullopt when no entry has that name.
template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const EnumName<E> (&table)[N], std::string_view s) {
  for (const EnumName<E>& e : table) {
    if (s == e.name) return e.value;
  }
  return std::nullopt;
}

}  // namespace toposched
