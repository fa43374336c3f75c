#include "cost/nccl_tests_reader.h"

#include <gtest/gtest.h>

#include "testing/status_matchers.h"
#include "topo/io/import.h"

namespace toposched::cost {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

std::string Sample(const std::string& name) {
  auto text =
      topo::io::ReadFileToString(std::string(TS_SOURCE_DIR) + "/data/samples/nccl-tests/" + name);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

// Facts read by hand from each published table.
struct RawCase {
  std::string file;
  size_t rows;
  int ranks;
  std::string collective;
  int64_t last_bytes;
  double last_oop_busbw, last_ip_busbw;
  std::string redop;
  int root;
  std::optional<double> avg;
};

// The collective comes from "Collective test starting:", a command line or any text naming the
// *_perf binary (the provenance lines of the samples do).
TEST(NcclTestsReaderTest, RawTables) {
  const std::vector<RawCase> cases = {
      // Old layout (no root), 'N/A' error column, an interleaved NCCL INFO line, 0-byte rows.
      // (Its provenance line quotes "NCCL INFO", so it is skipped like a log line: no name.)
      {"superbench-a100-sxm4-40gb-1node-8gpu-allreduce-raw.txt", 34, 8, "", 8589934592, 235.26,
       235.03, "sum", -1, 68.4048},
      // "[1,0]<stdout>:" prefixes, current layout.
      {"aws-p5-awsbatch-allreduce.txt", 32, 0, "all_reduce", 17179869184, 483.05, 483.35, "sum", -1,
       156.742},
      // "0:" prefixes.
      {"aws-p4de-2node-16gpu-efa-allreduce.txt", 29, 0, "all_reduce", 2147483648, 78.33, 78.33,
       "sum", -1, std::nullopt},
      // Whitespace collapsed to single spaces (rccl-tests doc copy).
      {"amd-mi350x-1node-8gpu-rccl-allreduce.txt", 31, 8, "all_reduce", 8589934592, 360.97, 367.51,
       "sum", -1, 111.827},
      // Leading '#' stripped, "wrong" header, indented.
      {"dstack-gcp-a4-b200-2node-16gpu-roce-allreduce.txt", 11, 0, "all_reduce", 8589934592, 683.52,
       679.54, "sum", -1, 165.789},
      // Only the last rank line is shown: 72 ranks.
      {"coreweave-gb200-nvl72-1rack-72gpu-allreduce.txt", 5, 72, "", 8589934592, 834.57, 846.82,
       "sum", -1, 745.53},
      // "Collective test starting:" names the collective; indented by 4 in a doc.
      {"cscs-alps-gh200-2node-2gpu-slingshot-allreduce.txt", 8, 2, "all_reduce", 134217728, 22.86,
       22.88, "sum", -1, 14.9966},
      // all_gather: redop "none", N/A in #wrong, NCCL INFO line before the table.
      {"gcp-a3-highgpu-2node-16gpu-tcpx-allgather.txt", 10, 0, "all_gather", 536870912, 70.90,
       71.35, "none", -1, 30.9622},
      // Oldest layout: no redop, no root; truncated excerpt.
      {"PARTIAL-nccltests44-2x-rtx2080ti-nvlink-bridge-1node-2gpu.txt", 13, 0, "", 134217728, 20.34,
       21.86, "", -1, std::nullopt},
      // The command line names the binary.
      {"cscs-alps-gh200-2node-8gpu-slingshot-allreduce.txt", 25, 8, "all_reduce", 134217728, 122.57,
       123.11, "sum", -1, 19.7866},
      // The elided excerpt ("...") keeps the rows around it.
      {"aws-p5-2node-16gpu-efa-eks-allreduce-excerpt.txt", 7, 0, "all_reduce", 2147483648, 437.79,
       437.89, "sum", -1, 52.9753},
  };
  for (const RawCase& c : cases) {
    SCOPED_TRACE(c.file);
    auto t = ParseNcclTestsOutput(Sample(c.file));
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    EXPECT_EQ(t->rows.size(), c.rows);
    EXPECT_EQ(t->ranks, c.ranks);
    EXPECT_EQ(t->collective, c.collective);
    ASSERT_FALSE(t->rows.empty());
    const NcclTestsRow& last = t->rows.back();
    EXPECT_EQ(last.bytes, c.last_bytes);
    EXPECT_DOUBLE_EQ(last.oop_busbw_gbps, c.last_oop_busbw);
    EXPECT_DOUBLE_EQ(last.ip_busbw_gbps, c.last_ip_busbw);
    EXPECT_EQ(last.redop, c.redop);
    EXPECT_EQ(last.root, c.root);
    EXPECT_EQ(t->avg_busbw_gbps.has_value(), c.avg.has_value());
    if (c.avg && t->avg_busbw_gbps) {
      EXPECT_DOUBLE_EQ(*t->avg_busbw_gbps, *c.avg);
    }
    EXPECT_GT(last.line, 0);
  }
}

TEST(NcclTestsReaderTest, RowFieldsOfTheCurrentLayout) {
  const std::string text =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
      "time   algbw   busbw #wrong\n"
      "  1073741824     268435456     float     sum      -1   5808.0  184.87  365.90      0   "
      "5882.2  182.54  361.28      0\n";
  auto t = ParseNcclTestsOutput(text);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 1u);
  const NcclTestsRow& r = t->rows[0];
  EXPECT_EQ(r.count, 268435456);
  EXPECT_EQ(r.type, "float");
  EXPECT_DOUBLE_EQ(r.oop_time_us, 5808.0);
  EXPECT_DOUBLE_EQ(r.oop_algbw_gbps, 184.87);
  EXPECT_DOUBLE_EQ(r.ip_time_us, 5882.2);
  EXPECT_DOUBLE_EQ(r.ip_algbw_gbps, 182.54);
  EXPECT_EQ(r.oop_wrong, "0");
  EXPECT_EQ(r.line, 2);
}

TEST(NcclTestsReaderTest, RejectsTextWithoutRows) {
  EXPECT_THAT(
      ParseNcclTestsOutput(""),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("nccl-tests output: no result rows found")));
  EXPECT_THAT(
      ParseNcclTestsOutput("# nThread 1 nGpus 8\n# Avg bus bandwidth : 3\n"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("nccl-tests output: no result rows found")));
  // A row cut short is skipped, not misread.
  EXPECT_THAT(
      ParseNcclTestsOutput("  67108864  16777216  float  sum  -1  1049.3  63.95\n"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("nccl-tests output: no result rows found")));
}

