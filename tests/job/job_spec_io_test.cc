#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "job/job_spec.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"

namespace toposched::job {
namespace {

using ::testing::Not;

using ::toposched::testing::HasSubstr;
using ::toposched::testing::IsOk;
using ::toposched::testing::StatusIs;

// A job file is one spec or a `jobs:` list, in YAML or JSON; every entry is checked before any
// is returned.
TEST(JobFile, OneSpecOrAJobsList) {
  auto one = ParseJobSpecsYaml("name: solo\nreplicas: 2\ngpus_per_replica: 8\n", "one.yaml");
  ASSERT_THAT(one, IsOk());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].name, "solo");
  EXPECT_EQ((*one)[0].total_gpus, 16);
  auto list = ParseJobSpecsYaml(
      "jobs:\n  - name: a\n    replicas: 1\n    gpus_per_replica: 4\n"
      "  - name: b\n    replicas: 1\n    gpus_per_replica: 2\n",
      "list.yaml");
  ASSERT_THAT(list, IsOk());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1].name, "b");
  auto json_one =
      ParseJobSpecsJson(R"({"name": "j", "replicas": 1, "gpus_per_replica": 1})", "one.json");
  ASSERT_THAT(json_one, IsOk());
  EXPECT_EQ(json_one->size(), 1u);
  auto json_list = ParseJobSpecsJson(
      R"({"jobs": [{"name": "x", "replicas": 1, "gpus_per_replica": 1},
                   {"name": "y", "replicas": 1, "gpus_per_replica": 1}]})",
      "list.json");
  ASSERT_THAT(json_list, IsOk());
  EXPECT_EQ(json_list->size(), 2u);
}

TEST(JobFile, ABadEntryRefusesTheWholeFileNamingItsLine) {
  EXPECT_THAT(ParseJobSpecsYaml("jobs:\n  - name: a\n    replicas: 1\n    gpus_per_replica: 4\n"
                                "  - name: b\n    replicas: -1\n",
                                "list.yaml"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("list.yaml:6: jobs[1].replicas")));
  EXPECT_THAT(ParseJobSpecsYaml("", "empty.yaml"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("empty job spec")));
  // A spec with a jobs key beside its own fields is one spec with an unknown key, not a list.
  EXPECT_THAT(ParseJobSpecsYaml("name: a\njobs: []\n", "mixed.yaml"),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("jobs")));
  EXPECT_THAT(ReadJobSpecsFile("/nonexistent/jobs.yaml"), StatusIs(StatusCode::kNotFound));
}

const std::string kExample = testing::SourceDir() + "/data/jobs/example-jobs.yaml";

const JobSpec* Find(const std::vector<JobSpec>& jobs, const std::string& name) {
  for (const JobSpec& j : jobs) {
    if (j.name == name) return &j;
  }
  return nullptr;
}

