// Inputs that are not job logs: random bytes, an empty file, another tool's log, one huge line.
// Each gives "no known cause" (no crash, no hang), never a made-up cause.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "diag/diagnose.h"
#include "testing/status_matchers.h"

namespace toposched::diag {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TEST(DiagnoseRobustness, RandomBytesGiveNoKnownCause) {
  std::mt19937 rng(7);
  std::string bytes(1 << 20, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  EXPECT_TRUE(DiagnoseText(bytes, "random.bin", nullptr).causes.empty());
}

TEST(DiagnoseRobustness, EmptyFileGivesNoKnownCause) {
  const std::string path = ::testing::TempDir() + "/empty.log";
  std::ofstream(path).close();
  auto d = DiagnoseFiles({path}, nullptr);
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->causes.empty());
  EXPECT_EQ(d->stats.lines, 0);
}

TEST(DiagnoseRobustness, AnotherToolsLogGivesNoKnownCause) {
  const std::string build_log =
      "[1/12] Building CXX object src/CMakeFiles/app.dir/main.cc.o\n"
      "-- The C compiler identification is GNU 12.2.0\n"
      "npm WARN deprecated inflight@1.0.6: This module is not supported\n"
      "GET /index.html 200 1043 - 0.3 ms\n"
      "Sep 12 10:00:01 host systemd[1]: Started Daily apt download activities.\n";
  EXPECT_TRUE(DiagnoseText(build_log, "build.log", nullptr).causes.empty());
}

TEST(DiagnoseRobustness, AVeryLongLineIsCutNotHeldWhole) {
  std::string line(8 << 20, 'a');
  line += " NCCL INFO Using network Socket\n";  // beyond the cut: not seen
  auto d = DiagnoseText(line, "long.log", nullptr);
  EXPECT_TRUE(d.causes.empty());
  EXPECT_EQ(d.stats.truncated_lines, 1);
}

TEST(DiagnoseRobustness, MissingFileIsAnErrorNamingIt) {
  EXPECT_THAT(DiagnoseFiles({"/nonexistent/job.log"}, nullptr),
              StatusIs(StatusCode::kNotFound,
                       HasSubstr("/nonexistent/job.log: cannot open: No such file or directory")));
}

}  // namespace
}  // namespace toposched::diag
