// Calibrated confidence (src/diag/calibration.cc, docs/diagnose.md "Confidence"): a rule's
// strength moved toward its record on the development corpus, and a ranked list whose shown
// confidences never rise down the list.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diag/diagnose.h"
#include "diag/rules_internal.h"
#include "testing/samples.h"

namespace toposched::diag {
namespace {

Cause RuleAt(const std::string& rule, double strength) {
  Cause c;
  c.rule = rule;
  c.confidence = strength;
  return c;
}

TEST(Calibration, ARuleTheDevSetNeverSawLeadKeepsItsStrength) {
  EXPECT_DOUBLE_EQ(internal::CalibratedConfidence(RuleAt("gpu_fault:no_such_kind", 0.42)), 0.42);
}

// gpu_oom:cuda_oom led on six dev logs, right on all six.
TEST(Calibration, ARuleRightEveryTimeItLedRisesAboveItsStrength) {
  EXPECT_GT(internal::CalibratedConfidence(RuleAt("gpu_oom:cuda_oom", 0.6)), 0.6);
}

// application_error:python_traceback (a traceback whose exception line was not read) led on 2
// dev logs and was right on 1.
TEST(Calibration, ARuleOftenWrongWhenItLedFallsBelowItsStrength) {
  EXPECT_LT(internal::CalibratedConfidence(RuleAt("application_error:python_traceback", 0.6)), 0.6);
}

TEST(Calibration, NoCauseIsShownMoreConfidentThanOneAboveIt) {
  std::vector<Cause> ranked = {RuleAt("gpu_fault:no_such_kind", 0.5),
                               RuleAt("gpu_oom:no_such_kind", 0.9)};
  internal::Calibrate(ranked);
  EXPECT_DOUBLE_EQ(ranked[1].confidence, 0.5);
}

TEST(Calibration, EveryCauseNamesItsRule) {
  const Diagnosis d = DiagnoseText(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n", "lines", nullptr);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes.front().rule, "gpu_oom:cuda_oom");
}

}  // namespace
}  // namespace toposched::diag
