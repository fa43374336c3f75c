// The placer's choice points ("slots") and their rules, by name in code: what a plugin family's
// header needs to say which rule each plugin implements, without the registry that resolves a
// policy's names (plugins/registry.h, which includes every family).
#pragma once

#include <string>
#include <utility>

namespace toposched::sched {

enum class DomainRule { kLowestLevel, kCluster };
enum class NodeRule { kBestFit, kLeastAllocated, kInOrder, kSpread, kRandom };
enum class GpuRule { kCostModel, kPairScore, kFirstFree };
enum class RefineRule { kLocalSearch, kNone };
enum class RailRule { kAlign, kNone };
enum class ShareRule { kGpuBestFit, kNodeBestFit, kLeastAllocated, kInOrder };
enum class ScoreTerm { kCommTime, kFragmentation, kContention };
inline constexpr int kScoreTerms = 3;

// Each choice point's plugins are objects behind an interface in its own file:
// plugins/domain_plugins.h, plugins/node_plugins.h, plugins/gpu_plugins.h,
// plugins/refine_plugins.h, plugins/rail_plugins.h, plugins/share_plugins.h,
// plugins/score_plugins.h. The enums name the rules (a plugin's rule()).
// What every plugin of a choice point answers: the rule it implements and its registry name.
template <typename Rule>
class Plugin {
 public:
  virtual ~Plugin() = default;
  virtual Rule rule() const = 0;
  // The registry name ("lowest-level", "least-allocated", "pair-score", "align", ...).
  virtual const std::string& name() const = 0;
};

// A plugin whose rule and registry name are given where it is made: `Family` is its choice
// point's interface (GpuPlugin, ...), `Rule` that interface's rule enum.
template <typename Family, typename Rule>
class Named : public Family {
 public:
  Named(Rule rule, std::string name) : rule_(rule), name_(std::move(name)) {}
  Rule rule() const final { return rule_; }
  const std::string& name() const final { return name_; }

 private:
  Rule rule_;
  std::string name_;
};

class DomainPlugin;
class NodePlugin;
class GpuPlugin;
class RefinePlugin;
class RailPlugin;
class SharePlugin;
class ScorePlugin;

}  // namespace toposched::sched
