// A diagnosis that found no cause says what it read and why none decided
// (docs/diagnose.md, "No known cause"): lines by family and kind, the nearest candidates, and
// lines worded as a fault that no family knows.
#include <gtest/gtest.h>

#include <string>

#include "diag/diagnose.h"
#include "testing/samples.h"

namespace toposched::diag {
namespace {

const std::string kNoCauseDev = testing::SourceDir() + "/data/diagnosis-corpus/dev/";

TEST(NoCause, EmptyInputSaysItHeldNoLines) {
  const Diagnosis d = DiagnoseText("", "lines", nullptr);
  ASSERT_TRUE(d.no_cause.has_value());
  EXPECT_EQ(d.no_cause->why, "the input holds no lines");
}

TEST(NoCause, AFoundCauseNeedsNoReport) {
  const Diagnosis d = DiagnoseText("torch.OutOfMemoryError: CUDA out of memory.\n", "l", nullptr);
  EXPECT_FALSE(d.no_cause.has_value());
}

TEST(NoCause, ALineWordedAsAFaultThatNoFamilyKnowsIsACandidate) {
  const Diagnosis d =
      DiagnoseText("starting\nsome-tool: fatal: disk quota exceeded\n", "l", nullptr);
  ASSERT_TRUE(d.no_cause.has_value());
  EXPECT_EQ(d.no_cause->unrecognised_faults, 1);
  ASSERT_EQ(d.no_cause->candidates.size(), 1u);
  EXPECT_EQ(d.no_cause->candidates[0].kind, "unrecognised");
  EXPECT_EQ(d.no_cause->candidates[0].line, 2);
}

// A torchrun failure summary whose root cause says only "exitcode: 1" (pytorch/torchtitan#620):
// one line of a known family that names no cause alone.
const std::string kExitOne =
    kNoCauseDev +
    "childfailederror-rank1-exitcode1-error-file-llama3-8b-optimizer-oom-torchtitan-620.log";

TEST(NoCause, CountsTheLinesOfKnownFamiliesByFamily) {
  auto d = DiagnoseFiles({kExitOne}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE(d->no_cause.has_value());
  ASSERT_EQ(d->no_cause->families.size(), 1u);
  EXPECT_EQ(d->no_cause->families[0].name, "pytorch");
  EXPECT_EQ(d->no_cause->families[0].lines, 1);
}

TEST(NoCause, ItsNearestCandidateIsTheKnownLine) {
  auto d = DiagnoseFiles({kExitOne}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE(d->no_cause.has_value());
  ASSERT_FALSE(d->no_cause->candidates.empty());
  EXPECT_EQ(d->no_cause->candidates[0].kind, "child_failed");
  EXPECT_NE(d->no_cause->candidates[0].text.find("exitcode  : 1"), std::string::npos);
}

TEST(NoCause, WhyNamesTheKnownLinesThatDecidedNothing) {
  auto d = DiagnoseFiles({kExitOne}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE(d->no_cause.has_value());
  EXPECT_NE(d->no_cause->why.find("the one line of a known family"), std::string::npos)
      << d->no_cause->why;
}

}  // namespace
}  // namespace toposched::diag
