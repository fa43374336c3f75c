#include "core/ids.h"

#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <type_traits>
#include <unordered_set>

namespace toposched {
namespace {

using OtherId = TypedId<struct OtherIdTag, int>;

// An id is not made from, nor turned into, a bare integer or another kind of id implicitly.
static_assert(!std::is_convertible_v<int64_t, JobId>);
static_assert(!std::is_convertible_v<JobId, int64_t>);
static_assert(!std::is_convertible_v<OtherId, JobId>);
static_assert(std::is_constructible_v<JobId, int64_t>);

TEST(TypedId, HoldsItsValue) {
  EXPECT_EQ(JobId{42}.value, 42);
  EXPECT_EQ(JobId{}.value, 0);
  EXPECT_EQ(OtherId{7}.value, 7);
}

TEST(TypedId, ComparesByValue) {
  EXPECT_EQ(JobId{3}, JobId{3});
  EXPECT_NE(JobId{3}, JobId{4});
  EXPECT_LT(JobId{3}, JobId{4});
  EXPECT_TRUE((JobId{-1} <=> JobId{-2}) > 0);
}

TEST(TypedId, OrdersMapKeysByValue) {
  std::map<JobId, int> m{{JobId{9}, 0}, {JobId{2}, 1}};
  EXPECT_EQ(m.begin()->first, JobId{2});
}

TEST(TypedId, HashesAsItsValue) {
  EXPECT_EQ(std::hash<JobId>{}(JobId{5}), std::hash<int64_t>{}(5));
  std::unordered_set<JobId> s{JobId{1}, JobId{1}, JobId{2}};
  EXPECT_EQ(s.size(), 2u);
}

TEST(TypedId, PrintsAsItsValue) {
  std::ostringstream os;
  os << JobId{17} << ' ' << OtherId{-3};
  EXPECT_EQ(os.str(), "17 -3");
}

}  // namespace
}  // namespace toposched
