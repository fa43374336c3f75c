// The client subcommands against a real `toposched serve` child: the output contract of submit
// and queue, and the other commands' answers and exit codes.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "api/api_testing.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using ::toposched::testing::HasSubstr;

using nlohmann::json;

struct CliRun {
  int code = -1;
  std::string out, err;
};

class CliClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = testing_api::MakeTempDir("toposched-cli-client");
    testing_api::WriteFile(dir_ + "/token", "cli-client-token-0123456789\n");
    serve_ = new testing_api::ServeProcess(
        TS_CLI, std::string(TS_SOURCE_DIR) + "/data/clusters/h100-2rack.yaml", dir_ + "/state.db",
        dir_ + "/token", dir_);
    ASSERT_TRUE(serve_->Start()) << serve_->log(0);
  }
  static void TearDownTestSuite() {
    delete serve_;
    testing_api::RemoveDir(dir_);
  }

  static CliRun Cli(const std::string& args, bool with_token = true) {
    static int n = 0;
    const std::string out = dir_ + "/out" + std::to_string(n);
    const std::string err = dir_ + "/err" + std::to_string(n++);
    std::string cmd = std::string(TS_CLI) + " " + args +
                      " --server http://127.0.0.1:" + std::to_string(serve_->port()) +
                      (with_token ? " --token-file " + dir_ + "/token" : "") + " >" + out + " 2>" +
                      err;
    const int st = std::system(cmd.c_str());
    return {WEXITSTATUS(st), testing_api::ReadFile(out), testing_api::ReadFile(err)};
  }

  static std::string dir_;
  static testing_api::ServeProcess* serve_;
};
std::string CliClientTest::dir_;
testing_api::ServeProcess* CliClientTest::serve_ = nullptr;

TEST_F(CliClientTest, SubmitQueueShowExplainCancelNodesEvents) {
  const std::string spec = dir_ + "/job.yaml";
  testing_api::WriteFile(spec,
                         "name: cli-llama\nuser: alice\nqueue: research\npriority: 10\n"
                         "replicas: 2\ngpus_per_replica: 8\nlayout: {tp: 8, dp: 2}\n"
                         "model_params: 8B\ntime_limit: 2h\n");
  CliRun sub = Cli("submit " + spec + " --json");
  ASSERT_EQ(sub.code, 0) << sub.err;
  json id = json::parse(sub.out);
  ASSERT_TRUE(id.is_object());
  ASSERT_TRUE(id["id"].is_number_integer()) << sub.out;
  const std::string jid = std::to_string(id["id"].get<int64_t>());

  CliRun plain = Cli("submit " + spec);
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(plain.out, std::to_string(id["id"].get<int64_t>() + 1) + "\n");

  CliRun q = Cli("queue --json");
  ASSERT_EQ(q.code, 0) << q.err;
  json jobs = json::parse(q.out)["jobs"];
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0]["id"].get<int64_t>(), id["id"].get<int64_t>());
  EXPECT_EQ(jobs[0]["name"], "cli-llama");
  EXPECT_TRUE(jobs[0]["state"] == "PENDING" || jobs[0]["state"] == "RUNNING");

  CliRun table = Cli("queue");
  ASSERT_EQ(table.code, 0);
  EXPECT_THAT(table.out, HasSubstr("JOBID"));
  EXPECT_THAT(table.out, HasSubstr("cli-llama"));

  CliRun show = Cli("show job-" + jid);
  ASSERT_EQ(show.code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("name:")) << show.out;
  EXPECT_THAT(show.out, HasSubstr("cli-llama")) << show.out;
  EXPECT_THAT(show.out, HasSubstr("submitted"));

  CliRun ex = Cli("explain " + jid + " --json");
  ASSERT_EQ(ex.code, 0) << ex.err;
  EXPECT_FALSE(json::parse(ex.out)["explanation"].get<std::string>().empty());

  CliRun nodes = Cli("nodes --json");
  ASSERT_EQ(nodes.code, 0);
  EXPECT_EQ(json::parse(nodes.out)["nodes"].size(), 32u);
  CliRun sinfo = Cli("nodes");
  EXPECT_THAT(sinfo.out, HasSubstr("gpu001"));

  CliRun cancel = Cli("cancel " + jid);
  ASSERT_EQ(cancel.code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "job-" + jid + " CANCELLED\n");
  CliRun again = Cli("cancel " + jid);
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, HasSubstr("HTTP 409")) << again.err;

  CliRun ev = Cli("events --job " + jid + " --json");
  ASSERT_EQ(ev.code, 0);
  EXPECT_EQ(json::parse(ev.out)["events"].back()["to"], "CANCELLED");

  CliRun all = Cli("queue --all --json");
  EXPECT_EQ(json::parse(all.out)["jobs"].size(), 2u);
  CliRun active = Cli("queue --json");
  EXPECT_EQ(json::parse(active.out)["jobs"].size(), 1u);
}

