// A diagnosis that found no cause says what it read and why none decided
// (docs/diagnose.md, "No known cause"): lines by family and kind, the nearest candidates, and
// lines worded as a fault that no family knows.
#include <gtest/gtest.h>

#include <string>

#include "diag/diagnose.h"
#include "testing/samples.h"

namespace toposched::diag {
namespace {

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

// One line of a known family that names no cause alone: NCCL found no IB device, and no line
// says what it used instead (verbatim from data/diagnosis-corpus/dev, hiyouga/LlamaFactory#355).
// (A torchrun summary whose root cause says only "exitcode: 1" was this example before; a
// worker's own nonzero exit now names a weak application_error.)
const std::string kNoDevice = "work-1:1097197:1097898 [7] NCCL INFO NET/IB : No device found.\n";

TEST(NoCause, CountsTheLinesOfKnownFamiliesByFamily) {
  const Diagnosis d = DiagnoseText(kNoDevice, "l", nullptr);
  ASSERT_TRUE(d.no_cause.has_value());
  ASSERT_EQ(d.no_cause->families.size(), 1u);
  EXPECT_EQ(d.no_cause->families[0].name, "nccl");
  EXPECT_EQ(d.no_cause->families[0].lines, 1);
}

TEST(NoCause, ItsNearestCandidateIsTheKnownLine) {
  const Diagnosis d = DiagnoseText(kNoDevice, "l", nullptr);
  ASSERT_TRUE(d.no_cause.has_value());
  ASSERT_FALSE(d.no_cause->candidates.empty());
  EXPECT_EQ(d.no_cause->candidates[0].kind, "nccl_ib_no_device");
  EXPECT_NE(d.no_cause->candidates[0].text.find("No device found"), std::string::npos);
}

TEST(NoCause, WhyNamesTheKnownLinesThatDecidedNothing) {
  const Diagnosis d = DiagnoseText(kNoDevice, "l", nullptr);
  ASSERT_TRUE(d.no_cause.has_value());
  EXPECT_NE(d.no_cause->why.find("the one line of a known family"), std::string::npos)
      << d.no_cause->why;
}

}  // namespace
}  // namespace toposched::diag
