#include "topo/io/json_io.h"

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/import.h"
#include "topo/synthetic.h"

namespace toposched::topo::io {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TEST(TopoJson, EverySampleRoundTripsLosslessly) {
  auto files = toposched::testing::TopologySamples();
  ASSERT_GE(files.size(), 45u);
  for (const std::string& f : files) {
    auto t = ImportTopologyFile(f, TopoFormat::kAuto);
    ASSERT_TRUE(t.ok()) << t.status().ToString();
    std::string json = TopologyToJson(*t);
    auto back = TopologyFromJson(json, f + ".json");
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(TopologyToJson(*back), json) << f;
    // And through the auto-detecting importer, as `topo import --format json` would.
    auto again = ImportTopologyText(json, "x.json", TopoFormat::kAuto);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(TopologyToJson(*again), json) << f;
  }
}

TEST(TopoJson, LinksListEveryUnorderedPairOnce) {
  auto t = MakeSyntheticTopology("gpu:4 nvlink:6 nics:2");
  ASSERT_TRUE(t.ok());
  auto j = nlohmann::json::parse(TopologyToJson(*t));
  EXPECT_EQ(j["links"].size(), 15u);  // 6 devices -> 6*5/2 pairs
  EXPECT_EQ(j["gpus"][2]["name"], "GPU2");
  EXPECT_EQ(j["links"][0]["a"], "GPU0");
  EXPECT_EQ(j["links"][0]["b"], "GPU1");
  EXPECT_EQ(j["links"][0]["path"], "NV6");
  EXPECT_EQ(j["links"][0]["nvlinks"], 6);
  EXPECT_EQ(j["nics"][1]["name"], "mlx5_1");
}

TEST(TopoJson, BadJsonNamesTheField) {
  auto t = MakeSyntheticTopology("gpu:2 nvlink:2");
  ASSERT_TRUE(t.ok());
  auto j = nlohmann::json::parse(TopologyToJson(*t));
  struct Case {
    const char* name;
    std::function<void(nlohmann::json&)> mutate;
    const char* want;
  } cases[] = {
      {"path", [](nlohmann::json& x) { x["links"][0]["path"] = "NVX"; }, "$.links[0].path"},
      {"device", [](nlohmann::json& x) { x["links"][0]["b"] = "GPU9"; }, "$.links[0].b"},
      {"missing pair", [](nlohmann::json& x) { x["links"] = nlohmann::json::array(); },
       "no entry for the pair GPU0-GPU1"},
      {"type", [](nlohmann::json& x) { x["gpus"][0]["index"] = "zero"; }, "$.gpus[0].index"},
      {"cpus", [](nlohmann::json& x) { x["gpus"][1]["cpus"] = "1-"; }, "$.gpus[1].cpus"},
      {"health", [](nlohmann::json& x) { x["gpus"][1]["health"] = "meh"; }, "$.gpus[1].health"},
      // A number outside int was converted with undefined behaviour (fuzzing, topology_json).
      {"huge", [](nlohmann::json& x) { x["gpus"][0]["nvlink_ports"] = 1e38; },
       "$.gpus[0].nvlink_ports: out of range: 1e+38"},
      {"fraction", [](nlohmann::json& x) { x["gpus"][0]["nvlink_ports"] = 2.5; },
       "$.gpus[0].nvlink_ports: expected a whole number"},
      {"list",
       [](nlohmann::json& x) {
         x["gpus"][0]["pcie"]["switches"] = {1, 7.8e95};
       },
       "$.gpus[0].pcie.switches[1]: out of range"},
  };
  for (const auto& c : cases) {
    nlohmann::json x = j;
    c.mutate(x);
    auto back = TopologyFromJson(x.dump(), "t.json");
    ASSERT_THAT(
        back, StatusIs(StatusCode::kInvalidArgument, AllOf(HasSubstr(c.want), HasSubstr("t.json"))))
        << c.name;
  }
  EXPECT_THAT(TopologyFromJson("{\"gpus\": [", "t.json"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("t.json: not valid JSON")));
  // A number that overflows a double threw out_of_range past the parse_error handler (fuzzing).
  auto overflow = TopologyFromJson("{\"gpus\": [1e99999]}", "t.json");
  ASSERT_THAT(overflow,
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("t.json: not valid JSON")));
}

}  // namespace
}  // namespace toposched::topo::io
