#include "job/job_spec.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "testing/status_matchers.h"

namespace toposched::job {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

JobSpec Spec(int tp, int pp, int dp, int replicas, int gpr, int total = 0) {
  JobSpec s;
  s.name = "j";
  s.layout.tp = tp;
  s.layout.pp = pp;
  s.layout.dp = dp;
  s.replicas = replicas;
  s.gpus_per_replica = gpr;
  s.total_gpus = total;
  return s;
}

TEST(LayoutDerivation, Table) {
  struct Case {
    const char* what;
    int tp, pp, dp, replicas, gpr, total;
    int want_dp, want_replicas, want_gpr;
  };
  const Case cases[] = {
      {"dp only: a replica is one DP replica", 8, 4, 4, 0, 0, 0, 4, 4, 32},
      {"replicas x gpr gives dp", 8, 4, 0, 16, 8, 0, 4, 16, 8},
      {"total only", 2, 1, 0, 0, 0, 16, 8, 8, 2},
      {"total + gpr gives replicas", 1, 1, 0, 0, 8, 32, 32, 4, 8},
      {"total + replicas gives gpr", 4, 1, 0, 2, 0, 16, 4, 2, 8},
      {"dp + gpr gives replicas", 8, 1, 2, 0, 8, 0, 2, 2, 8},
      {"all given and consistent", 8, 2, 2, 4, 8, 32, 2, 4, 8},
      {"one GPU", 1, 1, 0, 1, 1, 0, 1, 1, 1},
  };
  for (const Case& c : cases) {
    JobSpec s = Spec(c.tp, c.pp, c.dp, c.replicas, c.gpr, c.total);
    ASSERT_TRUE(s.Normalize().ok()) << c.what << ": " << s.Normalize().ToString();
    EXPECT_EQ(s.layout.dp, c.want_dp) << c.what;
    EXPECT_EQ(s.replicas, c.want_replicas) << c.what;
    EXPECT_EQ(s.gpus_per_replica, c.want_gpr) << c.what;
    EXPECT_EQ(s.total_gpus, s.replicas * s.gpus_per_replica) << c.what;
    EXPECT_EQ(s.total_gpus, s.layout.WorldSize()) << c.what;
    EXPECT_TRUE(s.Validate().ok()) << c.what;
  }
}

TEST(LayoutDerivation, Inconsistent) {
  struct Case {
    const char* what;
    JobSpec spec;
    const char* field;
  };
  const Case cases[] = {
      {"dp disagrees with replicas", Spec(8, 4, 2, 16, 8), "layout.dp"},
      {"total not a multiple of tp*pp", Spec(8, 1, 0, 0, 0, 12), "layout"},
      {"total not a multiple of gpr", Spec(1, 1, 0, 0, 5, 12), "gpus_per_replica"},
      {"nothing sized", Spec(8, 1, 0, 0, 0), "replicas"},
      {"replicas alone", Spec(8, 1, 0, 2, 0), "gpus_per_replica"},
  };
  for (const Case& c : cases) {
    JobSpec s = c.spec;
    auto e = NormalizeSpec(s);
    ASSERT_TRUE(e.has_value()) << c.what;
    EXPECT_EQ(e->field, c.field) << c.what << ": " << e->message;
    EXPECT_THAT(s.Normalize().message(), HasSubstr(std::string(c.field) + ":"));
  }
}

TEST(Traffic, DefaultsFromModelSize) {
  JobSpec s = Spec(8, 4, 4, 0, 0);
  s.model_params = 70e9;
  s.hidden_size = 8192;
  s.seq_len = 4096;
  s.micro_batch = 1;
  ASSERT_TRUE(s.Normalize().ok());
  // DP: gradients in bf16 split over the TP*PP shards.
  EXPECT_EQ(s.layout.dp_bytes, static_cast<int64_t>(70e9 * 2 / 32));
  // TP / PP: one micro-batch of activations in bf16.
  EXPECT_EQ(s.layout.tp_bytes, int64_t{1} * 4096 * 8192 * 2);
  EXPECT_EQ(s.layout.pp_bytes, int64_t{1} * 4096 * 8192 * 2);
}

TEST(Traffic, HiddenDerivedAndGivenBytesKept) {
  JobSpec s = Spec(4, 1, 2, 0, 0);
  s.model_params = 175e9;
  s.layout.tp_bytes = 123;
  ASSERT_TRUE(s.Normalize().ok());
  EXPECT_EQ(s.hidden_size, 12288);  // GPT-3 175B
  EXPECT_EQ(s.layout.tp_bytes, 123);
  EXPECT_EQ(s.layout.pp_bytes, int64_t{4096} * 12288 * 2);
}

// An unknown model (no model_params, no hidden_size) exchanges 1 GiB per collective, not 0, so
// its placements still rank by communication time; given sizes are kept.
TEST(Traffic, UnknownModelExchangesOneGibPerCollective) {
  JobSpec s = Spec(1, 1, 2, 0, 0);
  s.layout.pp_bytes = 77;
  ASSERT_TRUE(s.Normalize().ok());
  EXPECT_EQ(s.layout.dp_bytes, int64_t{1} << 30);
  EXPECT_EQ(s.layout.tp_bytes, int64_t{1} << 30);
  EXPECT_EQ(s.layout.pp_bytes, 77);
  EXPECT_EQ(s.hidden_size, 0);
}

TEST(RankOrder, MegatronDefault) {
  Layout l;
  l.tp = 2;
  l.pp = 3;
  l.dp = 4;
  std::set<int> seen;
  for (int pp = 0; pp < l.pp; ++pp) {
    for (int dp = 0; dp < l.dp; ++dp) {
      for (int tp = 0; tp < l.tp; ++tp) {
        const int r = l.RankOf(tp, dp, pp);
        EXPECT_EQ(r, tp + l.tp * (dp + l.dp * pp));
        EXPECT_EQ(l.CoordOf(r), (Layout::Coord{tp, dp, pp}));
        seen.insert(r);
      }
    }
  }
  EXPECT_EQ(seen.size(), 24u);
  EXPECT_EQ(*seen.rbegin(), 23);
}

TEST(RankOrder, Groups) {
  Layout l;
  l.tp = 4;
  l.pp = 2;
  l.dp = 2;
  struct Case {
    int rank;
    std::vector<int> tp, dp, pp;
  };
  const Case cases[] = {
      {0, {0, 1, 2, 3}, {0, 4}, {0, 8}},
      {5, {4, 5, 6, 7}, {1, 5}, {5, 13}},
      {14, {12, 13, 14, 15}, {10, 14}, {6, 14}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(l.TpGroup(c.rank), c.tp) << c.rank;
    EXPECT_EQ(l.DpGroup(c.rank), c.dp) << c.rank;
    EXPECT_EQ(l.PpGroup(c.rank), c.pp) << c.rank;
  }
}

TEST(RankOrder, TpGroupIsConsecutive) {
  Layout l;
  l.tp = 8;
  l.pp = 4;
  l.dp = 4;
  for (int r = 0; r < l.WorldSize(); ++r) {
    std::vector<int> g = l.TpGroup(r);
    ASSERT_EQ(g.size(), 8u);
    EXPECT_EQ(g.front(), r - r % 8);
    for (size_t i = 1; i < g.size(); ++i) EXPECT_EQ(g[i], g[i - 1] + 1);
  }
}

TEST(RankOrder, EpGroupInsideDp) {
  Layout l;
  l.tp = 2;
  l.pp = 1;
  l.dp = 4;
  l.ep = 2;
  EXPECT_EQ(l.EpGroup(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(l.EpGroup(7), (std::vector<int>{5, 7}));
}

TEST(RankOrder, OutOfRangeIsHarmless) {
  Layout l;
  l.tp = 2;
  l.pp = 2;
  l.dp = 2;
  EXPECT_EQ(l.RankOf(2, 0, 0), -1);
  EXPECT_EQ(l.RankOf(0, -1, 0), -1);
  EXPECT_EQ(l.CoordOf(8).tp, -1);
  EXPECT_TRUE(l.TpGroup(-3).empty());
  Layout unset;  // dp 0: not normalized
  EXPECT_EQ(unset.RankOf(0, 0, 0), -1);
  EXPECT_TRUE(unset.TpGroup(0).empty());
}

TEST(Duration, Table) {
  struct Case {
    const char* text;
    int64_t seconds;  // -1: error
  };
  const Case cases[] = {
      {"4h", 4 * 3600},
      {"30m", 1800},
      {"1d2h", 26 * 3600},
      {"90s", 90},
      {"3600", 3600},
      {"1d2h30m15s", 95415},
      {" 2D ", 172800},
      {"0", -1},
      {"", -1},
      {"h", -1},
      {"2h1d", -1},
      {"1h1h", -1},
      {"1.5h", -1},
      {"-3", -1},
      {"4x", -1},
      {"99999999999999999999", -1},
  };
  for (const Case& c : cases) {
    auto d = ParseDuration(c.text);
    if (c.seconds < 0) {
      EXPECT_THAT(d, StatusIs(StatusCode::kInvalidArgument,
                              AllOf(HasSubstr("expected a duration such as"),
                                    HasSubstr("got \"" + std::string(c.text) + "\""))))
          << c.text;
    } else {
      ASSERT_TRUE(d.ok()) << c.text << ": " << d.status().ToString();
      EXPECT_EQ(*d, c.seconds) << c.text;
      EXPECT_EQ(*ParseDuration(FormatDuration(*d)), *d) << c.text;
    }
  }
  EXPECT_EQ(FormatDuration(93600), "1d2h");
}

TEST(ParamCount, Table) {
  EXPECT_DOUBLE_EQ(*ParseParamCount("70B"), 70e9);
  EXPECT_DOUBLE_EQ(*ParseParamCount("7.5b"), 7.5e9);
  EXPECT_DOUBLE_EQ(*ParseParamCount("350M"), 350e6);
  EXPECT_DOUBLE_EQ(*ParseParamCount("1.8T"), 1.8e12);
  EXPECT_DOUBLE_EQ(*ParseParamCount("125K"), 125e3);
  EXPECT_DOUBLE_EQ(*ParseParamCount("1000"), 1000);
  for (const char* bad : {"", "B", "-7B", "seventy", "1e30", "nanB", "infT"}) {
    EXPECT_THAT(ParseParamCount(bad),
                StatusIs(StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("expected a parameter count such as"),
                               HasSubstr("got \"" + std::string(bad) + "\""))))
        << bad;
  }
}

TEST(Levels, ValidateAgainstCluster) {
  JobSpec s = Spec(8, 1, 2, 0, 0);
  s.constraints.tp = {ConstraintMode::kRequired, "nvlink-domain", {}};
  s.constraints.job = {ConstraintMode::kPreferred, "leaf", {}};
  ASSERT_TRUE(s.Normalize().ok());
  const std::vector<std::string> levels = {"spine", "leaf"};
  EXPECT_TRUE(s.ValidateAgainstLevels(levels).ok());
  s.constraints.job.level = "node";
  EXPECT_TRUE(s.ValidateAgainstLevels(levels).ok());
  s.constraints.job.level = "rack";
  Status st = s.ValidateAgainstLevels(levels);
  ASSERT_THAT(st, StatusIs(StatusCode::kInvalidArgument,
                           AllOf(HasSubstr("constraints.job.preferred"), HasSubstr("\"rack\""),
                                 HasSubstr("spine, leaf"))));
  s.constraints.job.level = "leaf";
  s.constraints.tp.level = "block";
  st = s.ValidateAgainstLevels(levels);
  ASSERT_THAT(st, StatusIs(StatusCode::kInvalidArgument, HasSubstr("constraints.tp.required")));
  EXPECT_TRUE(s.ValidateAgainstLevels({"leaf", "block"}).ok());
}

TEST(Validate, ElasticAndPolicies) {
  JobSpec s = Spec(4, 1, 0, 4, 8);
  s.elastic = ElasticRange{2, 8};
  s.on_failure = FailurePolicy::kShrink;
  EXPECT_TRUE(s.Normalize().ok());
  JobSpec odd = Spec(8, 1, 0, 4, 4);  // a replica is half a TP group
  odd.elastic = ElasticRange{1, 4};
  auto e = NormalizeSpec(odd);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->field, "elastic.min_replicas") << e->message;
  JobSpec shrink = Spec(1, 1, 0, 2, 1);
  shrink.on_failure = FailurePolicy::kShrink;
  e = NormalizeSpec(shrink);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->field, "on_failure");
}

}  // namespace
}  // namespace toposched::job
