// Synthetic LLM-era traces: the built-in mixes load, a seed fixes the bytes, the CSV reads back
// through the generic reader, the drawn shares match the mix, layouts are valid, and a broken
// mix file names its line.
#include "sim/trace_generate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "sim/trace_spec.h"
#include "testing/status_matchers.h"

namespace toposched::sim {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

TraceMix Builtin(const std::string& name) {
  auto mixes = ParseMixes(BuiltinMixesYaml(), "mixes.yaml");
  EXPECT_TRUE(mixes.ok()) << mixes.status().ToString();
  if (!mixes.ok()) return {};
  auto m = FindMix(*mixes, name);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? *m : TraceMix{};
}

GeneratedTrace Generate(const TraceMix& mix, int64_t jobs, int64_t seed) {
  TraceGenOptions o;
  o.mix = mix.name;
  o.jobs = jobs;
  o.seed = seed;
  auto t = GenerateTrace(mix, o);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : GeneratedTrace{};
}

TEST(TraceGenerateTest, BuiltinMixesLoad) {
  for (const char* name : {"llm", "kalos"}) {
    TraceMix m = Builtin(name);
    EXPECT_EQ(m.name, name);
    EXPECT_EQ(m.classes.size(), 3u);
    EXPECT_GT(m.mean_interarrival_s, 0);
  }
  auto mixes = ParseMixes(BuiltinMixesYaml(), "mixes.yaml");
  ASSERT_TRUE(mixes.ok());
  auto missing = FindMix(*mixes, "philly");
  ASSERT_THAT(missing, StatusIs(StatusCode::kNotFound, HasSubstr("mixes: llm, kalos")));
}

TEST(TraceGenerateTest, SameSeedSameBytesOtherSeedOtherBytes) {
  const TraceMix mix = Builtin("llm");
  const std::string a = WriteGenericCsv(Generate(mix, 2000, 42).jobs, "c");
  const std::string b = WriteGenericCsv(Generate(mix, 2000, 42).jobs, "c");
  const std::string c = WriteGenericCsv(Generate(mix, 2000, 43).jobs, "c");
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // A longer trace of the same seed starts with the shorter one: each job's draws depend only
  // on the jobs before it.
  const std::string longer = WriteGenericCsv(Generate(mix, 2001, 42).jobs, "c");
  EXPECT_EQ(longer.substr(0, a.size()), a);
}

TEST(TraceGenerateTest, CsvReadsBackThroughTheGenericReader) {
  const TraceMix mix = Builtin("llm");
  const GeneratedTrace g = Generate(mix, 3000, 7);
  const std::string csv = WriteGenericCsv(g.jobs, "generated for a test\nsecond line");
  auto t = ParseTrace(csv, "gen.csv", TraceFormat::kCsv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), g.jobs.size());
  EXPECT_EQ(t->jobs.front().submit_us, 0);
  for (size_t i = 0; i < g.jobs.size(); ++i) {
    const TraceJob& w = g.jobs[i];
    const TraceJob& r = t->jobs[i];
    ASSERT_EQ(r.name, w.name);
    EXPECT_EQ(r.submit_us, w.submit_us);
    EXPECT_EQ(r.duration_us, w.duration_us);
    EXPECT_EQ(r.gpus, w.gpus);
    EXPECT_EQ(r.user, w.user);
    EXPECT_EQ(r.tp, w.tp);
    EXPECT_EQ(r.pp, w.pp);
    EXPECT_EQ(r.dp, w.dp);
    EXPECT_EQ(r.model_params, w.model_params);
    EXPECT_EQ(r.priority, w.priority);
  }
}

TEST(TraceGenerateTest, LayoutsAreValidAndNormalize) {
  for (const char* name : {"llm", "kalos"}) {
    const TraceMix mix = Builtin(name);
    const GeneratedTrace g = Generate(mix, 5000, 3);
    for (const TraceJob& j : g.jobs) {
      ASSERT_EQ(j.tp * j.pp * j.dp, j.gpus) << j.name;
      ASSERT_LE(j.tp, 8) << j.name;
      ASSERT_GE(j.dp, 1) << j.name;
      ASSERT_GE(j.duration_us, 1'000'000) << j.name;
      auto spec = MakeJobSpec(j, "gen.csv", 8);
      ASSERT_TRUE(spec.ok()) << spec.status().ToString();
      EXPECT_EQ(spec->layout.tp * spec->layout.pp * spec->layout.dp, j.gpus);
    }
    for (size_t i = 1; i < g.jobs.size(); ++i) {
      ASSERT_LE(g.jobs[i - 1].submit_us, g.jobs[i].submit_us);
    }
  }
}

