#include "sim/model_check.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sim {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

std::string Read(const std::string& rel) {
  std::ifstream in(std::string(TS_SOURCE_DIR) + "/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

topo::Cluster Load(const std::string& rel) {
  auto c = topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  c->Finalize();
  return std::move(c).value();
}

TEST(ModelCheck, PlacementsCsvErrorsNameLineColumnAndField) {
  const std::string h = "placement,local_bsz,step_time,sync_time\n";
  EXPECT_TRUE(ParsePlacementsCsv(h + "22,8,0.5,0.1\n", "p.csv").ok());
  auto bad = ParsePlacementsCsv(h + "22,8,0.5,0.1\n2x,8,0.5,0.1\n", "p.csv");
  ASSERT_THAT(
      bad, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith("p.csv:3:1: placement:")));
  bad = ParsePlacementsCsv(h + "22,8,-1,0.1\n", "p.csv");
  ASSERT_THAT(
      bad, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith("p.csv:2:6: step_time:")));
  EXPECT_THAT(
      ParsePlacementsCsv("placement,bsz\n", "p.csv"),
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr("p.csv:1:1: header: expected \"placement,local_bsz,step_time,sync_time\"")));
  EXPECT_THAT(
      ParsePlacementsCsv(h + "22,8,0.5\n", "p.csv"),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr("p.csv:2:1: expected 4 fields, got 3")));
}

// On the measured ImageNet profile: every multi-node shape is compared with the packed shape of
// its replica count at the same batch size; spreading never makes the model faster, and the
// measured and predicted ratios are printed one per line with the median error.
TEST(ModelCheck, PolluxImagenetShapesBesideTheModel) {
  auto rows = ParsePlacementsCsv(Read("data/profiles/pollux/imagenet/placements.csv"),
                                 "imagenet/placements.csv");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  const topo::Cluster c = Load("data/traces/t4-pollux-testbed.yaml");
  const cost::CostModel cost(c);
  auto checks = CheckPlacementProfile(*rows, cost, 25.6e6 * 4, 1.0);
  ASSERT_TRUE(checks.ok()) << checks.status().ToString();
  ASSERT_GT(checks->size(), 100u);
  for (const ShapeCheck& s : *checks) {
    EXPECT_GE(s.predicted_ratio, 1.0 - 1e-9) << s.placement << " vs " << s.packed;
    EXPECT_GT(s.measured_ratio, 0);
    EXPECT_LT(s.packed.size(), s.placement.size() + 1);
  }
  const ShapeCheck& first = checks->front();
  std::printf("imagenet_shapes=%zu\n", checks->size());
  std::printf("imagenet_median_error=%.4f\n", MedianRelativeError(*checks));
  std::printf("imagenet_first=%s/%s bsz %d measured %.3f predicted %.3f\n", first.placement.c_str(),
              first.packed.c_str(), first.local_bsz, first.measured_ratio, first.predicted_ratio);
  // A shape wider than the cluster is an error, not a silent skip.
  const std::string wide =
      "placement,local_bsz,step_time,sync_time\n1,8,0.5,0\n4,8,0.5,0.01\n"
      "11111111111111111,8,0.9,0.5\n";
  // 17 digits: refused by the parser
  EXPECT_THAT(
      ParsePlacementsCsv(wide, "w.csv"),
      StatusIs(StatusCode::kInvalidArgument,
               HasSubstr("w.csv:4:1: placement: expected 1-16 digits 1-9 (GPUs per node), got "
                         "\"11111111111111111\"")));
  auto wider = ParsePlacementsCsv(
      "placement,local_bsz,step_time,sync_time\n1,8,0.5,0\n4,8,0.5,0.01\n5,8,0.6,0.01\n"
      "2111,8,0.9,0.5\n",
      "w.csv");
  ASSERT_TRUE(wider.ok());
  // "5": 5 GPUs on a T4 node
  EXPECT_THAT(CheckPlacementProfile(*wider, cost, 1e8, 1.0),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("shape \"5\" puts 5 GPUs on a node of n01")));
}

// The Crux scenario: on a non-blocking fabric the GPT job and the BERT job together load each
// ToR uplink to 5/6 of its capacity, so the link model slows neither; tapered 2:1 the GPT job
// alone already loads it to 4/3 and beside BERT to 5/3.
TEST(ModelCheck, CruxScenarioLinkFactors) {
  const topo::Cluster one = Load("data/clusters/crux-testbed-1to1.yaml");
  auto r1 = CheckCruxScenario(one, 4, 1);
  ASSERT_TRUE(r1.ok()) << r1.status().ToString();
  EXPECT_DOUBLE_EQ(r1->gpt_alone_factor, 1.0);
  EXPECT_DOUBLE_EQ(r1->gpt_shared_factor, 1.0);
  EXPECT_DOUBLE_EQ(r1->IterationRatio(0.5), 1.0);
  const topo::Cluster two = Load("data/clusters/crux-testbed-2to1.yaml");
  auto r2 = CheckCruxScenario(two, 4, 1);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  EXPECT_NEAR(r2->gpt_alone_factor, 4.0 / 3.0, 1e-9);
  EXPECT_NEAR(r2->gpt_shared_factor, 5.0 / 3.0, 1e-9);
  EXPECT_NEAR(r2->IterationRatio(0.5), 1.125, 1e-9);
  std::printf("crux_1to1_iteration_ratio=%.4f\n", r1->IterationRatio(0.5));
  std::printf("crux_2to1_iteration_ratio_at_share_0.5=%.4f\n", r2->IterationRatio(0.5));
  // 7 hosts under a ToR of 6
  EXPECT_THAT(CheckCruxScenario(two, 6, 1),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("ToR tor0 has 6 hosts; the scenario needs 7")));
}

}  // namespace
}  // namespace toposched::sim
