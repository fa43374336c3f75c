// Golden scheduler scripts: every tests/sched/testdata/golden/<name>.script is run through
// RunScript on the cluster its first line names, and the transcript must equal <name>.out byte
// for byte (policies.script once per policy, against policies.<policy>.out). Invariants are
// checked after every command inside RunScript. TS_UPDATE_GOLDEN=1 rewrites the .out files.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "placer/policy.h"
#include "sched/script.h"
#include "testing/golden.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const std::string kDir = std::string(TS_SOURCE_DIR) + "/tests/sched/testdata/golden/";

std::string Read(const std::string& path) { return testing::ReadGolden(path); }

const topo::Cluster& ClusterFor(const std::string& script) {
  static auto* cache = new std::map<std::string, topo::Cluster>();
  const std::string tag = "# cluster: ";
  EXPECT_EQ(script.rfind(tag, 0), 0u) << "a golden script starts with \"" << tag << "\"";
  std::string name = script.substr(tag.size(), script.find('\n') - tag.size());
  auto it = cache->find(name);
  if (it != cache->end()) return it->second;
  std::string path = std::string(TS_SOURCE_DIR) + "/" + name;
  if (name.find('/') == std::string::npos) {
    path = std::string(TS_SOURCE_DIR) + "/data/clusters/" + name;
  }
  auto c = topo::io::ReadClusterYamlFile(path);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  c->Finalize();
  return cache->emplace(name, std::move(c).value()).first->second;
}

void Check(const std::string& name, const std::string& script, const std::string& out_name) {
  auto got = RunScript(ClusterFor(script), script, name + ".script");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  testing::ExpectGolden(kDir + out_name, *got);
}

// Every script but policies.script (run once per policy below).
std::vector<std::string> SingleScripts() {
  std::vector<std::string> names = testing::GoldenNames(kDir, ".script");
  std::erase(names, "policies");
  return names;
}

class GoldenScript : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenScript, TranscriptMatches) {
  const std::string name = GetParam();
  Check(name, Read(kDir + name + ".script"), name + ".out");
}

INSTANTIATE_TEST_SUITE_P(Scheduler, GoldenScript, ::testing::ValuesIn(SingleScripts()),
                         [](const auto& info) { return info.param; });

// The glob finds every script: the fifteen this suite was written with are there.
TEST(GoldenScriptSet, EveryScriptIsFound) {
  const std::vector<std::string> names = SingleScripts();
  EXPECT_GE(names.size(), 15u);
  for (const char* n : {"preempt_backfill", "failures", "contention", "backfill_estimates"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  }
}

TEST(GoldenScriptPolicies, EachPolicyTranscriptMatches) {
  const std::string script = Read(kDir + "policies.script");
  const size_t eol = script.find('\n') + 1;
  for (const std::string& p : PolicyNames()) {
    SCOPED_TRACE(p);
    // The policy option goes after the cluster line.
    Check("policies", script.substr(0, eol) + "option policy=" + p + "\n" + script.substr(eol),
          "policies." + p + ".out");
  }
}

TEST(ScriptTest, MalformedLinesNameTheLine) {
  const topo::Cluster& c = ClusterFor("# cluster: h100-2rack.yaml\n");
  struct Case {
    std::string text, error;
  };
  const Case cases[] = {
      {"0 frobnicate", "s:1: unknown command \"frobnicate\""},
      {"0 submit a gpus=x", "s:1: submit gpus: expected an integer, got \"x\""},
      {"0 submit a", "s:1: submit: give gpus=G or tp=, dp= (and pp=)"},
      {"5 tick\n4 tick", "s:2: time goes backwards"},
      {"0 tick\noption preempt=1", "s:2: option after the first command"},
      {"option colour=red", "s:1: option colour: expected an integer, got \"red\""},
      {"option policy=fastest\n0 tick", "s:2: unknown policy \"fastest\""},
      {"0 node-health gpu999 unhealthy", "s:1: no node named \"gpu999\""},
      {"0 gpu-health gpu001 3 sick", "s:1: "},
      {"0 complete nobody", "s:1: no job named \"nobody\""},
      {"0 submit a gpus=8 job=leaf", "expected LEVEL:required or LEVEL:preferred"},
      {"0 submit a gpus=8 hide=0", "s:1: submit hide: expected a percent in [1, 100000000]"},
      {"0 submit a gpus=8 run=0", "s:1: submit run: expected seconds in [1, 1000000000]"},
  };
  for (const Case& k : cases) {
    auto r = RunScript(c, k.text, "s");
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr(k.error))) << k.text;
  }
  // A command the scheduler refuses is part of the transcript, not an error.
  auto r = RunScript(c, "0 submit a gpus=8\n0 schedule\n1 complete a\n2 complete a\n", "s");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_THAT(*r, HasSubstr("  error: job-1: cannot complete a job in state COMPLETED")) << *r;
  // Out-of-range positions are refused by the scheduler.
  r = RunScript(c, "0 nic-health gpu001 99 unhealthy\n", "s");
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(*r, HasSubstr("error: node \"gpu001\" has no NIC position 99 (8 NICs)")) << *r;
}

}  // namespace
}  // namespace toposched::sched
