// Calibration of the cost model against the published nccl-tests results listed in
// data/calibration/cases.json; keeps docs/calibration.md in step with the model.
#include "cost/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "testing/samples.h"

namespace toposched::cost {
namespace {

std::string Manifest() { return std::string(TS_SOURCE_DIR) + "/data/calibration/cases.json"; }

TEST(CalibrationTest, MedianAndWorstErrorWithinTarget) {
  auto rep = RunCalibration(Manifest());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  std::printf("%s", FormatCalibrationMarkdown(*rep).c_str());
  ASSERT_GE(rep->results.size(), 15u);
  EXPECT_LE(rep->median_abs_error, 0.20);
  EXPECT_LE(rep->worst_ratio, 2.0) << rep->worst_case;
  for (const CalibrationResult& r : rep->results) {
    EXPECT_GT(r.published_busbw_gbps, 0) << r.c.name;
    EXPECT_LE(r.ratio, 2.0) << r.c.name;
  }
}

TEST(CalibrationTest, EveryNcclTestsSampleIsCalibratedOrExcluded) {
  auto m = LoadCalibrationManifest(Manifest());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  std::set<std::string> named;
  for (const CalibrationCase& c : m->cases) {
    named.insert(std::filesystem::path(c.file).filename().string());
  }
  for (const ExcludedSample& e : m->excluded) {
    named.insert(std::filesystem::path(e.file).filename().string());
    EXPECT_FALSE(e.reason.empty()) << e.file;
  }
  for (const auto& e : std::filesystem::directory_iterator(std::string(TS_SOURCE_DIR) +
                                                           "/data/samples/nccl-tests")) {
    EXPECT_TRUE(named.count(e.path().filename().string())) << e.path();
  }
}

// docs/calibration.md carries the table between markers; it must match the model.
TEST(CalibrationTest, DocsTableIsCurrent) {
  auto rep = RunCalibration(Manifest());
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  const std::string doc = testing::ReadFileText(testing::SourceDir() + "/docs/calibration.md");
  ASSERT_FALSE(doc.empty()) << "docs/calibration.md missing";
  const std::string begin = "<!-- calibration-table:begin -->\n";
  const std::string end = "<!-- calibration-table:end -->";
  size_t b = doc.find(begin), e = doc.find(end);
  ASSERT_NE(b, std::string::npos);
  ASSERT_NE(e, std::string::npos);
  EXPECT_EQ(doc.substr(b + begin.size(), e - b - begin.size()), FormatCalibrationMarkdown(*rep))
      << "regenerate with: toposched cost calibrate --markdown";
}

TEST(CalibrationTest, ManifestErrorsNameThePath) {
  auto bad = LoadCalibrationManifest("/nonexistent/cases.json");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/nonexistent/cases.json"), std::string::npos);
}

}  // namespace
}  // namespace toposched::cost
