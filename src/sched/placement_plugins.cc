#include "sched/placement_plugins.h"

#include <cmath>
#include <initializer_list>
#include <utility>

namespace toposched::sched {

namespace {

// One slot's registry: names and the typed values they resolve to.
template <typename E>
using Registry = std::initializer_list<std::pair<const char*, E>>;

const Registry<DomainRule> kDomains = {{"lowest-level", DomainRule::kLowestLevel},
                                       {"cluster", DomainRule::kCluster}};
const Registry<NodeRule> kNodes = {{"best-fit", NodeRule::kBestFit},
                                   {"least-allocated", NodeRule::kLeastAllocated},
                                   {"in-order", NodeRule::kInOrder},
                                   {"spread", NodeRule::kSpread},
                                   {"random", NodeRule::kRandom}};
const Registry<GpuRule> kGpus = {{"cost-model", GpuRule::kCostModel},
                                 {"pair-score", GpuRule::kPairScore},
                                 {"first-free", GpuRule::kFirstFree}};
const Registry<RefineRule> kRefine = {{"local-search", RefineRule::kLocalSearch},
                                      {"none", RefineRule::kNone}};
const Registry<ShareRule> kShares = {{"gpu-best-fit", ShareRule::kGpuBestFit},
                                     {"node-best-fit", ShareRule::kNodeBestFit},
                                     {"least-allocated", ShareRule::kLeastAllocated},
                                     {"in-order", ShareRule::kInOrder}};
const Registry<ScoreTerm> kScores = {{"comm-time", ScoreTerm::kCommTime},
                                     {"fragmentation", ScoreTerm::kFragmentation},
                                     {"contention", ScoreTerm::kContention}};

template <typename E>
std::vector<std::string> Names(Registry<E> r) {
  std::vector<std::string> out;
  for (const auto& [name, value] : r) out.emplace_back(name);
  return out;
}

// The value of `name` in the slot's registry; InvalidArgument listing the known names.
template <typename E>
StatusOr<E> Lookup(const char* slot, Registry<E> r, const std::string& name) {
  std::string list;
  for (const auto& [known, value] : r) {
    if (name == known) return value;
    list += (list.empty() ? "" : ", ") + std::string(known);
  }
  return InvalidArgumentError("gang: unknown " + std::string(slot) + " plugin \"" + name +
                              "\" (known: " + list + ")");
}

}  // namespace

double PlacementPlugins::Weight(const std::string& score) const {
  double w = 0;
  for (const ScoreWeight& s : scores) {
    if (s.name == score) w += s.weight;
  }
  return w;
}

Status PlacementPlugins::Validate() const { return ResolvePlugins(*this).status(); }

const std::vector<std::string>& PluginNames(const std::string& slot) {
  static const std::vector<std::string> domain = Names(kDomains), nodes = Names(kNodes),
                                        gpus = Names(kGpus), refine = Names(kRefine),
                                        shares = Names(kShares), score = Names(kScores), none;
  if (slot == "domain") return domain;
  if (slot == "nodes") return nodes;
  if (slot == "gpus") return gpus;
  if (slot == "refine") return refine;
  if (slot == "shares") return shares;
  if (slot == "score") return score;
  return none;
}

const std::string& PluginName(NodeRule r) {
  return PluginNames("nodes").at(static_cast<size_t>(r));
}

const std::string& PluginName(ShareRule r) {
  return PluginNames("shares").at(static_cast<size_t>(r));
}

StatusOr<TypedPlugins> ResolvePlugins(const PlacementPlugins& p) {
  TypedPlugins t;
  ASSIGN_OR_RETURN(t.domain, Lookup("domain", kDomains, p.domain));
  ASSIGN_OR_RETURN(t.nodes, Lookup("nodes", kNodes, p.nodes));
  ASSIGN_OR_RETURN(t.gpus, Lookup("gpus", kGpus, p.gpus));
  ASSIGN_OR_RETURN(t.refine, Lookup("refine", kRefine, p.refine));
  ASSIGN_OR_RETURN(t.shares, Lookup("shares", kShares, p.shares));
  if (t.scatters() && (t.gpus != GpuRule::kFirstFree || t.refine != RefineRule::kNone)) {
    return InvalidArgumentError("plugins.nodes \"" + p.nodes +
                                "\" places GPU by GPU: it needs gpus \"first-free\" and refine "
                                "\"none\"");
  }
  for (const ScoreWeight& s : p.scores) {
    ASSIGN_OR_RETURN(ScoreTerm term, Lookup("score", kScores, s.name));
    if (!std::isfinite(s.weight) || s.weight < 0) {
      return InvalidArgumentError("gang: weight of score \"" + s.name +
                                  "\" must be finite and >= 0");
    }
    t.weights[static_cast<int>(term)] += s.weight;
  }
  return t;
}

}  // namespace toposched::sched