TEST(NcclTestsReaderTest, MarkdownSummaries) {
  auto azure = ParseBusBwSummary(Sample("azure-ndv5-h100-1node-8gpu-allreduce-busbw-summary.txt"));
  ASSERT_TRUE(azure.ok()) << azure.status().ToString();
  ASSERT_EQ(azure->size(), 1u);
  EXPECT_EQ((*azure)[0].name, "ND H100 V5 (GB/s)");
  ASSERT_EQ((*azure)[0].points.size(), 24u);
  EXPECT_EQ((*azure)[0].points.front().first, 1024);
  EXPECT_EQ((*azure)[0].points[7].first, 131072);  // "132K"
  EXPECT_EQ((*azure)[0].points.back().first, 8589934592);
  EXPECT_DOUBLE_EQ((*azure)[0].points.back().second, 478.87);

  auto stas =
      ParseBusBwSummary(Sample("stas00-aws-p6-b200-1node-vs-4node-allreduce-bench-busbw.txt"));
  ASSERT_TRUE(stas.ok());
  ASSERT_EQ(stas->size(), 2u);  // "slowdown" (120.0x) is not a bandwidth
  EXPECT_EQ((*stas)[0].name, "1 node");
  EXPECT_EQ((*stas)[1].name, "4 nodes");
  EXPECT_EQ((*stas)[1].points.back().first, 17179869184);
  EXPECT_DOUBLE_EQ((*stas)[1].points.back().second, 381.80);
  EXPECT_THAT(ParseBusBwSummary("no table here\n"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("busbw summary: no markdown table with sizes found")));
}

TEST(NcclTestsReaderTest, SummarySizes) {
  struct S {
    const char* label;
    int64_t bytes;
  };
  for (const S& s : std::vector<S>{{"1K", 1024},
                                   {"65K", 65536},
                                   {"132K", 131072},
                                   {"524K", 524288},
                                   {"33M", 33554432},
                                   {"1G", 1073741824},
                                   {"8G", 8589934592},
                                   {"32KiB", 32768},
                                   {"16GiB", 17179869184},
                                   {"512", 512}}) {
    auto b = ParseSummarySize(s.label);
    ASSERT_TRUE(b.ok()) << s.label;
    EXPECT_EQ(*b, s.bytes) << s.label;
  }
  EXPECT_THAT(
      ParseSummarySize("Message"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("size label \"Message\": no number")));
  EXPECT_THAT(ParseSummarySize("12Q"), StatusIs(StatusCode::kInvalidArgument,
                                                HasSubstr("size label \"12Q\": unknown unit")));
}

TEST(NcclTestsReaderTest, RanksFromBusFactor) {
  EXPECT_EQ(InferRanksFromBusFactor(483.05, 276.03, true), 8);    // aws-p5-awsbatch
  EXPECT_EQ(InferRanksFromBusFactor(12.57, 8.38, true), 4);       // tinygrad
  EXPECT_EQ(InferRanksFromBusFactor(188.73, 201.32, false), 16);  // all_gather 16 ranks
  EXPECT_EQ(InferRanksFromBusFactor(22.86, 22.86, true), 2);
  EXPECT_EQ(InferRanksFromBusFactor(0, 0, true), 0);
}

}  // namespace
}  // namespace toposched::cost
