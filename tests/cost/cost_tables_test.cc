#include "cost/cost_tables.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "testing/status_matchers.h"
#include "topo/io/import.h"

namespace toposched::cost {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

std::string CostJsonFile() {
  auto t = topo::io::ReadFileToString(std::string(TS_SOURCE_DIR) + "/data/hardware/cost.json");
  EXPECT_TRUE(t.ok());
  return t.ok() ? *t : "";
}

TEST(CostTablesTest, DefaultIsTheDataFile) {
  EXPECT_EQ(DefaultCostJson(), CostJsonFile());
  const CostTables& t = CostTables::Default();
  EXPECT_GT(t.Efficiency(Transport::kNVLink), 0.5);
  EXPECT_LE(t.Efficiency(Transport::kNVLink), 1.0);
  EXPECT_GT(t.LatencyUs(Transport::kNetIB), t.LatencyUs(Transport::kNVLink));
  EXPECT_GT(t.LatencyUs(Transport::kNetSocket), t.LatencyUs(Transport::kNetIB));
  EXPECT_EQ(t.NvlsFactor(3), 0);
  EXPECT_GT(t.NvlsFactor(4), 0);
  EXPECT_GT(t.NvlsFactor(5), 0);
  for (const char* nic :
       {"ib_hdr", "ib_ndr", "ib_xdr", "roce_100g", "roce_200g", "roce_400g", "ethernet_25g"}) {
    EXPECT_TRUE(t.nic_gbps.count(nic)) << nic;
  }
  EXPECT_DOUBLE_EQ(t.nic_gbps.at("ib_ndr"), 400);
  EXPECT_EQ(t.nvswitch_systems.size(), 5u);
}

// Every constant carries its source (data, not literals: docs/design.md, "Conventions").
TEST(CostTablesTest, EveryEntryNamesItsSource) {
  auto j = nlohmann::json::parse(CostJsonFile());
  int checked = 0;
  auto visit = [&](auto&& self, const nlohmann::json& v, const std::string& path) -> void {
    if (v.is_object()) {
      if (v.contains("value") || v.contains("gbps") || v.contains("nvlink_gen")) {
        EXPECT_TRUE(v.contains("source") && !v.at("source").get<std::string>().empty()) << path;
        ++checked;
        return;
      }
      for (auto& [k, c] : v.items()) self(self, c, path + "." + k);
    } else if (v.is_array()) {
      for (size_t i = 0; i < v.size(); ++i) self(self, v[i], path + "[" + std::to_string(i) + "]");
    }
  };
  visit(visit, j, "");
  EXPECT_GT(checked, 30);
}

TEST(CostTablesTest, NicRates) {
  const CostTables& t = CostTables::Default();
  topo::Nic n;
  n.rate_gbps = 400;
  EXPECT_DOUBLE_EQ(t.NicRateGBps(n), 50);
  n.rate_gbps.reset();
  n.link_layer = topo::LinkLayer::kInfiniBand;
  EXPECT_DOUBLE_EQ(t.NicRateGBps(n), 25);
  n.link_layer = topo::LinkLayer::kEthernet;
  EXPECT_DOUBLE_EQ(t.NicRateGBps(n), 25.0 / 8);
}

TEST(CostTablesTest, BadJsonIsRejectedWithTheKey) {
  EXPECT_THAT(CostTables::FromJson("{"),
              StatusIs(StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cost tables: "), HasSubstr("parse error"))));
  auto j = nlohmann::json::parse(CostJsonFile());
  j["efficiency"].erase("shm");
  auto missing = CostTables::FromJson(j.dump());
  ASSERT_THAT(missing, StatusIs(StatusCode::kInvalidArgument, HasSubstr("efficiency")));
  j = nlohmann::json::parse(CostJsonFile());
  j["efficiency"]["nvlink"]["value"] = 0;
  EXPECT_THAT(CostTables::FromJson(j.dump()),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost tables: efficiency.nvlink must be in (0, 1.5]")));
  j = nlohmann::json::parse(CostJsonFile());
  j["gdr_off_factor"]["value"] = 2;
  EXPECT_THAT(CostTables::FromJson(j.dump()),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("cost tables: gdr_off_factor must be in (0, 1]")));
}

}  // namespace
}  // namespace toposched::cost