TEST_F(CliClientTest, DrainAndResumeANode) {
  CliRun d = Cli("drain gpu005 --reason maintenance");
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_EQ(d.out, "gpu005 drained\n");
  json nodes = json::parse(Cli("nodes --json").out)["nodes"];
  EXPECT_EQ(nodes[4]["name"], "gpu005");
  EXPECT_EQ(nodes[4]["drained"], true);
  CliRun r = Cli("resume gpu005");
  ASSERT_EQ(r.code, 0) << r.err;
  nodes = json::parse(Cli("nodes --json").out)["nodes"];
  EXPECT_EQ(nodes[4]["drained"], false);
  CliRun bad = Cli("drain gpu999");
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("HTTP 404")) << bad.err;
}

// `toposched agent`: --once sends the node's topology; left running, it sends again when what it
// finds changes (here: the file it reads) and exits 0 on SIGTERM; a topology of another GPU count
// and a bad interval are clear errors.
TEST_F(CliClientTest, AgentSendsTheNodesTopologyAndAgainWhenItChanges) {
  const std::string samples = std::string(TS_SOURCE_DIR) + "/data/samples/nvidia-smi/";
  const std::string pcie = samples + "09-8gpu-pcie-all-sys-2numa-mlsys-tutorial.txt";
  const std::string dgx = samples + "24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";
  CliRun once = Cli("agent --once --node gpu032 --topo " + pcie);
  ASSERT_EQ(once.code, 0) << once.err;
  EXPECT_EQ(once.out, "sent the topology of gpu032: 8 GPUs, 0 NICs\n");
  auto nics = [] {
    httplib::Client c("127.0.0.1", serve_->port());
    auto r = c.Get("/api/v1/nodes/gpu032/topology");
    return r && r->status == 200 ? json::parse(r->body)["topology"]["nics"].size() : size_t{99};
  };
  EXPECT_EQ(nics(), 0u);

  // Running: the file changes under it, and the change is sent at the next check.
  const std::string file = dir_ + "/agent-topo.txt";
  testing_api::WriteFile(file, testing_api::ReadFile(pcie));
  const std::string out = dir_ + "/agent.out", pid = dir_ + "/agent.pid";
  const std::string cmd = std::string(TS_CLI) + " agent --interval 1 --node gpu032 --topo " + file +
                          " --server http://127.0.0.1:" + std::to_string(serve_->port()) +
                          " --token-file " + dir_ + "/token >" + out + " 2>&1 & echo $! >" + pid;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  for (int i = 0; i < 100 && testing_api::ReadFile(out).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  testing_api::WriteFile(file, testing_api::ReadFile(dgx));
  for (int i = 0; i < 100 && nics() != 8u; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(nics(), 8u);
  ASSERT_EQ(std::system(("kill -TERM $(cat " + pid + ")").c_str()), 0);
  for (int i = 0; i < 100 && std::system(("kill -0 $(cat " + pid + ") 2>/dev/null").c_str()) == 0;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(testing_api::ReadFile(out),
            "sent the topology of gpu032: 8 GPUs, 0 NICs\n"
            "sent the topology of gpu032: 8 GPUs, 8 NICs (changed)\n");

  CliRun other =
      Cli("agent --once --node gpu032 --topo " + samples + "07a-2gpu-nv2-workstation-stas00.txt");
  EXPECT_EQ(other.code, 1);
  EXPECT_THAT(other.err, HasSubstr("2 GPUs, the cluster model has 8")) << other.err;
  CliRun interval = Cli("agent --interval 0 --node gpu032");
  EXPECT_EQ(interval.code, 1);
  EXPECT_THAT(interval.err, HasSubstr("--interval")) << interval.err;
}

TEST_F(CliClientTest, ErrorsAreClearAndExitNonZero) {
  const std::string spec = dir_ + "/ok.yaml";
  testing_api::WriteFile(spec, "name: tokenless\ntotal_gpus: 1\n");
  CliRun no_token = Cli("submit " + spec, false);
  EXPECT_EQ(no_token.code, 1);
  EXPECT_THAT(no_token.err, HasSubstr("HTTP 401")) << no_token.err;

  const std::string bad = dir_ + "/bad.yaml";
  testing_api::WriteFile(bad, "name: bad\ntotal_gpus: -3\n");
  CliRun b = Cli("submit " + bad);
  EXPECT_EQ(b.code, 1);
  EXPECT_THAT(b.err, HasSubstr("bad.yaml:2")) << b.err;

  CliRun missing = Cli("show 4242");
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("HTTP 404")) << missing.err;

  // Nobody listens on port 1: a clear "cannot reach" after the client's retries.
  const std::string err = dir_ + "/down.err";
  const int st = std::system(
      (std::string(TS_CLI) + " queue --server http://127.0.0.1:1 2>" + err + " >/dev/null")
          .c_str());
  EXPECT_EQ(WEXITSTATUS(st), 1);
  EXPECT_THAT(testing_api::ReadFile(err), HasSubstr("cannot reach http://127.0.0.1:1"));
}

// `diagnose JOB --server`: the job's own events from the daemon are the evidence, tied to the
// node it ran on through the daemon's cluster model (no local files).
TEST_F(CliClientTest, DiagnoseReadsTheJobFromTheDaemon) {
  const std::string spec = dir_ + "/diag.yaml";
  testing_api::WriteFile(spec,
                         "name: diag-me\nuser: bob\nreplicas: 1\ngpus_per_replica: 8\n"
                         "layout: {tp: 8}\nmodel_params: 8B\non_failure: requeue\n");
  CliRun sub = Cli("submit " + spec + " --json");
  ASSERT_EQ(sub.code, 0) << sub.err;
  const std::string id = std::to_string(json::parse(sub.out)["id"].get<int64_t>());
  std::string node;
  for (int i = 0; i < 200 && node.empty(); ++i) {
    CliRun show = Cli("show " + id + " --json");
    const json j = json::parse(show.out, nullptr, false);
    if (j.is_object() && j["placement"].is_object()) node = j["placement"]["nodes"][0]["node"];
    if (node.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(node.empty()) << "the job never started";
  httplib::Client http("127.0.0.1", serve_->port());
  auto r = http.Post(
      "/api/v1/health", {{"Authorization", "Bearer cli-client-token-0123456789"}},
      json{
          {"node", node}, {"component", "node"}, {"health", "unhealthy"}, {"reason", "PSU failure"}}
          .dump(),
      "application/json");
  ASSERT_TRUE(r && r->status == 200) << (r ? r->body : "no answer");

  CliRun d = Cli("diagnose " + id + " --json");
  ASSERT_EQ(d.code, 0) << d.err;
  const json j = json::parse(d.out);
  ASSERT_FALSE(j["causes"].empty()) << d.out;
  const json& top = j["causes"][0];
  EXPECT_EQ(top["category"], "node_failure") << d.out;
  EXPECT_THAT(top["summary"].get<std::string>(), HasSubstr("node " + node)) << d.out;
  EXPECT_THAT(top["fix"].get<std::string>(), HasSubstr("toposched drain " + node));
  EXPECT_THAT(top["evidence"][0]["file"].get<std::string>(), HasSubstr("/api/v1/jobs/" + id));
  EXPECT_THAT(top["evidence"][0]["text"].get<std::string>(),
              HasSubstr("NODE_FAIL: node " + node + " unhealthy (PSU failure)"))
      << d.out;
  CliRun text = Cli("diagnose " + id);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("1. node_failure")) << text.out;
  CliRun none = Cli("diagnose");
  EXPECT_EQ(none.code, 2);
  EXPECT_THAT(none.err, HasSubstr("--server needs the JOB")) << none.err;
  CliRun missing = Cli("diagnose 99999");
  EXPECT_EQ(missing.code, 1);
}

// A Kubernetes pod group (its first pod filtered through the served extender) is a job in the one
// queue: `queue` lists it beside REST jobs, `--json` with "source": "kubernetes" and its gang.
TEST_F(CliClientTest, QueueListsPodGroupsBesideRestJobs) {
  httplib::Client cli("127.0.0.1", serve_->port());
  json pod = {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", "cli-gang-0"},
        {"namespace", "research"},
        {"uid", "uid-cli-gang-0"},
        {"labels", {{"toposched.io/pod-group", "cli-gang"}}},
        {"annotations", {{"toposched.io/group-size", "2"}}}}},
      {"spec",
       {{"priority", 5},
        {"containers",
         {{{"name", "trainer"}, {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}}}}};
  const httplib::Headers auth = {{"Authorization", "Bearer cli-client-token-0123456789"}};
  auto f =
      cli.Post("/extender/filter", auth,
               json{{"Pod", pod}, {"NodeNames", {"gpu001", "gpu002"}}}.dump(), "application/json");
  ASSERT_TRUE(f && f->status == 200) << (f ? f->body : "no answer");
  CliRun q = Cli("queue --json");
  ASSERT_EQ(q.code, 0) << q.err;
  const json jobs = json::parse(q.out)["jobs"];
  int groups = 0, rest = 0;
  for (const json& j : jobs) {
    if (j["source"] == "kubernetes") {
      ++groups;
      EXPECT_EQ(j["pod_group"], "research/cli-gang");
      EXPECT_EQ(j["queue"], "research");
      EXPECT_EQ(j["priority"], 5);
      EXPECT_EQ(j["gpus"], 16);
    } else {
      EXPECT_EQ(j["source"], "rest");
      ++rest;
    }
  }
  EXPECT_EQ(groups, 1);
  CliRun table = Cli("queue");
  ASSERT_EQ(table.code, 0);
  EXPECT_THAT(table.out, HasSubstr("SOURCE")) << table.out;
  EXPECT_THAT(table.out, HasSubstr("research/cli-gang")) << table.out;
  EXPECT_THAT(table.out, HasSubstr("kubernetes")) << table.out;
}

// The jobs file the demo places (a `jobs:` list) is submitted whole: one id per line in file
// order, or {"ids": [...]} with --json; a list with one bad entry submits nothing and names the
// entry's line.
TEST_F(CliClientTest, SubmitTakesAJobsListAllOrNothing) {
  // The suite's tests share one daemon: count the queue before, so that jobs other tests left
  // there do not count.
  const auto queued = [&] {
    CliRun q = Cli("queue --json");
    EXPECT_EQ(q.code, 0) << q.err;
    return q.code == 0 ? json::parse(q.out)["jobs"] : json::array();
  };
  const size_t before = queued().size();
  const std::string jobs = std::string(TS_SOURCE_DIR) + "/data/jobs/example-jobs.yaml";
  CliRun plain = Cli("submit " + jobs);
  ASSERT_EQ(plain.code, 0) << plain.err;
  std::vector<int64_t> ids;
  std::istringstream lines(plain.out);
  for (std::string l; std::getline(lines, l);) ids.push_back(std::stoll(l));
  ASSERT_GE(ids.size(), 5u) << plain.out;
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(ids[i], ids[i - 1] + 1);
  const json listed = queued();
  ASSERT_EQ(listed.size(), before + ids.size());
  std::string first_name;
  for (const json& j : listed) {
    if (j["id"] == ids[0]) first_name = j["name"].get<std::string>();
  }
  EXPECT_EQ(first_name, "llama70b-pretrain");

  CliRun js = Cli("submit " + jobs + " --json");
  ASSERT_EQ(js.code, 0) << js.err;
  const json got = json::parse(js.out);
  ASSERT_TRUE(got["ids"].is_array()) << js.out;
  EXPECT_EQ(got["ids"].size(), ids.size());
  EXPECT_EQ(got["ids"][0].get<int64_t>(), ids.back() + 1);

  const std::string bad = dir_ + "/bad-list.yaml";
  testing_api::WriteFile(bad,
                         "jobs:\n  - name: fine\n    replicas: 1\n    gpus_per_replica: 8\n"
                         "  - name: broken\n    replicas: -1\n");
  CliRun b = Cli("submit " + bad);
  EXPECT_EQ(b.code, 1);
  EXPECT_THAT(b.err, HasSubstr("bad-list.yaml:6")) << b.err;
  EXPECT_TRUE(b.out.empty()) << b.out;
  EXPECT_EQ(queued().size(), before + 2 * ids.size()) << "the bad list added none";
}

}  // namespace
}  // namespace toposched::api