TEST(JobsYaml, ExampleFile) {
  auto jobs = ReadJobsFile(kExample);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_EQ(jobs->size(), 7u);

  const JobSpec* big = Find(*jobs, "llama70b-pretrain");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->user, "alice");
  EXPECT_EQ(big->queue, "research");
  EXPECT_EQ(big->priority, 100);
  EXPECT_EQ(big->replicas, 16);
  EXPECT_EQ(big->gpus_per_replica, 8);
  EXPECT_EQ(big->total_gpus, 128);
  EXPECT_EQ(big->layout.tp, 8);
  EXPECT_EQ(big->layout.pp, 4);
  EXPECT_EQ(big->layout.dp, 4);
  EXPECT_EQ(big->constraints.tp.mode, ConstraintMode::kRequired);
  EXPECT_EQ(big->constraints.tp.level, "nvlink-domain");
  EXPECT_EQ(big->constraints.job.mode, ConstraintMode::kPreferred);
  EXPECT_EQ(big->constraints.job.level, "leaf");
  EXPECT_EQ(big->constraints.gpu_model, "H100-SXM5-80GB");
  EXPECT_TRUE(big->constraints.rdma_required);
  EXPECT_EQ(big->time_limit_s, 2 * 86400);
  EXPECT_EQ(big->on_degraded, DegradedPolicy::kWait);
  EXPECT_EQ(big->layout.dp_bytes, static_cast<int64_t>(70e9 * 2 / 32));
  EXPECT_EQ(big->where.line, 6);

  const JobSpec* one = Find(*jobs, "notebook-eval");
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->total_gpus, 1);
  EXPECT_EQ(one->time_limit_s, 1800);
  EXPECT_EQ(one->on_failure, FailurePolicy::kFail);

  const JobSpec* vit = Find(*jobs, "vit-h-dp4");
  ASSERT_NE(vit, nullptr);
  EXPECT_EQ(vit->layout.dp, 4);
  EXPECT_EQ(vit->replicas, 4);
  EXPECT_EQ(vit->gpus_per_replica, 1);
  EXPECT_EQ(vit->time_limit_s, 14400);

  const JobSpec* moe = Find(*jobs, "moe-elastic");
  ASSERT_NE(moe, nullptr);
  ASSERT_TRUE(moe->elastic.has_value());
  EXPECT_EQ(moe->elastic->min_replicas, 4);
  EXPECT_EQ(moe->elastic->max_replicas, 16);
  EXPECT_EQ(moe->layout.ep, 2);
  EXPECT_EQ(moe->layout.dp_bytes, int64_t{2} << 30);
  EXPECT_EQ(moe->on_failure, FailurePolicy::kShrink);
  EXPECT_EQ(moe->time_limit_s, 36 * 3600);

  const JobSpec* ddp = Find(*jobs, "resnet-ddp");
  ASSERT_NE(ddp, nullptr);
  EXPECT_EQ(ddp->replicas, 4);
  EXPECT_EQ(ddp->gpus_per_replica, 8);
  EXPECT_EQ(ddp->layout.dp, 32);
  EXPECT_EQ(ddp->constraints.job.level, "leaf");

  // The level names match data/clusters/h100-2rack.yaml (spine, leaf).
  for (const JobSpec& j : *jobs) {
    EXPECT_TRUE(j.ValidateAgainstLevels({"spine", "leaf"}).ok()) << j.name;
  }
}

TEST(JobYaml, EveryField) {
  const std::string text = R"(name: all-fields
user: u1
queue: q1
priority: -5
replicas: 4
gpus_per_replica: 8
total_gpus: 32
layout: {tp: 4, pp: 2, dp: 4, ep: 2, tp_bytes: 1MiB, pp_bytes: 2KB, dp_bytes: 3, ep_bytes: 4GiB}
model_params: 13B
hidden_size: 5120
seq_len: 2048
micro_batch: 2
constraints:
  job: {required: spine}
  tp: {preferred: node}
  gpu_model: A100-SXM4-80GB
  rdma_required: yes
time_limit: 1d2h
elastic: {min_replicas: 2, max_replicas: 8}
on_failure: shrink
on_degraded: wait
)";
  auto s = ParseJobYaml(text, "one.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->name, "all-fields");
  EXPECT_EQ(s->user, "u1");
  EXPECT_EQ(s->queue, "q1");
  EXPECT_EQ(s->priority, -5);
  EXPECT_EQ(s->total_gpus, 32);
  EXPECT_EQ(s->layout, (Layout{4, 2, 4, 2, 1 << 20, 2000, 3, int64_t{4} << 30}));
  EXPECT_DOUBLE_EQ(s->model_params, 13e9);
  EXPECT_EQ(s->hidden_size, 5120);
  EXPECT_EQ(s->seq_len, 2048);
  EXPECT_EQ(s->micro_batch, 2);
  EXPECT_EQ(s->constraints.job.mode, ConstraintMode::kRequired);
  EXPECT_EQ(s->constraints.job.level, "spine");
  EXPECT_EQ(s->constraints.tp.mode, ConstraintMode::kPreferred);
  EXPECT_EQ(s->constraints.tp.level, "node");
  EXPECT_EQ(s->constraints.tp.where.line, 15);
  EXPECT_EQ(s->constraints.gpu_model, "A100-SXM4-80GB");
  EXPECT_TRUE(s->constraints.rdma_required);
  EXPECT_EQ(s->time_limit_s, 26 * 3600);
  EXPECT_EQ(s->elastic, (ElasticRange{2, 8}));
  EXPECT_EQ(s->on_failure, FailurePolicy::kShrink);
  EXPECT_EQ(s->on_degraded, DegradedPolicy::kWait);

  // The same spec as JSON parses to an equal spec, and so does the writer's output.
  auto again = ParseJobJson(JobSpecToJson(*s), "one.json");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *s);

  // A level unknown to the cluster is reported at its line.
  Status st = s->ValidateAgainstLevels({"leaf"});
  ASSERT_THAT(
      st, StatusIs(StatusCode::kInvalidArgument,
                   HasSubstr("one.yaml:14: constraints.job.required: unknown level \"spine\"")));
}

