#include "core/status.h"

#include <cstdio>
#include <cstdlib>

#include "core/enum_names.h"

namespace toposched {

namespace {

constexpr EnumName<StatusCode> kStatusCodeNames[] = {
    {StatusCode::kOk, "OK"},
    {StatusCode::kInvalidArgument, "INVALID_ARGUMENT"},
    {StatusCode::kNotFound, "NOT_FOUND"},
    {StatusCode::kAlreadyExists, "ALREADY_EXISTS"},
    {StatusCode::kFailedPrecondition, "FAILED_PRECONDITION"},
    {StatusCode::kOutOfRange, "OUT_OF_RANGE"},
    {StatusCode::kUnimplemented, "UNIMPLEMENTED"},
    {StatusCode::kInternal, "INTERNAL"},
    {StatusCode::kUnavailable, "UNAVAILABLE"},
    {StatusCode::kDataLoss, "DATA_LOSS"}};

}  // namespace

const char* StatusCodeName(StatusCode code) { return NameOf(kStatusCodeNames, code, "UNKNOWN"); }

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithPrefix(const std::string& prefix) const {
  if (ok()) return *this;
  return Status(code_, prefix + ": " + message_);
}

void DieBadStatusOrAccess(const Status& s) {
  std::fprintf(stderr, "StatusOr::value() on error: %s\n", s.ToString().c_str());
  std::abort();
}

}  // namespace toposched
