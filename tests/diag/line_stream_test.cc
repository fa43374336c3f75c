// The line stream: line numbers, carriage-return segments, the provenance line, bounded long
// lines, chunk boundaries, and the errors for files that cannot be read.
#include "diag/line_stream.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "testing/status_matchers.h"

namespace toposched::diag {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

struct Seen {
  int64_t line;
  std::string text;
};

std::vector<Seen> Collect(std::string_view text, LineStreamOptions options = {},
                          LineStreamStats* stats = nullptr) {
  std::vector<Seen> out;
  StreamText(
      text, "t.log", options,
      [&](const LineRef& l) {
        out.push_back({l.line, std::string(l.text)});
      },
      stats);
  return out;
}

TEST(LineStream, SplitsLinesAndCarriageReturnSegments) {
  auto seen = Collect("# PROVENANCE: x\na\r\n\nb\rc\rd\nlast");
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen[0].line, 2);
  EXPECT_EQ(seen[0].text, "a");
  EXPECT_EQ(seen[1].line, 4);
  EXPECT_EQ(seen[1].text, "b");
  EXPECT_EQ(seen[3].text, "d");
  EXPECT_EQ(seen[4].line, 5);
  EXPECT_EQ(seen[4].text, "last");
}

TEST(LineStream, ProvenanceOnlySkippedOnTheFirstLineAndWhenAsked) {
  EXPECT_EQ(Collect("x\n# PROVENANCE: y\n").size(), 2u);
  LineStreamOptions keep;
  keep.skip_provenance_line = false;
  EXPECT_EQ(Collect("# PROVENANCE: y\n", keep).size(), 1u);
}

TEST(LineStream, LongLinesAreCutAcrossChunkBoundaries) {
  LineStreamOptions o;
  o.max_line_bytes = 10;
  o.chunk_bytes = 4;
  const std::string path = ::testing::TempDir() + "/long.log";
  std::ofstream(path) << std::string(100, 'x') << "\nshort\n" << std::string(25, 'y');
  std::vector<Seen> seen;
  LineStreamStats stats;
  ASSERT_TRUE(StreamFile(
                  path, o,
                  [&](const LineRef& l) {
                    seen.push_back({l.line, std::string(l.text)});
                  },
                  &stats)
                  .ok());
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].text, std::string(10, 'x'));
  EXPECT_EQ(seen[1].text, "short");
  EXPECT_EQ(seen[1].line, 2);
  EXPECT_EQ(seen[2].text, std::string(10, 'y'));
  EXPECT_EQ(stats.truncated_lines, 2);
  EXPECT_EQ(stats.lines, 3);
  EXPECT_EQ(stats.bytes, 100 + 1 + 6 + 25);
}

TEST(LineStream, UnreadableFilesAreClearErrors) {
  auto nothing = [](const LineRef&) {};
  EXPECT_THAT(StreamFile("/nonexistent/x.log", {}, nothing),
              StatusIs(StatusCode::kNotFound, HasSubstr("/nonexistent/x.log: cannot open")));
  EXPECT_THAT(StreamFile(::testing::TempDir(), {}, nothing),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr(::testing::TempDir() + ": is a directory, not a log file")));
  LineStreamOptions bad;
  bad.max_line_bytes = 0;
  // The message names the limit that is 0.
  EXPECT_THAT(StreamFile("/dev/null", bad, nothing),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("line stream: max_line_bytes must be > 0, got 0")));
  bad = LineStreamOptions{};
  bad.chunk_bytes = 0;
  EXPECT_THAT(StreamFile("/dev/null", bad, nothing),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("line stream: chunk_bytes must be > 0, got 0")));
}

}  // namespace
}  // namespace toposched::diag
