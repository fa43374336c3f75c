// `toposched check pollux|crux`: the tables of docs/evaluation.md ("Checks of the model") come
// from the data copied into data/, and bad input exits 1 with the file named.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"

namespace toposched::cli_testing {
namespace {

using ::toposched::testing::HasSubstr;

TEST(CheckCliTest, PolluxTablePerApp) {
  Result r = RunCli("check pollux");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* app : {"| imagenet |", "| bert |", "| cifar10 |", "| yolov3 |"}) {
    EXPECT_THAT(r.out, HasSubstr(app)) << app << "\n" << r.out;
  }
  Result rows = RunCli("check pollux --rows");
  ASSERT_EQ(rows.code, 0) << rows.err;
  EXPECT_THAT(rows.out, HasSubstr("imagenet 11 vs 2 bsz 20: measured 1.684"))
      << rows.out.substr(0, 2000);
}

TEST(CheckCliTest, PolluxBadInputNamesTheFile) {
  const std::string dir = TempDir() + "/pollux-bad";
  std::filesystem::create_directories(dir + "/bert");
  std::ofstream(dir + "/bert/placements.csv")
      << "placement,local_bsz,step_time,sync_time\n1,4,0.4,0.01\n22,four,0.5,0.1\n";
  Result r = RunCli("check pollux --profiles " + dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("bert/placements.csv:3:4: local_bsz")) << r.err;
  Result none = RunCli("check pollux --profiles " + TempDir() + "/nothing-here");
  EXPECT_EQ(none.code, 1);
}

TEST(CheckCliTest, CruxFactorsOnBothFabrics) {
  Result r = RunCli("check crux");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("| crux-testbed-1to1 | 1.000 | 1.000 | 1.000 / 1.000 / 1.000 | none"))
      << r.out;
  EXPECT_THAT(r.out,
              HasSubstr("| crux-testbed-2to1 | 1.333 | 1.667 | 1.062 / 1.125 / 1.250 | 0.444"))
      << r.out;
  EXPECT_EQ(RunCli("check crux --gpt-hosts 6").code, 1);  // 7 hosts under a ToR of 6
}

}  // namespace
}  // namespace toposched::cli_testing