// A job that checkpoints: interval and restart cost, read from YAML and JSON and written back.
TEST(JobYaml, CheckpointRoundTrips) {
  auto j = ParseJobYaml("name: ckpt\ntotal_gpus: 16\ncheckpoint: {interval: 30m, restart: 5m}\n",
                        "c.yaml");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(j->checkpoint_interval_s, 1800);
  EXPECT_EQ(j->restart_cost_s, 300);
  auto back = ParseJobJson(JobSpecToJson(*j, -1), "c.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->checkpoint_interval_s, 1800);
  EXPECT_EQ(back->restart_cost_s, 300);
  auto none = ParseJobYaml("name: plain\ntotal_gpus: 8\n", "p.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->checkpoint_interval_s, 0);
  EXPECT_THAT(JobSpecToJson(*none, -1), Not(HasSubstr("checkpoint")));
}

// A job that declares its run time (wait-or-spread's estimate): read from YAML and JSON, written
// back; absent, it is not written.
TEST(JobYaml, EstimateRoundTrips) {
  auto j = ParseJobYaml("name: long\ntotal_gpus: 16\nestimate: {run_time: 10h, comm_share: 0.5}\n",
                        "e.yaml");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_TRUE(j->estimate.has_value());
  EXPECT_EQ(j->estimate->run_s, 36000);
  EXPECT_EQ(j->estimate->comm_share, 0.5);
  const std::string json = JobSpecToJson(*j, -1);
  EXPECT_THAT(json, HasSubstr("\"estimate\":{\"run_time\":\"10h\",\"comm_share\":0.5}")) << json;
  auto back = ParseJobJson(json, "e.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->estimate, j->estimate);
  auto none = ParseJobYaml("name: plain\ntotal_gpus: 8\n", "p.yaml");
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->estimate.has_value());
  EXPECT_THAT(JobSpecToJson(*none, -1), Not(HasSubstr("estimate")));
}

TEST(JobYaml, Defaults) {
  auto s = ParseJobYaml("name: tiny\nreplicas: 1\ngpus_per_replica: 1\n", "tiny.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->queue, "default");
  EXPECT_EQ(s->priority, 0);
  EXPECT_EQ(s->layout.tp, 1);
  EXPECT_EQ(s->layout.dp, 1);
  EXPECT_EQ(s->time_limit_s, 0);
  EXPECT_EQ(s->on_failure, FailurePolicy::kRequeue);
  EXPECT_EQ(s->on_degraded, DegradedPolicy::kContinue);
  EXPECT_FALSE(s->elastic.has_value());
  EXPECT_EQ(s->constraints.job.mode, ConstraintMode::kNone);
}

TEST(JobYaml, PyTorchJobWithoutWorkers) {
  auto s = ParseJobYaml("name: solo\npytorchjob: {master: {gpus: 4}}\nlayout: {tp: 4}\n", "p.yaml");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->replicas, 1);
  EXPECT_EQ(s->gpus_per_replica, 4);
  EXPECT_EQ(s->layout.dp, 1);
}

// Each case: a jobs file whose job 1 (line 5 onwards) has one problem; the error must name the
// file, the line and the field.
TEST(JobsYaml, InvalidSpecs) {
  struct Case {
    const char* body;  // job 1's fields, starting at line 5
    const char* want;  // substring of the message
  };
  const Case cases[] = {
      {"    layout: {tp: x}\n",
       "bad.yaml:5: jobs[1].layout.tp: expected a positive integer, got \"x\""},
      {"    layout: {tp: 0}\n",
       "bad.yaml:5: jobs[1].layout.tp: expected a positive integer, got \"0\""},
      {"    layout: {tp: 8, pp: 2, dp: 3}\n",
       "bad.yaml:5: jobs[1].layout.dp: tp * pp * dp = 48 but replicas * gpus_per_replica = 8"},
      {"    layout: {tp: 3}\n",
       "bad.yaml:5: jobs[1].layout: replicas * gpus_per_replica = 8 is not a multiple of tp * pp = "
       "3"},
      {"    layout: {tpp: 2}\n", "bad.yaml:5: jobs[1].layout.tpp: unknown key"},
      {"    colour: blue\n", "bad.yaml:5: jobs[1].colour: unknown key"},
      {"    priority: high\n", "bad.yaml:5: jobs[1].priority: expected an integer, got \"high\""},
      {"    time_limit: 4 hours\n", "bad.yaml:5: jobs[1].time_limit: expected a duration"},
      {"    checkpoint: {interval: 30m}\n",
       "bad.yaml:5: jobs[1].checkpoint.restart: missing (checkpoint needs interval and restart)"},
      {"    checkpoint: {interval: 0, restart: 5m}\n",
       "bad.yaml:5: jobs[1].checkpoint.interval: expected a duration"},
      {"    checkpoint: {interval: 30m, restart: 5m, every: 2}\n",
       "bad.yaml:5: jobs[1].checkpoint.every: unknown key"},
      {"    estimate: {run_time: 10h}\n",
       "bad.yaml:5: jobs[1].estimate.comm_share: missing (estimate needs run_time and "
       "comm_share)"},
      {"    estimate: {comm_share: 0.2}\n",
       "bad.yaml:5: jobs[1].estimate.run_time: missing (estimate needs run_time and comm_share)"},
      {"    estimate: {run_time: 10h, comm_share: 1.5}\n",
       "bad.yaml:5: jobs[1].estimate.comm_share: expected a number from 0 to 1, got \"1.5\""},
      {"    estimate: {run_time: 10h, comm_share: lots}\n",
       "bad.yaml:5: jobs[1].estimate.comm_share: expected a number from 0 to 1, got \"lots\""},
      {"    estimate: {run_time: 0, comm_share: 0.3}\n",
       "bad.yaml:5: jobs[1].estimate.run_time: expected a duration"},
      {"    estimate: {run_time: 20000d, comm_share: 0.3}\n",
       "bad.yaml:5: jobs[1].estimate.run_time: must be at most 1e9 s, got 20000d"},
      {"    time_limit: 1h\n    estimate: {run_time: 2h, comm_share: 0.3}\n",
       "jobs[1].estimate.run_time: run_time = 7200 s is above time_limit = 3600 s (the job would "
       "be "
       "killed first)"},
      {"    estimate: {run_time: 10h, comm_share: 0.3, gpus: 8}\n",
       "bad.yaml:5: jobs[1].estimate.gpus: unknown key"},
      {"    on_failure: retry\n",
       "bad.yaml:5: jobs[1].on_failure: expected requeue, shrink or fail, got \"retry\""},
      {"    on_degraded: maybe\n", "bad.yaml:5: jobs[1].on_degraded: expected continue or wait"},
      {"    constraints: {tp: {required: leaf, preferred: node}}\n",
       "bad.yaml:5: jobs[1].constraints.tp: give either required or preferred"},
      {"    constraints: {tp: {}}\n",
       "bad.yaml:5: jobs[1].constraints.tp: expected {required: LEVEL} or {preferred: LEVEL}"},
      {"    constraints: {job: {required: [leaf]}}\n",
       "bad.yaml:5: jobs[1].constraints.job.required: expected a string, got a list"},
      {"    constraints:\n      rdma_required: maybe\n",
       "bad.yaml:6: jobs[1].constraints.rdma_required: expected true or false, got \"maybe\""},
      {"    elastic: {min_replicas: 2}\n", "bad.yaml:5: jobs[1].elastic.max_replicas: missing"},
      {"    elastic: {min_replicas: 4, max_replicas: 2}\n",
       "bad.yaml:5: jobs[1].elastic.min_replicas: min_replicas = 4 is above max_replicas = 2"},
      {"    elastic: {min_replicas: 2, max_replicas: 4}\n",
       "bad.yaml:5: jobs[1].elastic.min_replicas: min_replicas = 2 is above replicas = 1"},
      {"    on_failure: shrink\n", "bad.yaml:5: jobs[1].on_failure: shrink needs an elastic range"},
      {"    model_params: lots\n", "bad.yaml:5: jobs[1].model_params: expected a parameter count"},
      {"    layout: {dp_bytes: -1}\n",
       "bad.yaml:5: jobs[1].layout.dp_bytes: expected a byte count"},
      {"    layout: {ep: 3}\n",
       "bad.yaml:5: jobs[1].layout.ep: expert parallelism is carved out of DP"},
      {"    pytorchjob: {master: {gpus: 8}}\n",
       "bad.yaml:5: jobs[1].pytorchjob: cannot be combined with replicas"},
      {"    total_gpus: 16\n",
       "bad.yaml:6: jobs[1].gpus_per_replica: replicas * gpus_per_replica = 8 but total_gpus = 16"},
      {"    queue: \"\"\n", "bad.yaml:5: jobs[1].queue: must not be empty"},
      {"    user: \"bad user\"\n", "bad.yaml:5: jobs[1].user: bad user name"},
      {"    replicas: 2\n", "bad.yaml:5: jobs[1].replicas: key given twice (first at line 4)"},
      {"    hidden_size: 99999999\n", "bad.yaml:5: jobs[1].hidden_size: must be at most 1048576"},
  };
  // Lines: 1 jobs:, 2 job 0, 3 job 1's name, 4 replicas, 5 the case, then gpus_per_replica.
  for (const Case& c : cases) {
    const std::string text =
        std::string("jobs:\n  - {name: first, replicas: 1, gpus_per_replica: 1}\n") +
        "  - name: second\n" + "    replicas: 1\n" + c.body + "    gpus_per_replica: 8\n";
    auto r = ParseJobsYaml(text, "bad.yaml");
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.want))) << c.body;
  }
}

