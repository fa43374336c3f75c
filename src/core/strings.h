// Small text helpers shared by every reader: trimming, splitting, integer lists ("0-47,96-143")
// and Slurm-style host lists ("gpu[001-128,200]"). Pure functions, no I/O, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace toposched {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep, bool skip_empty = false);
// Splits on runs of spaces and tabs.
std::vector<std::string> SplitWhitespace(std::string_view s);
bool StartsWith(std::string_view s, std::string_view prefix);
// `s` in double quotes, as error messages name a value: Quote("gpu017") is "\"gpu017\"". No
// escaping: for names and tokens read from a file, not for arbitrary text.
std::string Quote(std::string_view s);
std::string ToLower(std::string_view s);

// Parses a decimal integer, the whole string. Errors name the text.
StatusOr<long long> ParseInt(std::string_view s);
StatusOr<double> ParseDouble(std::string_view s);

// "0,2-5,7" -> {0,2,3,4,5,7}. Sorted, duplicates removed. Empty string -> empty list.
// At most `max_items` values (guards against "0-999999999"); errors name the bad token.
StatusOr<std::vector<int>> ParseIntList(std::string_view s, int max_items = 1 << 20);
// Inverse of ParseIntList: {0,2,3,4,5,7} -> "0,2-5,7".
std::string FormatIntList(const std::vector<int>& values);

// Field paths in error messages: FieldPath("jobs[2]", "layout") -> "jobs[2].layout" (no dot when
// the path is empty); IndexPath("jobs", 2) -> "jobs[2]".
std::string FieldPath(const std::string& path, const std::string& key);
std::string IndexPath(const std::string& path, size_t i);

// Slurm host-list expression: "gpu[001-003,007],login1" -> gpu001 gpu002 gpu003 gpu007 login1.
// Zero padding is kept from the lower bound. Several bracket groups are expanded as a product.
StatusOr<std::vector<std::string>> ExpandHostList(std::string_view expr, int max_hosts = 1 << 20);
// Compresses a list of host names into a host-list expression (order kept where possible).
std::string CompressHostList(const std::vector<std::string>& hosts);

}  // namespace toposched
