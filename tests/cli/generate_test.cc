// `toposched cluster generate`: the spec loads back, the state loads through `place --state`,
// occupancy lands near the target, output is deterministic in the seed, bad arguments fail.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"

namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;

using namespace toposched::cli_testing;  // NOLINT: RunCli, WriteTemp, TempDir, Slurp

const char* kShape = "--nodes 64 --gpus-per-node 8 --nodes-per-leaf 8 --leaves-per-spine 4";

Result Generate(const std::string& dir, const std::string& extra) {
  return RunCli(std::string("cluster generate ") + kShape + " " + extra + " --out " + dir);
}

TEST(Generate, ClusterAndStateLoadBackAndFillTheTarget) {
  const std::string dir = TempDir() + "/gen-a";
  Result g = Generate(dir, "--occupancy 0.7 --seed 1");
  ASSERT_EQ(g.code, 0) << g.err;
  const std::string spec = dir + "/cluster.yaml";

  Result c = RunCli("cluster check --json " + spec);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["nodes"].size(), 64u);
  std::string text = Slurp(spec);
  EXPECT_THAT(text, HasSubstr("node[0001-0064]")) << text;
  EXPECT_THAT(text, HasSubstr("name: zone")) << text;  // 8 leaves / 4 = 2 spines
  EXPECT_THAT(text, HasSubstr("rails: {count: 8")) << text;

  const std::string state_text = Slurp(dir + "/state.json");
  auto state = nlohmann::json::parse(state_text);
  int used = 0;
  for (const auto& a : state["allocations"]) {
    for (const auto& n : a["nodes"]) used += static_cast<int>(n["gpus"].size());
  }
  const double fraction = used / 512.0;
  EXPECT_GE(fraction, 0.65);
  EXPECT_LE(fraction, 0.72);
  EXPECT_GT(state["allocations"].size(), 10u);

  // The state loads through `place --state`; a whole-node job still finds room.
  std::string jobs = WriteTemp("gen-jobs.yaml",
                               "jobs:\n"
                               "  - {name: small, replicas: 1, gpus_per_replica: 2}\n"
                               "  - {name: big, replicas: 2, gpus_per_replica: 8, "
                               "layout: {tp: 8}}\n");
  Result p = RunCli("place --json --cluster " + spec + " --jobs " + jobs + " --state " + dir +
                    "/state.json");
  ASSERT_EQ(p.code, 0) << p.err;
  auto pj = nlohmann::json::parse(p.out);
  ASSERT_EQ(pj["jobs"].size(), 2u);
  EXPECT_EQ(pj["jobs"][0]["state"], "RUNNING") << p.out;
  EXPECT_EQ(pj["jobs"][1]["state"], "RUNNING") << p.out;
}

TEST(Generate, SameSeedSameBytesOtherSeedDifferent) {
  const std::string a = TempDir() + "/gen-s1a", b = TempDir() + "/gen-s1b",
                    c = TempDir() + "/gen-s2";
  ASSERT_EQ(Generate(a, "--occupancy 0.7 --seed 1").code, 0);
  ASSERT_EQ(Generate(b, "--occupancy 0.7 --seed 1").code, 0);
  ASSERT_EQ(Generate(c, "--occupancy 0.7 --seed 2").code, 0);
  EXPECT_EQ(Slurp(a + "/cluster.yaml"), Slurp(b + "/cluster.yaml"));
  EXPECT_EQ(Slurp(a + "/state.json"), Slurp(b + "/state.json"));
  EXPECT_FALSE(Slurp(a + "/state.json").empty());
  EXPECT_EQ(Slurp(a + "/cluster.yaml"), Slurp(c + "/cluster.yaml"));
  EXPECT_NE(Slurp(a + "/state.json"), Slurp(c + "/state.json"));
}

TEST(Generate, EveryProfileAndOneSpineLoadBack) {
  const char* cases[] = {
      "--nodes 1 --gpus-per-node 1 --nodes-per-leaf 1 --leaves-per-spine 1",
      "--nodes 10 --gpus-per-node 8 --nodes-per-leaf 4 --leaves-per-spine 4 --profile a100",
      "--nodes 12 --gpus-per-node 8 --nodes-per-leaf 4 --leaves-per-spine 2 --profile pcie "
      "--occupancy 0.5 --seed 3",
      "--nodes 6 --gpus-per-node 4 --nodes-per-leaf 3 --leaves-per-spine 1 --profile b200 "
      "--occupancy 0",
      "--nodes 9 --gpus-per-node 6 --nodes-per-leaf 3 --leaves-per-spine 3 --profile h200 "
      "--occupancy 0.9",
  };
  int i = 0;
  for (const char* args : cases) {
    const std::string dir = TempDir() + "/gen-p" + std::to_string(i++);
    Result g = RunCli(std::string("cluster generate ") + args + " --out " + dir);
    ASSERT_EQ(g.code, 0) << args << "\n" << g.err;
    Result c = RunCli("cluster check " + dir + "/cluster.yaml");
    EXPECT_EQ(c.code, 0) << args << "\n" << c.err;
    if (std::string(args).find("--occupancy") != std::string::npos) {
      std::string jobs = WriteTemp("gen-one.yaml", "jobs:\n  - {name: one, total_gpus: 1}\n");
      Result p = RunCli("place --cluster " + dir + "/cluster.yaml --jobs " + jobs + " --state " +
                        dir + "/state.json");
      EXPECT_EQ(p.code, 0) << args << "\n" << p.err;
    }
  }
  // One spine: no zone level.
  EXPECT_THAT(Slurp(TempDir() + "/gen-p1/cluster.yaml"), Not(HasSubstr("name: zone")));
}

TEST(Generate, BadArgumentsExitOneOrTwo) {
  const std::string out = " --out " + TempDir() + "/gen-bad";
  struct Case {
    const char* args;
    int code;
    const char* want;  // substring of stderr ("" = any)
  } cases[] = {
      {"--nodes 0 --nodes-per-leaf 1 --leaves-per-spine 1", 1, "--nodes"},
      {"--nodes 4 --gpus-per-node 0 --nodes-per-leaf 1 --leaves-per-spine 1", 1, "--gpus-per-node"},
      {"--nodes 4 --gpus-per-node 65 --nodes-per-leaf 1 --leaves-per-spine 1", 1,
       "--gpus-per-node"},
      {"--nodes 4 --nodes-per-leaf 0 --leaves-per-spine 1", 1, "--nodes-per-leaf"},
      {"--nodes 4 --nodes-per-leaf 1 --leaves-per-spine 0", 1, "--leaves-per-spine"},
      {"--nodes 4 --nodes-per-leaf 1 --leaves-per-spine 1 --occupancy 1", 1, "--occupancy"},
      {"--nodes 4 --nodes-per-leaf 1 --leaves-per-spine 1 --occupancy -0.1", 1, "--occupancy"},
      {"--nodes 4 --nodes-per-leaf 1 --leaves-per-spine 1 --profile dgx-h10", 1,
       "unknown profile \"dgx-h10\""},
      {"--nodes-per-leaf 1 --leaves-per-spine 1", 2, ""},
      {"--nodes x --nodes-per-leaf 1 --leaves-per-spine 1", 2, ""},
  };
  for (const Case& c : cases) {
    Result r = RunCli(std::string("cluster generate ") + c.args + out);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr(c.want)) << c.args << "\n" << r.err;
  }
  EXPECT_EQ(RunCli("cluster generate --nodes 4 --nodes-per-leaf 1 --leaves-per-spine 1").code, 2);
}

}  // namespace
