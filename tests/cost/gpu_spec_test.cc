#include "cost/gpu_spec.h"

#include <gtest/gtest.h>

#include "cost/test_cluster.h"
#include "testing/status_matchers.h"
#include "topo/synthetic.h"

namespace toposched::cost {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TEST(GpuSpecTest, ByteSizes) {
  struct B {
    const char* text;
    double bytes;
  };
  for (const B& b : std::vector<B>{{"1GiB", 1073741824.0},
                                   {"512MiB", 536870912.0},
                                   {"1GB", 1e9},
                                   {"1048576", 1048576.0},
                                   {"1G", 1073741824.0},
                                   {"64K", 65536.0},
                                   {"8 MB", 8e6},
                                   {"0", 0},
                                   {"2.5GiB", 2.5 * 1073741824.0},
                                   {"100B", 100}}) {
    auto v = ParseByteSize(b.text);
    ASSERT_TRUE(v.ok()) << b.text << ": " << v.status().ToString();
    EXPECT_DOUBLE_EQ(*v, b.bytes) << b.text;
  }
  for (const char* bad : {"", "GiB", "1XB", "-5", "1e3", "1 GiBs", "3PiB"}) {
    EXPECT_THAT(ParseByteSize(bad),
                StatusIs(StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("size"), HasSubstr("\"" + std::string(bad) + "\""))))
        << bad;
  }
  EXPECT_EQ(FormatBytes(1073741824.0), "1 GiB");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(17179869184.0), "16 GiB");
}

TEST(GpuSpecTest, NodeLists) {
  auto t = topo::MakeSyntheticTopology("gpu:8 nvswitch:18 model:H100");
  ASSERT_TRUE(t.ok());
  struct C {
    const char* spec;
    std::vector<int> want;
  };
  for (const C& c : std::vector<C>{{"0-7", {0, 1, 2, 3, 4, 5, 6, 7}},
                                   {"0,2,4", {0, 2, 4}},
                                   {"6,1-2", {6, 1, 2}},
                                   {"all", {0, 1, 2, 3, 4, 5, 6, 7}}}) {
    auto v = ParseNodeGpuSpec(*t, c.spec);
    ASSERT_TRUE(v.ok()) << c.spec << ": " << v.status().ToString();
    EXPECT_EQ(*v, c.want) << c.spec;
  }
  struct Bad {
    const char* spec;
    const char* why;
  };
  for (const Bad& b :
       {Bad{"", "empty GPU list"}, Bad{"8", "the topology has no GPU8"},
        Bad{"0,0", "GPU0 listed twice in \"0,0\""}, Bad{"0-9", "the topology has no GPU8"},
        Bad{"x", "expected an integer, got \"x\""},
        Bad{"1,,2", "empty item in GPU list \"1,,2\""}}) {
    EXPECT_THAT(ParseNodeGpuSpec(*t, b.spec),
                StatusIs(StatusCode::kInvalidArgument, HasSubstr(b.why)))
        << b.spec;
  }
}

TEST(GpuSpecTest, ClusterLists) {
  topo::Cluster c = testing::MakeCluster("gpu:8 nvswitch:18 model:H100", 4);
  struct C {
    const char* spec;
    std::vector<GpuRef> want;
  };
  const std::vector<C> cases = {
      {"gpu001:0-1,gpu002:0-1", {{0, 0}, {0, 1}, {1, 0}, {1, 1}}},
      {"gpu001:0,2,4,gpu003:1", {{0, 0}, {0, 2}, {0, 4}, {2, 1}}},
      {"gpu[002-003]:7", {{1, 7}, {2, 7}}},
      {"gpu004", {{3, 0}, {3, 1}, {3, 2}, {3, 3}, {3, 4}, {3, 5}, {3, 6}, {3, 7}}},
  };
  for (const C& tc : cases) {
    auto v = ParseClusterGpuSpec(c, tc.spec);
    ASSERT_TRUE(v.ok()) << tc.spec << ": " << v.status().ToString();
    EXPECT_EQ(*v, tc.want) << tc.spec;
  }
  auto whole = ParseClusterGpuSpec(c, "gpu[001-002]");
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 16u);
  auto all = ParseClusterGpuSpec(c, "all");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 32u);
  struct Bad {
    const char* spec;
    const char* why;
  };
  for (const Bad& b :
       {Bad{"", "empty GPU list"}, Bad{"gpu009:0", "unknown node \"gpu009\""},
        Bad{"gpu001:8", "gpu001 has no GPU8"}, Bad{"3", "GPU index \"3\" without a host before it"},
        Bad{"gpu001:0,gpu001:0", "gpu001/GPU0 listed twice"},
        Bad{"gpu001:", "no GPU after \"gpu001:\""}}) {
    EXPECT_THAT(ParseClusterGpuSpec(c, b.spec),
                StatusIs(StatusCode::kInvalidArgument, HasSubstr(b.why)))
        << b.spec;
  }
}

}  // namespace
}  // namespace toposched::cost
