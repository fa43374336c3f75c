#include "plugins/registry.h"

#include <array>
#include <cmath>
#include <utility>

#include "plugins/domain_plugins.h"
#include "plugins/gpu_plugins.h"
#include "plugins/node_plugins.h"
#include "plugins/rail_plugins.h"
#include "plugins/refine_plugins.h"
#include "plugins/score_plugins.h"
#include "plugins/share_plugins.h"

namespace toposched::sched {

namespace {

// A slot's registry is the list of its plugin objects, each knowing its name.
template <typename P>
std::vector<std::string> Names(const std::vector<const P*>& plugins) {
  std::vector<std::string> out;
  for (const P* p : plugins) out.push_back(p->name());
  return out;
}

std::string KnownList(const std::vector<std::string>& names) {
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

// The plugin of `name` in the slot's registry; InvalidArgument listing the known names.
template <typename P>
StatusOr<const P*> Lookup(const char* slot, const std::vector<const P*>& plugins,
                          const std::string& name) {
  for (const P* p : plugins) {
    if (p->name() == name) return p;
  }
  return InvalidArgumentError("gang: unknown " + std::string(slot) + " plugin \"" + name +
                              "\" (known: " + KnownList(Names(plugins)) + ")");
}

// The plugin of `rule` in a registry whose order is the rule's enum order.
template <typename P, typename E>
const P& InRegistry(const std::vector<const P*>& plugins, E rule) {
  return *plugins.at(static_cast<size_t>(rule));
}

}  // namespace

const DomainPlugin& DomainPluginFor(DomainRule r) { return InRegistry(DomainPlugins(), r); }
const NodePlugin& NodePluginFor(NodeRule r) { return InRegistry(NodePlugins(), r); }
const GpuPlugin& GpuPluginFor(GpuRule r) { return InRegistry(GpuPlugins(), r); }
const RefinePlugin& RefinePluginFor(RefineRule r) { return InRegistry(RefinePlugins(), r); }
const RailPlugin& RailPluginFor(RailRule r) { return InRegistry(RailPlugins(), r); }
const SharePlugin& SharePluginFor(ShareRule r) { return InRegistry(SharePlugins(), r); }
const ScorePlugin& ScorePluginFor(ScoreTerm t) { return InRegistry(ScorePlugins(), t); }

bool TypedPlugins::scatters() const { return nodes->scatters(); }

double TypedPlugins::weight(ScoreTerm t) const {
  for (const WeightedScore& s : scores) {
    if (s.plugin->term() == t) return s.weight;
  }
  return 0;
}

double PlacementPlugins::Weight(const std::string& score) const {
  double w = 0;
  for (const ScoreWeight& s : scores) {
    if (s.name == score) w += s.weight;
  }
  return w;
}

Status PlacementPlugins::Validate() const { return ResolvePlugins(*this).status(); }

const std::vector<std::string>& PluginNames(const std::string& slot) {
  static const std::vector<std::string> domain = Names(DomainPlugins()),
                                        nodes = Names(NodePlugins()), gpus = Names(GpuPlugins()),
                                        refine = Names(RefinePlugins()),
                                        rails = Names(RailPlugins()),
                                        shares = Names(SharePlugins()),
                                        score = Names(ScorePlugins()), none;
  if (slot == "domain") return domain;
  if (slot == "nodes") return nodes;
  if (slot == "gpus") return gpus;
  if (slot == "refine") return refine;
  if (slot == "rails") return rails;
  if (slot == "shares") return shares;
  if (slot == "score") return score;
  return none;
}

StatusOr<TypedPlugins> ResolvePlugins(const PlacementPlugins& p) {
  TypedPlugins t;
  ASSIGN_OR_RETURN(t.domain, Lookup("domain", DomainPlugins(), p.domain));
  ASSIGN_OR_RETURN(t.nodes, Lookup("nodes", NodePlugins(), p.nodes));
  ASSIGN_OR_RETURN(t.gpus, Lookup("gpus", GpuPlugins(), p.gpus));
  ASSIGN_OR_RETURN(t.refine, Lookup("refine", RefinePlugins(), p.refine));
  ASSIGN_OR_RETURN(t.rails, Lookup("rails", RailPlugins(), p.rails));
  ASSIGN_OR_RETURN(t.shares, Lookup("shares", SharePlugins(), p.shares));
  if (t.scatters() && (t.gpus->rule() != GpuRule::kFirstFree || t.refine->refines())) {
    return InvalidArgumentError("plugins.nodes \"" + p.nodes +
                                "\" places GPU by GPU: it needs gpus \"first-free\" and refine "
                                "\"none\"");
  }
  std::array<double, kScoreTerms> weights = {0, 0, 0};  // by ScoreTerm; a term listed twice sums
  for (const ScoreWeight& s : p.scores) {
    ASSIGN_OR_RETURN(const ScorePlugin* plugin, Lookup("score", ScorePlugins(), s.name));
    if (!std::isfinite(s.weight) || s.weight < 0) {
      return InvalidArgumentError("gang: weight of score \"" + s.name +
                                  "\" must be finite and >= 0");
    }
    weights[static_cast<int>(plugin->term())] += s.weight;
  }
  for (const ScorePlugin* plugin : ScorePlugins()) {
    const double w = weights[static_cast<int>(plugin->term())];
    if (w > 0) t.scores.push_back(WeightedScore{plugin, w});
  }
  return t;
}

}  // namespace toposched::sched
