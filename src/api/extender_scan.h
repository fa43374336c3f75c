// A validating JSON scanner that builds no values: it checks a body's syntax (RFC 8259, UTF-8)
// and hands out the raw text of members and elements, so the extender can walk 5,000 candidate
// nodes without a DOM and echo a v1.Node back byte for byte. Internal to the api module; knows
// nothing of Kubernetes or placement.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace toposched::api::scan {

// Whether `text` is exactly one JSON value (surrounding whitespace allowed). On failure,
// `error` = "at byte N: what" (N 0-based). Nesting deeper than 512 is an error. O(size).
bool Validate(std::string_view text, std::string* error);

// The kind of a (valid) raw value, by its first character: "object", "array", "string",
// "number", "boolean", "null".
const char* KindOf(std::string_view value);

// Calls fn(key, value) for each member of a valid raw object, in order; `key` decoded, `value`
// raw (whitespace trimmed). Stops at and returns the first non-OK status of fn.
Status ForEachMember(std::string_view object,
                     const std::function<Status(std::string_view key, std::string_view value)>& fn);
// Same for the elements of a valid raw array.
Status ForEachElement(std::string_view array, const std::function<Status(std::string_view)>& fn);

// The decoded text of a valid raw string: a view into `raw` when it has no escapes, else
// decoded into `storage` (which the view then points into).
std::string_view StringValue(std::string_view raw, std::string& storage);

}  // namespace toposched::api::scan
