// Status and StatusOr: the error currency for everything that can fail from outside
// (bad input, I/O). Codes follow Abseil's names. No exceptions cross a module edge;
// adapters around throwing libraries convert to Status here.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace toposched {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message" (or "OK").
  std::string ToString() const;
  // Returns a copy with `prefix + ": "` put before the message (for adding file/line context).
  Status WithPrefix(const std::string& prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) { return Status(StatusCode::kNotFound, std::move(m)); }
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status InternalError(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }
inline Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status OutOfRangeError(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}

// Holds either a T or a non-OK Status. Accessing value() of an error is a programming bug
// (aborts).
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& v) : v_(v) {}          // NOLINT: implicit by design
  StatusOr(T&& v) : v_(std::move(v)) {}    // NOLINT
  StatusOr(Status s) : v_(std::move(s)) {  // NOLINT
    if (std::get<Status>(v_).ok())
      v_ = Status(StatusCode::kInternal, "OK status given to StatusOr");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? OkStatus() : std::get<Status>(v_); }
  const T& value() const& { return Check(), std::get<T>(v_); }
  T& value() & { return Check(), std::get<T>(v_); }
  T&& value() && { return Check(), std::move(std::get<T>(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void Check() const;
  std::variant<T, Status> v_;
};

[[noreturn]] void DieBadStatusOrAccess(const Status& s);

template <typename T>
void StatusOr<T>::Check() const {
  if (!ok()) DieBadStatusOrAccess(std::get<Status>(v_));
}

}  // namespace toposched

#define TS_CONCAT_INNER(a, b) a##b
#define TS_CONCAT(a, b) TS_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    ::toposched::Status _ts_status = (expr); \
    if (!_ts_status.ok()) return _ts_status; \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) ASSIGN_OR_RETURN_IMPL(TS_CONCAT(_ts_or_, __LINE__), lhs, expr)
