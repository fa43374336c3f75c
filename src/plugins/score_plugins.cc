// The score plugins: the predicted communication time, the GPUs left free on partly used nodes,
// and the communication time added through links shared with running jobs.
#include "plugins/score_plugins.h"

namespace toposched::sched {

LinkModel::Contention PlacementContention(const LinkModel* links, const Placement& p,
                                          double dp_hide_factor) {
  if (links == nullptr || p.parts.size() < 2) return {};
  // NetworkMs(p) split into its DP and pipeline parts (p spans nodes here).
  return links->ContentionMs(links->UsageOf(p.parts),
                             LinkModel::Traffic{p.dp_ms, p.pp_ms, dp_hide_factor});
}

namespace {

class CommTimeScore : public ScorePlugin {
 public:
  ScoreTerm term() const override { return ScoreTerm::kCommTime; }
  const std::string& name() const override { return name_; }
  double Ms(const ScoreInput& in) const override { return in.predicted_ms; }

 private:
  const std::string name_ = "comm-time";
};

class FragmentationScore : public ScorePlugin {
 public:
  ScoreTerm term() const override { return ScoreTerm::kFragmentation; }
  const std::string& name() const override { return name_; }
  double Ms(const ScoreInput& in) const override { return in.frag; }

 private:
  const std::string name_ = "fragmentation";
};

// Its own slowdown plus the slowdown it causes the running jobs on the links it would share
// (LinkModel::ContentionMs); 0 on one node, without link loads, or before the placement exists.
class ContentionScore : public ScorePlugin {
 public:
  ScoreTerm term() const override { return ScoreTerm::kContention; }
  const std::string& name() const override { return name_; }
  double Ms(const ScoreInput& in) const override {
    if (in.placement == nullptr) return 0;
    return PlacementContention(in.links, *in.placement, in.dp_hide_factor).total();
  }

 private:
  const std::string name_ = "contention";
};

}  // namespace

const std::vector<const ScorePlugin*>& ScorePlugins() {
  static const CommTimeScore comm_time;
  static const FragmentationScore fragmentation;
  static const ContentionScore contention;
  static const std::vector<const ScorePlugin*> all = {&comm_time, &fragmentation, &contention};
  return all;
}

}  // namespace toposched::sched
