// `toposched cluster generate --profile gb200-nvl72`: racks of 18 compute trays x 4 GPUs, each
// rack one NVLink domain, 4 x 400 Gb/s NICs per tray; TP groups wider than a tray stay in a rack
// and are priced on NVLink there; bad shapes fail with the flag named.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace {

using ::toposched::testing::HasSubstr;

using namespace toposched::cli_testing;  // NOLINT: RunCli, WriteTemp, TempDir, Slurp

// Four racks (72 trays, 288 GPUs), two racks under each leaf, both leaves under one spine: a
// leaf is wider than a rack, so only the NVLink domains keep a TP group inside one rack.
const char* kNvl72Shape =
    "--profile gb200-nvl72 --nodes 72 --nodes-per-leaf 36 --leaves-per-spine 2";

std::string GenerateNvl72(const std::string& name) {
  const std::string dir = TempDir() + "/" + name;
  Result g = RunCli(std::string("cluster generate ") + kNvl72Shape + " --out " + dir);
  EXPECT_EQ(g.code, 0) << g.err;
  return dir + "/cluster.yaml";
}

// node0001..node0018 are rack 0, node0019..node0036 rack 1, ...
int RackOfTray(const std::string& node) { return (std::stoi(node.substr(4)) - 1) / 18; }

TEST(GenerateGb200, RacksOfEighteenTraysOfFourGpusEachOneNvlinkDomain) {
  const std::string spec = GenerateNvl72("gb200-counts");
  auto c = toposched::topo::io::ReadClusterYamlFile(spec);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->Finalize();
  EXPECT_EQ(c->nodes.size(), 72u);
  EXPECT_EQ(c->TotalGpus(), 288);
  for (size_t n = 0; n < c->nodes.size(); ++n) {
    const toposched::topo::NodeTopology& t = c->topology(static_cast<int>(n));
    EXPECT_EQ(t.gpus.size(), 4u) << n;
    EXPECT_EQ(t.gpu_model, "GB200") << n;
    ASSERT_EQ(t.nics.size(), 4u) << n;
    for (const auto& nic : t.nics) EXPECT_EQ(nic.rate_gbps.value_or(0), 400.0) << n;
    EXPECT_EQ(c->nodes[n].nvlink_domain, static_cast<int>(n) / 18) << n;
  }
  ASSERT_EQ(c->nvlink_domains.size(), 4u);
  for (const auto& d : c->nvlink_domains) {
    EXPECT_EQ(d.nodes.size(), 18u) << d.name;  // 18 trays x 4 = the rack's 72 GPUs
    EXPECT_EQ(d.gpu_bandwidth_gbps, 900.0) << d.name;
  }
  EXPECT_EQ(c->nvlink_domains[0].name, "nvl72-rack0");
  EXPECT_EQ(c->rails.count, 4);
  // The spec passes `cluster check` (what every profile's spec must).
  Result check = RunCli("cluster check " + spec);
  EXPECT_EQ(check.code, 0) << check.err;
}