// With 20,000 jobs every class share and every bucket share within its class lies within
// 4.5 standard errors (binomial) of the mix's probability.
TEST(TraceGenerateTest, EmpiricalSharesMatchTheMix) {
  for (const char* name : {"llm", "kalos"}) {
    const TraceMix mix = Builtin(name);
    const GeneratedTrace g = Generate(mix, 20000, 11);
    std::map<int, int64_t> per_class;
    std::map<std::pair<int, int>, int64_t> per_bucket;
    for (size_t i = 0; i < g.jobs.size(); ++i) {
      ++per_class[g.job_class[i]];
      ++per_bucket[{g.job_class[i], g.jobs[i].gpus}];
    }
    auto within = [](double count, double n, double p) {
      const double tol = 4.5 * std::sqrt(p * (1 - p) / n) + 1e-9;
      return std::abs(count / n - p) <= tol;
    };
    for (size_t c = 0; c < mix.classes.size(); ++c) {
      const MixClass& mc = mix.classes[c];
      const double n = static_cast<double>(per_class[static_cast<int>(c)]);
      EXPECT_TRUE(within(n, 20000, mc.share)) << name << " " << mc.name << ": " << n;
      for (const MixBucket& b : mc.gpus) {
        const double k = static_cast<double>(per_bucket[{static_cast<int>(c), b.gpus}]);
        if (n > 0) {
          EXPECT_TRUE(within(k, n, b.p)) << mc.name << " " << b.gpus << ": " << k;
        }
      }
    }
  }
}

// The pretraining share of llm is derived from Seren's published mean of 5.68 GPUs per job and
// the eval median from its published median run time of 122 s (data/traces/mixes.yaml); the
// generated trace lands near both.
TEST(TraceGenerateTest, LlmLandsNearSerensPublishedAggregates) {
  const TraceMix mix = Builtin("llm");
  const GeneratedTrace g = Generate(mix, 20000, 5);
  const TraceSummary s = Summarize(mix, g);
  EXPECT_NEAR(s.mean_gpus, 5.68, 0.8);
  EXPECT_GT(s.median_duration_s, 100);
  EXPECT_LT(s.median_duration_s, 200);
  EXPECT_NEAR(s.span_s / 19999, mix.mean_interarrival_s, 0.05 * mix.mean_interarrival_s);
}

TEST(TraceGenerateTest, OptionsValidate) {
  struct Case {
    int64_t jobs, seed;
    const char* mix;
    const char* error;  // "" = valid
  };
  const Case cases[] = {
      {1, 0, "llm", ""},         {0, 1, "llm", "--jobs"},
      {-5, 1, "llm", "--jobs"},  {TraceGenOptions::kMaxJobs + 1, 1, "llm", "--jobs"},
      {10, -1, "llm", "--seed"}, {10, 1, "", "--mix"},
  };
  for (const Case& c : cases) {
    TraceGenOptions o;
    o.jobs = c.jobs;
    o.seed = c.seed;
    o.mix = c.mix;
    Status s = o.Validate();
    if (std::string(c.error).empty()) {
      EXPECT_TRUE(s.ok()) << s.ToString();
    } else {
      ASSERT_THAT(s, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.error)))
          << c.jobs << " " << c.seed;
    }
  }
}

constexpr char kGoodMix[] = R"(version: 1
models:
  - {name: m7, params: 7e9, train: {tp: 2, pp: 1}, eval: {tp: 1, pp: 1}, source: s}
mixes:
  - name: tiny
    description: d
    mean_interarrival_s: 10
    interarrival_source: s
    classes:
      - name: eval
        kind: eval
        share: 1.0
        share_source: s
        priority: 0
        gpus: [{gpus: 1, p: 1.0}]
        gpus_source: s
        duration: {median_s: 60, sigma: 1, max_s: 600}
        duration_source: s
        models: [{model: m7, p: 1.0}]
        models_source: s
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

TEST(TraceGenerateTest, BrokenMixFilesNameTheLine) {
  ASSERT_TRUE(ParseMixes(kGoodMix, "m.yaml").ok())
      << ParseMixes(kGoodMix, "m.yaml").status().ToString();
  struct Case {
    std::string from, to, error;
  };
  const Case cases[] = {
      {"share: 1.0", "share: 0.9", "m.yaml:10: mix \"tiny\": class shares: probabilities sum"},
      {"{gpus: 1, p: 1.0}", "{gpus: 1, p: 0.5}",
       "m.yaml:15: mix \"tiny\": class \"eval\": gpus: probabilities"},
      {"{model: m7, p: 1.0}", "{model: m8, p: 1.0}",
       "m.yaml:19: mix \"tiny\": class \"eval\": "
       "models: unknown model \"m8\""},
      {"kind: eval", "kind: train", "m.yaml:15: mix \"tiny\": class \"eval\": gpus: no model"},
      {"sigma: 1,", "sigma: x,",
       "m.yaml:17: mix \"tiny\": class \"eval\": duration: sigma: "
       "expected a number"},
      {"priority: 0", "priorty: 0", "m.yaml:14: mix \"tiny\": unknown field \"priorty\""},
      {"tp: 2, pp: 1}", "tp: 3, pp: 1}", "m.yaml:3: model \"m7\": train: tp and pp must be"},
      {"mean_interarrival_s: 10", "mean_interarrival_s: [", "m.yaml:"},
      {"    models_source: s\n", "", "missing field \"models_source\""},
  };
  for (const Case& c : cases) {
    auto r = ParseMixes(Replace(kGoodMix, c.from, c.to), "m.yaml");
    ASSERT_THAT(r, StatusIs(StatusCode::kInvalidArgument, HasSubstr(c.error))) << c.to;
  }
}

}  // namespace
}  // namespace toposched::sim