TEST(JobsYaml, FileLevelErrors) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {"", "f.yaml: empty jobs file"},
      {"jobs: 3\n", "f.yaml:1: jobs: expected a list of job specs, got a scalar"},
      {"job:\n  - name: a\n", "f.yaml:1: job: unknown key"},
      {"jobs:\n  - 7\n", "f.yaml:2: jobs[0]: expected a map, got a scalar"},
      {"jobs:\n  - {replicas: 1, gpus_per_replica: 1}\n", "f.yaml:2: jobs[0].name: missing"},
      {"jobs:\n  - {name: a, replicas: 1, gpus_per_replica: 1}\n  - {name: a, replicas: 1, "
       "gpus_per_replica: 1}\n",
       "f.yaml:3: jobs[1].name: duplicate job name \"a\" (first at line 2)"},
      {"jobs:\n  - {name: \"a b\", replicas: 1, gpus_per_replica: 1}\n", "f.yaml:2: jobs[0].name:"},
      {"jobs:\n  - {name: a}\n", "f.yaml:2: jobs[0].replicas: missing"},
      {"jobs: [\n", "f.yaml:"},
      {"jobs:\n  - name: a\n    : x\n", "f.yaml:"},
  };
  for (const Case& c : cases) {
    auto r = ParseJobsYaml(c.text, "f.yaml");
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.want))) << c.text;
  }
  auto empty = ParseJobsYaml("jobs: []\n", "f.yaml");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(JobJson, ErrorsNameTheJsonPath) {
  struct Case {
    const char* text;
    const char* want;
  };
  const Case cases[] = {
      {R"({"name": "a", "replicas": 1, "gpus_per_replica": 8, "layout": {"tp": "x"}})",
       "j.json: $.layout.tp: expected a positive integer, got a string \"x\""},
      {R"({"name": "a", "replicas": 1, "gpus_per_replica": 8, "layout": {"tp": 3}})",
       "j.json: $.layout: replicas * gpus_per_replica = 8 is not a multiple of tp * pp = 3"},
      {R"({"name": "a", "replicas": 1, "gpus_per_replica": 8, "extra": 1})",
       "j.json: $.extra: unknown key"},
      {R"({"name": "a", "name": "b"})", "j.json: $.name: key given twice"},
      {R"({"name": "a", "constraints": {"tp": {"required": 5, "required": 6}}})",
       "j.json: $.constraints.tp.required: key given twice"},
      {R"({"name": "a", "replicas": 1, "gpus_per_replica": 1, "constraints": {"tp": []}})",
       "j.json: $.constraints.tp: expected a map, got a list"},
      {R"({"name": "a", "replicas": 1, "gpus_per_replica": 1, "time_limit": true})",
       "j.json: $.time_limit: expected a duration"},
      {R"({"name": "a",)", "j.json: not valid JSON"},
      {R"([1, 2])", "j.json: $: expected a map, got a list"},
      // JSON types as docs/openapi.yaml gives them (YAML stays untyped): the body that was
      // accepted before, field by field.
      {R"({"name": 12345})", "j.json: $.name: expected a string, got a number 12345"},
      {R"({"name": "a", "total_gpus": "2"})",
       "j.json: $.total_gpus: expected a positive integer, got a string \"2\""},
      {R"({"name": "a", "total_gpus": 2, "priority": "7"})",
       "j.json: $.priority: expected an integer, got a string \"7\""},
      {R"({"name": "a", "total_gpus": 2, "constraints": {"rdma_required": "yes"}})",
       "j.json: $.constraints.rdma_required: expected true or false, got a string \"yes\""},
      {R"({"name": "a", "total_gpus": 2, "user": true})",
       "j.json: $.user: expected a string, got a boolean true"},
  };
  for (const Case& c : cases) {
    auto r = ParseJobJson(c.text, "j.json");
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.want))) << c.text;
  }
  auto jobs = ParseJobsJson(R"({"jobs": [{"name": "a", "replicas": 1, "gpus_per_replica": 1},
      {"name": "b", "replicas": "two"}]})",
                            "js.json");
  ASSERT_THAT(jobs,
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("js.json: $.jobs[1].replicas: expected a positive integer")));
}

