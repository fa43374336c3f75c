// `toposched diagnose` through the real binary: text and JSON reports, the topology tie-in, and
// exit codes for text that is no job log and for files that cannot be read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"

namespace {

using ::toposched::testing::HasSubstr;

using namespace toposched::cli_testing;  // NOLINT: RunCli, WriteTemp

const std::string kLogs = std::string(TS_SOURCE_DIR) + "/data/interruption-logs/";

TEST(CliDiagnose, JsonReportTiesASocketFallbackToTheNode) {
  Result r = RunCli("diagnose train-7 --json --log " + kLogs +
                    "1-socket-fallback-libibverbs-missing-detectron2-4730.log --cluster " +
                    TS_SOURCE_DIR + "/data/clusters/h100-2rack.yaml --node gpu017");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["job"], "train-7");
  ASSERT_FALSE(j["causes"].empty());
  const auto& top = j["causes"][0];
  EXPECT_EQ(top["category"], "nccl_transport_fallback");
  EXPECT_GT(top["confidence"].get<double>(), 0.5);
  ASSERT_FALSE(top["evidence"].empty());
  EXPECT_TRUE(top["evidence"][0].contains("file"));
  EXPECT_GT(top["evidence"][0]["line"].get<int>(), 1);
  EXPECT_THAT(top["topology"].get<std::string>(), HasSubstr("mlx5_0"));
  EXPECT_THAT(top["fix"].get<std::string>(), HasSubstr("NCCL_IB_HCA="));
}

// Offline placement: the job's allocation in a saved cluster state gives the node.
TEST(CliDiagnose, StateGivesTheJobsNodeOffline) {
  const std::string state = WriteTemp(
      "diag-state.json",
      R"({"version": 1, "cluster": "h100-2rack", "allocations": [{"id": 7, "nodes": [)"
      R"({"node": "gpu021", "gpus": [0, 1, 2, 3, 4, 5, 6, 7]}, {"node": "gpu022", "gpus": [0, 1]}]}]})");
  const std::string args = " --log " + kLogs +
                           "1-socket-fallback-libibverbs-missing-detectron2-4730.log --cluster " +
                           TS_SOURCE_DIR + "/data/clusters/h100-2rack.yaml --state " + state;
  Result r = RunCli("diagnose job-7 --json" + args);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["causes"].empty());
  EXPECT_THAT(j["causes"][0]["topology"].get<std::string>(), HasSubstr("node gpu021's"))
      << j["causes"][0]["topology"];
  // No such allocation: exit 1, named; --state without --cluster: usage.
  Result missing = RunCli("diagnose job-8" + args);
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("no allocation 8")) << missing.err;
  EXPECT_EQ(RunCli("diagnose job-7 --log " + kLogs +
                   "1-socket-fallback-libibverbs-missing-detectron2-4730.log --state " + state)
                .code,
            2);
}

TEST(CliDiagnose, TextReportListsCausesWithEvidence) {
  Result r = RunCli("diagnose --log " + kLogs +
                    "2-connection-closed-by-remote-peer-masking-gpu-oom-narval-nccl-1235.log");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("1. gpu_oom")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("peer_failure")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("Cuda failure 'out of memory'")) << r.out;
}

TEST(CliDiagnose, NoJobLogGivesNoKnownCause) {
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes.push_back(static_cast<char>((i * 7919) % 256));
  for (const std::string& text : {std::string(), bytes, std::string("hello world\n")}) {
    const std::string path = WriteTemp("nolog.txt", text);
    Result r = RunCli("diagnose --log " + path);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("no known cause")) << r.out;
    Result j = RunCli("diagnose --json --log " + path);
    ASSERT_EQ(j.code, 0) << j.err;
    EXPECT_TRUE(nlohmann::json::parse(j.out)["causes"].empty());
  }
}

// What an unknown read, in both outputs (a torchrun summary that says only "exitcode: 1",
// pytorch/torchtitan#620, from data/diagnosis-corpus/dev).
const std::string kExitOne = std::string(TS_SOURCE_DIR) +
                             "/data/diagnosis-corpus/dev/"
                             "childfailederror-rank1-exitcode1-error-file-llama3-8b-optimizer-oom-"
                             "torchtitan-620.log";

TEST(CliDiagnose, NoKnownCauseSaysWhyInText) {
  Result r = RunCli("diagnose --log " + kExitOne);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("why none decided: "), std::string::npos) << r.out;
}

TEST(CliDiagnose, NoKnownCauseCountsItsKindsInJson) {
  Result r = RunCli("diagnose --json --log " + kExitOne);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["no_cause"]["kinds"]["child_failed"].get<int>(), 1);
}

TEST(CliDiagnose, NoKnownCauseNamesItsCandidatesInJson) {
  Result r = RunCli("diagnose --json --log " + kExitOne);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["no_cause"]["candidates"][0]["kind"].get<std::string>(), "child_failed");
}

TEST(CliDiagnose, EachCauseNamesItsRuleInJson) {
  Result r = RunCli("diagnose --json --log " + kLogs +
                    "2-connection-closed-by-remote-peer-masking-gpu-oom-narval-nccl-1235.log");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["causes"][0]["rule"].get<std::string>(), "gpu_oom:cuda_oom");
}

// Two logs of one job (pytorch/pytorch#150916): the JSON merges their cited lines into one
// timeline and says what each log saw first.
const std::string kNodeA = std::string(TS_SOURCE_DIR) +
                           "/data/diagnosis-corpus/dev/"
                           "elastic-agent-killed-sigterm-15-death-signal-2node-g4dn-pytorch-150916."
                           "nodeA.log";
const std::string kNodeB = kNodeA.substr(0, kNodeA.size() - 9) + "nodeB.log";

TEST(CliDiagnose, SeveralLogsGiveOneTimelineInJson) {
  Result r = RunCli("diagnose --json --log " + kNodeA + " --log " + kNodeB);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["timeline"][0]["role"].get<std::string>(), "consequence");
}

TEST(CliDiagnose, SeveralLogsSayWhatEachSawFirstInJson) {
  Result r = RunCli("diagnose --json --log " + kNodeA + " --log " + kNodeB);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NE(j["logs"][1]["first_seen"]["text"].get<std::string>().find("Received 15"),
            std::string::npos);
}

TEST(CliDiagnose, SeveralLogsPrintTheTimeline) {
  Result r = RunCli("diagnose --log " + kNodeA + " --log " + kNodeB);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("(first_failure, seen first): W0409 07:28:49.530000"), std::string::npos)
      << r.out;
}

TEST(CliDiagnose, UnreadableFileAndBadUsage) {
  Result missing = RunCli("diagnose --log /nonexistent/job.log");
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/job.log")) << missing.err;
  EXPECT_EQ(RunCli("diagnose").code, 2);
  EXPECT_EQ(RunCli("diagnose --log " + kLogs + "EXPECTED.tsv --node gpu017").code, 2);
  Result bad_node = RunCli("diagnose --log " + kLogs + "EXPECTED.tsv --cluster " + TS_SOURCE_DIR +
                           "/data/clusters/h100-2rack.yaml --node nope");
  EXPECT_EQ(bad_node.code, 1);
  EXPECT_THAT(bad_node.err, HasSubstr("nope"));
}

}  // namespace