TEST(GenerateGb200, TpEightAndSixteenLandInsideOneRack) {
  const std::string spec = GenerateNvl72("gb200-place");
  const std::string jobs = WriteTemp("gb200-jobs.yaml",
                                     "jobs:\n"
                                     "  - {name: tp8, total_gpus: 8, layout: {tp: 8}}\n"
                                     "  - {name: tp16, total_gpus: 16, layout: {tp: 16}}\n");
  Result p = RunCli("place --json --cluster " + spec + " --jobs " + jobs);
  ASSERT_EQ(p.code, 0) << p.err;
  auto pj = nlohmann::json::parse(p.out);
  ASSERT_EQ(pj["jobs"].size(), 2u);
  const size_t want_trays[] = {2, 4};
  for (size_t i = 0; i < 2; ++i) {
    const auto& job = pj["jobs"][i];
    ASSERT_EQ(job["state"], "RUNNING") << p.out;
    EXPECT_EQ(job["nodes"].size(), want_trays[i]) << p.out;
    std::set<int> racks;
    for (const auto& n : job["nodes"]) racks.insert(RackOfTray(n.get<std::string>()));
    EXPECT_EQ(racks.size(), 1u) << job["name"] << ": " << p.out;
  }

  // The same spec without its NVLink domains: the trays are joined by their NICs only, and the
  // same jobs are predicted slower there (their TP traffic priced on the network).
  const std::string text = Slurp(spec);
  const size_t cut = text.find("\nnvlink_domains:");
  ASSERT_NE(cut, std::string::npos) << text;
  const std::string bare = WriteTemp("gb200-no-nvlink-domains.yaml", text.substr(0, cut + 1));
  Result q = RunCli("place --json --cluster " + bare + " --jobs " + jobs);
  ASSERT_EQ(q.code, 0) << q.err;
  auto qj = nlohmann::json::parse(q.out);
  ASSERT_EQ(qj["jobs"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(qj["jobs"][i]["state"], "RUNNING") << q.out;
    EXPECT_LT(pj["jobs"][i]["predicted_ms"].get<double>(),
              qj["jobs"][i]["predicted_ms"].get<double>())
        << pj["jobs"][i]["name"] << "\n"
        << p.out << "\n"
        << q.out;
  }
}

TEST(GenerateGb200, TpSixteenAcrossTraysOfOneRackCostsNvlinkNotNetwork) {
  const std::string spec = GenerateNvl72("gb200-cost");
  auto cost = [&](const std::string& gpus) {
    Result r = RunCli("cost --cluster " + spec + " --gpus '" + gpus +
                      "' --collective allreduce --bytes 1GiB --json");
    EXPECT_EQ(r.code, 0) << gpus << ": " << r.err;
    return nlohmann::json::parse(r.out);
  };
  // 16 GPUs on 4 trays of rack 0, and the same 16 forced across racks 0 and 1.
  nlohmann::json in_rack = cost("node[0001-0004]");
  nlohmann::json across = cost("node[0001-0002],node[0019-0020]");
  EXPECT_EQ(in_rack["ranks"], 16);
  EXPECT_EQ(across["ranks"], 16);
  EXPECT_EQ(in_rack["bottleneck"]["transport"], "NVLink") << in_rack.dump();
  EXPECT_EQ(across["bottleneck"]["transport"], "NET/IB") << across.dump();
  // Inside the rack every hop is NVLink; across racks the two racks' NVLink domains are joined
  // over 2 x 4 NICs of 400 Gb/s, which is the slower hop (NVLS tree), so the job takes longer.
  for (const auto& hop : in_rack["hops"]) EXPECT_EQ(hop["transport"], "NVLink") << hop.dump();
  EXPECT_LT(in_rack["time_ms"].get<double>(), across["time_ms"].get<double>())
      << in_rack.dump() << "\n"
      << across.dump();
}

TEST(GenerateGb200, ShapesThatSplitARackOrATrayFail) {
  const std::string out = " --out " + TempDir() + "/gb200-bad";
  struct Case {
    const char* args;
    const char* want;
  } cases[] = {
      {"--nodes 20 --nodes-per-leaf 18 --leaves-per-spine 1",
       "--nodes: the gb200-nvl72 profile "
       "has whole racks of 18 nodes, got 20"},
      {"--nodes 36 --nodes-per-leaf 9 --leaves-per-spine 1", "--nodes-per-leaf: the gb200-nvl72"},
      {"--nodes 36 --gpus-per-node 8 --nodes-per-leaf 18 --leaves-per-spine 1",
       "--gpus-per-node: the gb200-nvl72 profile's node has 4 GPUs, got 8"},
  };
  for (const Case& c : cases) {
    Result r = RunCli(std::string("cluster generate --profile gb200-nvl72 ") + c.args + out);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.want)) << c.args << "\n" << r.err;
  }
  // Nothing was written for a refused shape.
  EXPECT_TRUE(Slurp(TempDir() + "/gb200-bad/cluster.yaml").empty());
}

}  // namespace