TEST(JobJson, RoundTripOfTheExample) {
  auto jobs = ReadJobsFile(kExample);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  for (const JobSpec& j : *jobs) {
    const std::string text = JobSpecToJson(j);
    auto back = ParseJobJson(text, "rt.json");
    ASSERT_TRUE(back.ok()) << j.name << ": " << back.status().ToString() << "\n" << text;
    EXPECT_EQ(*back, j) << text;
    EXPECT_EQ(JobSpecToJson(*back), text);
    // JSON is YAML too: the single-spec YAML reader takes the writer's output.
    auto as_yaml = ParseJobYaml(text, "rt.yaml");
    ASSERT_TRUE(as_yaml.ok()) << as_yaml.status().ToString();
    EXPECT_EQ(*as_yaml, j);
  }
  auto all = ParseJobsJson(JobsToJson(*jobs), "all.json");
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, *jobs);
}

TEST(Hostile, RandomBytesNeverThrow) {
  std::mt19937 rng(12345);
  const std::string seed = testing::ReadFileText(kExample);
  for (int i = 0; i < 400; ++i) {
    std::string text;
    if (i % 2 == 0) {
      const int n = static_cast<int>(rng() % 512);
      for (int k = 0; k < n; ++k) text.push_back(static_cast<char>(rng() % 256));
    } else {
      text = seed;  // mutate the real file: flips, cuts, inserts
      for (int k = 0; k < 8; ++k) {
        const size_t pos = rng() % text.size();
        switch (rng() % 3) {
          case 0:
            text[pos] = static_cast<char>(rng() % 256);
            break;
          case 1:
            text.erase(pos, rng() % 16);
            break;
          default:
            text.insert(pos, 1, "{}[]:,-\"'&*!|>\n "[rng() % 16]);
        }
        if (text.empty()) text = "x";
      }
    }
    EXPECT_NO_THROW({
      auto a = ParseJobsYaml(text, "fuzz.yaml");
      auto b = ParseJobYaml(text, "fuzz.yaml");
      auto c = ParseJobJson(text, "fuzz.json");
      auto d = ParseJobsJson(text, "fuzz.json");
      if (a.ok()) {
        for (const JobSpec& j : *a) EXPECT_TRUE(j.Validate().ok()) << j.name;
      }
    });
  }
}

