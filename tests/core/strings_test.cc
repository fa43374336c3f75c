#include "core/strings.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"

namespace toposched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TEST(IntList, ParsesRangesAndFormatsBack) {
  struct Case {
    const char* in;
    std::vector<int> want;
    const char* formatted;
  } cases[] = {
      {"0-47,96-143", {}, "0-47,96-143"},    {"6,14,22,30", {6, 14, 22, 30}, "6,14,22,30"},
      {" 0,2-5 ", {0, 2, 3, 4, 5}, "0,2-5"}, {"", {}, ""},
      {"3,1,2", {1, 2, 3}, "1-3"},
  };
  for (const auto& c : cases) {
    auto v = ParseIntList(c.in);
    ASSERT_TRUE(v.ok()) << c.in << ": " << v.status().ToString();
    if (!c.want.empty()) {
      EXPECT_EQ(*v, c.want) << c.in;
    }
    EXPECT_EQ(FormatIntList(*v), c.formatted) << c.in;
  }
}

TEST(IntList, RejectsBadInput) {
  struct Case {
    const char* in;
    const char* why;
  };
  for (const Case& c :
       {Case{"a", "expected an integer, got \"a\""}, Case{"1-", "expected an integer, got \"\""},
        Case{"5-3", "bad range \"5-3\" in list"}, Case{"1,,2", "empty item in list \"1,,2\""},
        Case{"-4", "bad range \"-4\" in list"},
        Case{"0-999999999999", "bad range \"0-999999999999\" in list"}}) {
    EXPECT_THAT(ParseIntList(c.in), StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.why)))
        << c.in;
  }
  auto big = ParseIntList("0-100", 10);
  ASSERT_THAT(
      big, StatusIs(StatusCode::kOutOfRange, HasSubstr("list \"0-100\" has more than 10 items")));
}

TEST(HostList, ExpandsSlurmExpressions) {
  auto v = ExpandHostList("gpu[001-003,007],login1");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(*v, (std::vector<std::string>{"gpu001", "gpu002", "gpu003", "gpu007", "login1"}));
  auto two = ExpandHostList("r[1-2]n[01-02]");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<std::string>{"r1n01", "r1n02", "r2n01", "r2n02"}));
  auto plain = ExpandHostList("dev[0-5]");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->size(), 6u);
  EXPECT_EQ(plain->back(), "dev5");
}

TEST(HostList, RejectsBrokenExpressions) {
  struct Case {
    const char* in;
    const char* why;
  };
  for (const Case& c : {Case{"gpu[001-", "unbalanced '[' in host list \"gpu[001-\""},
                        Case{"gpu]1[", "unbalanced ']' in host list \"gpu]1[\""},
                        Case{"gpu[3-1]", "bad range \"3-1\" in host list \"gpu[3-1]\""},
                        Case{"gpu[]", "empty brackets in host list \"gpu[]\""},
                        Case{"a,,b", "empty item in host list \"a,,b\""},
                        Case{"gpu[x-y]", "bad range \"x-y\" in host list \"gpu[x-y]\""}}) {
    EXPECT_THAT(ExpandHostList(c.in), StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.why)))
        << c.in;
  }
  EXPECT_THAT(ExpandHostList("n[0-99999999]", 1000),
              StatusIs(StatusCode::kOutOfRange,
                       HasSubstr("host list \"n[0-99999999]\" expands to more than 1000 hosts")));
  // A host name is at most 253 characters (RFC 1035): longer ones are refused, saying so.
  EXPECT_TRUE(ExpandHostList(std::string(253, 'a')).ok());
  auto long_name = ExpandHostList(std::string(252, 'a') + "[10-19]");
  ASSERT_THAT(long_name,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("host name of 254 characters")));
}

TEST(HostList, CompressIsTheInverseOfExpand) {
  for (const char* expr : {"gpu[001-016]", "gpu[001-004,009-012]", "node[1-32]", "a1,b", "x"}) {
    auto hosts = ExpandHostList(expr);
    ASSERT_TRUE(hosts.ok());
    std::string back = CompressHostList(*hosts);
    auto again = ExpandHostList(back);
    ASSERT_TRUE(again.ok()) << back;
    EXPECT_EQ(*again, *hosts) << expr << " -> " << back;
  }
  EXPECT_EQ(CompressHostList({"gpu001", "gpu002", "gpu003"}), "gpu[001-003]");
}

TEST(Status, CarriesCodeAndContext) {
  Status s = InvalidArgumentError("bad field").WithPrefix("cluster.yaml:4");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "cluster.yaml:4: bad field");
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: cluster.yaml:4: bad field");
  StatusOr<int> v = 3;
  EXPECT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
  StatusOr<int> e = NotFoundError("x");
  EXPECT_THAT(e, StatusIs(StatusCode::kNotFound, std::string("x")));
}

}  // namespace
}  // namespace toposched

namespace toposched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TEST(FieldPath, BuildsPathsForErrorMessages) {
  EXPECT_EQ(FieldPath("", "name"), "name");
  EXPECT_EQ(FieldPath("jobs[2]", "layout"), "jobs[2].layout");
  EXPECT_EQ(IndexPath("jobs", 2), "jobs[2]");
  EXPECT_EQ(FieldPath(IndexPath("network.levels", 0), "name"), "network.levels[0].name");
}

}  // namespace
}  // namespace toposched
