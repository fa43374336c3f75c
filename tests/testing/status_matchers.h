// GoogleMock matchers for Status and StatusOr<T>, so that a test says why a call must fail, not
// only that it does:
//   EXPECT_THAT(ParseJobYaml(text, "jobs.yaml"),
//               StatusIs(StatusCode::kInvalidArgument, HasSubstr("jobs.yaml:3: layout.tp")));
//   EXPECT_THAT(store.Append(in), IsOk());
// A failed match prints the whole status (code and message).
#pragma once

#include <gmock/gmock.h>

#include <ostream>
#include <string>

#include "core/status.h"

namespace toposched {

inline void PrintTo(StatusCode code, std::ostream* os) { *os << StatusCodeName(code); }

namespace testing {

using ::testing::HasSubstr;

inline Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const StatusOr<T>& s) {
  return s.status();
}

// The call succeeded.
MATCHER(IsOk, negation ? "is not OK" : "is OK") {
  const Status s = StatusOf(arg);
  if (!s.ok()) *result_listener << "whose status is " << s.ToString();
  return s.ok();
}

// The call failed with `code` (any message).
MATCHER_P(StatusIs, code,
          std::string(negation ? "has no status " : "has status ") + StatusCodeName(code)) {
  const Status s = StatusOf(arg);
  *result_listener << "whose status is " << (s.ok() ? "OK" : s.ToString());
  return s.code() == code;
}

// The call failed with `code` and a message `message` matches (a string is an exact match;
// HasSubstr, ContainsRegex and the like say more).
MATCHER_P2(StatusIs, code, message,
           std::string(negation ? "has no status " : "has status ") + StatusCodeName(code) +
               " with a message that " +
               ::testing::DescribeMatcher<std::string>(message, negation)) {
  const Status s = StatusOf(arg);
  *result_listener << "whose status is " << (s.ok() ? "OK" : s.ToString());
  return s.code() == code && ::testing::ExplainMatchResult(message, s.message(), result_listener);
}

}  // namespace testing
}  // namespace toposched