TEST(Hostile, DeepNestingAndAliases) {
  const std::string deep_yaml = std::string(100000, '[') + std::string(100000, ']');
  const std::string deep_json =
      "{\"name\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  std::string deep_map = "name:\n";
  for (int i = 0; i < 200; ++i) deep_map += std::string(2 * i + 2, ' ') + "a:\n";
  // Billion laughs: each alias doubles the tree.
  std::string laughs = "a0: &a0 [x, x]\n";
  for (int i = 1; i < 40; ++i) {
    laughs += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [*a" +
              std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + "]\n";
  }
  for (const std::string& t : {deep_yaml, deep_map, laughs}) {
    EXPECT_NO_THROW({
      auto r = ParseJobsYaml(t, "deep.yaml");
      EXPECT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr("deep.yaml:")));
      auto s = ParseJobYaml(t, "deep.yaml");
      EXPECT_THAT(s, StatusIs(StatusCode::kInvalidArgument, HasSubstr("deep.yaml:")));
    });
  }
  for (const std::string& t : {deep_json, deep_yaml}) {
    EXPECT_NO_THROW({
      auto r = ParseJobJson(t, "deep.json");
      ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr("deep.json")));
    });
  }
  auto r = ParseJobJson(deep_json, "deep.json");
  EXPECT_THAT(r.status().message(), HasSubstr("nested deeper than 64")) << r.status().message();
}

TEST(Hostile, ManyKeysAndLongLists) {
  std::string wide = "{";
  for (int i = 0; i < 100000; ++i) wide += (i ? ",\"k" : "\"k") + std::to_string(i) + "\": 1";
  wide += "}";
  auto r = ParseJobJson(wide, "wide.json");
  ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr("unknown key")));
  std::string list = "jobs:\n";
  for (int i = 0; i < 2000; ++i) {
    list += "  - {name: j" + std::to_string(i) + ", replicas: 1, gpus_per_replica: 1}\n";
  }
  auto jobs = ParseJobsYaml(list, "many.yaml");
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  EXPECT_EQ(jobs->size(), 2000u);
}

TEST(ReadJobsFile, Missing) {
  auto r = ReadJobsFile("/nonexistent/jobs.yaml");
  ASSERT_THAT(r, StatusIs(StatusCode::kNotFound, HasSubstr("/nonexistent/jobs.yaml: cannot read")));
}

}  // namespace
}  // namespace toposched::job
