// Typed ids: an integer that names one kind of thing (a job, a node, a GPU position) wrapped so
// that one kind cannot be passed where another is expected. Construction from the integer is
// explicit (`JobId{7}`, `JobId(row.id)`), the integer is `.value`; ids compare, hash and print
// as their integer. Where an id comes in as a plain integer (a JSON field, a store row, a flag)
// the caller wraps it there; where it goes out, it writes `.value`.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace toposched {

// One kind of id, told apart by `Tag` (an incomplete type is enough).
template <typename Tag, typename Rep = int64_t>
struct TypedId {
  using rep_type = Rep;
  Rep value = 0;

  constexpr TypedId() = default;
  constexpr explicit TypedId(Rep v) : value(v) {}
  auto operator<=>(const TypedId&) const = default;
  bool operator==(const TypedId&) const = default;

  friend std::ostream& operator<<(std::ostream& os, const TypedId& id) { return os << id.value; }
};

// A job as the scheduler numbers them: sequential from 1 ("job-<n>" in event logs).
using JobId = TypedId<struct JobIdTag>;

}  // namespace toposched

template <typename Tag, typename Rep>
struct std::hash<toposched::TypedId<Tag, Rep>> {
  size_t operator()(const toposched::TypedId<Tag, Rep>& id) const noexcept {
    return std::hash<Rep>{}(id.value);
  }
};
