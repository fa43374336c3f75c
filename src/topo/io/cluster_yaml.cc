#include "topo/io/cluster_yaml.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/enum_names.h"
#include "core/source_error.h"
#include "core/strings.h"
#include "topo/io/import.h"
#include "topo/synthetic.h"

namespace toposched::topo::io {

namespace {

// Nodes in one cluster spec: 131,072 (about a million GPUs) is 10x the largest clusters in use
// (about 10,000 nodes: Frontier 9,408, Aurora 10,624 on the TOP500 list). It was 2^20, and
// fuzzing found a spec of a few hundred bytes that made a million nodes: 2 s and 1 GB.
constexpr int kMaxNodes = 1 << 17;

int LineOf(const YAML::Node& n) {
  YAML::Mark m = n.Mark();
  return m.is_null() ? 0 : m.line + 1;
}

constexpr EnumName<YAML::NodeType::value> kYamlKindNames[] = {{YAML::NodeType::Null, "null"},
                                                              {YAML::NodeType::Scalar, "a scalar"},
                                                              {YAML::NodeType::Sequence, "a list"},
                                                              {YAML::NodeType::Map, "a map"}};

const char* KindName(const YAML::Node& n) { return NameOf(kYamlKindNames, n.Type(), "nothing"); }

// Everything the parser needs to turn a problem into "<source>:<line>: <field>: <message>".
class Ctx : public SourceContext {
 public:
  using SourceContext::Err;
  using SourceContext::SourceContext;
  Status Err(const YAML::Node& at, const std::string& field, const std::string& msg) const {
    return Err(LineOf(at), field, msg);
  }
};

using ::toposched::FieldPath;
using ::toposched::IndexPath;

// A YAML map checked against the keys it may have: unknown and repeated keys are errors, so a
// typo never silently drops a setting.
class Fields {
 public:
  static StatusOr<Fields> Read(const Ctx& ctx, const YAML::Node& node, const std::string& path,
                               std::initializer_list<const char*> allowed) {
    if (!node.IsMap())
      return ctx.Err(node, path, std::string("expected a map, got ") + KindName(node));
    Fields f;
    f.node_ = node;
    f.path_ = path;
    for (auto it = node.begin(); it != node.end(); ++it) {
      const YAML::Node key = it->first;  // a copy: the iterator hands out a temporary
      if (!key.IsScalar()) return ctx.Err(key, path, "map keys must be plain names");
      const std::string name = key.Scalar();
      bool known = false;
      for (const char* a : allowed) known = known || name == a;
      if (!known) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        return ctx.Err(key, FieldPath(path, name), "unknown key (expected one of: " + list + ")");
      }
      for (const auto& [k, v] : f.entries_) {
        if (k == name) {
          return ctx.Err(key, FieldPath(path, name),
                         "key given twice (first at line " + std::to_string(LineOf(v)) + ")");
        }
      }
      f.entries_.emplace_back(name, it->second);
    }
    return f;
  }

  // The value of `key`, or nullptr when the key is absent.
  const YAML::Node* Get(const std::string& key) const {
    for (const auto& [k, v] : entries_) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  bool Has(const std::string& key) const { return Get(key) != nullptr; }
  std::string Path(const std::string& key) const { return FieldPath(path_, key); }
  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }

 private:
  YAML::Node node_;
  std::string path_;
  std::vector<std::pair<std::string, YAML::Node>> entries_;
};

StatusOr<std::string> AsString(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) {
    return ctx.Err(n, field, std::string("expected a string, got ") + KindName(n));
  }
  return n.Scalar();
}

StatusOr<std::string> AsName(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  ASSIGN_OR_RETURN(std::string s, AsString(ctx, n, field));
  if (Trim(s).empty()) return ctx.Err(n, field, "must not be empty");
  if (Trim(s).size() != s.size()) return ctx.Err(n, field, "leading or trailing blanks");
  return s;
}

StatusOr<double> AsNumber(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) {
    return ctx.Err(n, field, std::string("expected a number, got ") + KindName(n));
  }
  auto v = ParseDouble(n.Scalar());
  if (!v.ok() || !std::isfinite(*v)) {
    return ctx.Err(n, field, "expected a number, got " + Quote(n.Scalar()));
  }
  return *v;
}

StatusOr<double> AsNonNegative(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  ASSIGN_OR_RETURN(double v, AsNumber(ctx, n, field));
  if (v < 0) return ctx.Err(n, field, "must be >= 0, got " + n.Scalar());
  return v;
}

StatusOr<double> AsPositive(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  ASSIGN_OR_RETURN(double v, AsNumber(ctx, n, field));
  if (v <= 0) return ctx.Err(n, field, "must be > 0, got " + n.Scalar());
  return v;
}

StatusOr<int> AsInt(const Ctx& ctx, const YAML::Node& n, const std::string& field, int min,
                    int max) {
  if (!n.IsScalar()) {
    return ctx.Err(n, field, std::string("expected an integer, got ") + KindName(n));
  }
  auto v = ParseInt(n.Scalar());
  if (!v.ok()) return ctx.Err(n, field, "expected an integer, got " + Quote(n.Scalar()));
  if (*v < min || *v > max) {
    return ctx.Err(n, field,
                   "must be between " + std::to_string(min) + " and " + std::to_string(max) +
                       ", got " + n.Scalar());
  }
  return static_cast<int>(*v);
}

StatusOr<std::vector<std::string>> AsHostList(const Ctx& ctx, const YAML::Node& n,
                                              const std::string& field) {
  ASSIGN_OR_RETURN(std::string s, AsString(ctx, n, field));
  auto hosts = ExpandHostList(s, kMaxNodes);
  if (!hosts.ok()) return ctx.Err(n, field, hosts.status().message());
  if (hosts->empty()) return ctx.Err(n, field, "empty host list");
  return std::move(hosts).value();
}

Status ExpectList(const Ctx& ctx, const YAML::Node& n, const std::string& field) {
  if (!n.IsSequence()) {
    return ctx.Err(n, field, std::string("expected a list, got ") + KindName(n));
  }
  return OkStatus();
}

// Parser state. Ids of nodes/domains are indexes into cluster_.
class SpecParser {
 public:
  SpecParser(const std::string& source, const std::string& base_dir)
      : ctx_(source), base_dir_(base_dir) {}

  StatusOr<Cluster> Run(const std::string& text) {
    YAML::Node root = YAML::Load(text);
    if (root.IsNull() || !root.IsDefined()) return ctx_.Err(0, "", "empty cluster spec");
    ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, root, "",
                                            {"version", "name", "profiles", "nodes", "network",
                                             "rails", "nvlink_domains"}));
    if (const YAML::Node* v = f.Get("version")) {
      ASSIGN_OR_RETURN(int version, AsInt(ctx_, *v, "version", 0, 1 << 30));
      if (version != 1) {
        return ctx_.Err(
            *v, "version",
            "unsupported version " + std::to_string(version) + " (this build reads version 1)");
      }
    }
    if (const YAML::Node* v = f.Get("name")) {
      ASSIGN_OR_RETURN(cluster_.name, AsName(ctx_, *v, "name"));
    } else {
      cluster_.name = std::filesystem::path(ctx_.source()).stem().string();
    }
    const YAML::Node* profiles = f.Get("profiles");
    if (!profiles) return ctx_.Err(root, "profiles", "missing (at least one hardware profile)");
    RETURN_IF_ERROR(ParseProfiles(*profiles));
    const YAML::Node* nodes = f.Get("nodes");
    if (!nodes) return ctx_.Err(root, "nodes", "missing (at least one node entry)");
    RETURN_IF_ERROR(ParseNodes(*nodes));
    if (const YAML::Node* n = f.Get("network")) RETURN_IF_ERROR(ParseNetwork(*n));
    if (const YAML::Node* r = f.Get("rails")) RETURN_IF_ERROR(ParseRails(*r));
    if (const YAML::Node* v = f.Get("nvlink_domains")) RETURN_IF_ERROR(ParseNvlinkDomains(*v));

    cluster_.Finalize();
    Status s = cluster_.Validate();
    if (!s.ok()) return ctx_.Err(0, "", s.message());
    return std::move(cluster_);
  }

 private:
  Status ParseProfiles(const YAML::Node& list) {
    RETURN_IF_ERROR(ExpectList(ctx_, list, "profiles"));
    if (list.size() == 0) return ctx_.Err(list, "profiles", "at least one profile is needed");
    std::unordered_map<std::string, int> line_of;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = IndexPath("profiles", i);
      ASSIGN_OR_RETURN(Fields f,
                       Fields::Read(ctx_, list[i], path,
                                    {"name", "topology", "format", "synthetic", "gpu_model",
                                     "gpu_memory_gib", "nic_rate_gbps", "nic_link_layer"}));
      HardwareProfile p;
      const YAML::Node* name = f.Get("name");
      if (!name) return ctx_.Err(list[i], f.Path("name"), "missing");
      ASSIGN_OR_RETURN(p.name, AsName(ctx_, *name, f.Path("name")));
      if (auto [it, fresh] = line_of.emplace(p.name, LineOf(*name)); !fresh) {
        return ctx_.Err(*name, f.Path("name"),
                        "duplicate hardware profile " + Quote(p.name) + " (first at line " +
                            std::to_string(it->second) + ")");
      }
      const YAML::Node* topo = f.Get("topology");
      const YAML::Node* synth = f.Get("synthetic");
      if ((topo != nullptr) == (synth != nullptr)) {
        return ctx_.Err(list[i], path, "give exactly one of topology: (a file) or synthetic:");
      }
      if (f.Has("format") && !topo) {
        return ctx_.Err(*f.Get("format"), f.Path("format"), "only valid with topology:");
      }
      if (topo) {
        TopoFormat format = TopoFormat::kAuto;
        if (const YAML::Node* fm = f.Get("format")) {
          ASSIGN_OR_RETURN(std::string s, AsString(ctx_, *fm, f.Path("format")));
          auto parsed = ParseTopoFormat(s);
          if (!parsed.ok()) return ctx_.Err(*fm, f.Path("format"), parsed.status().message());
          format = *parsed;
        }
        ASSIGN_OR_RETURN(p.topology_file, AsName(ctx_, *topo, f.Path("topology")));
        std::filesystem::path file(p.topology_file);
        if (file.is_relative() && !base_dir_.empty()) {
          file = std::filesystem::path(base_dir_) / file;
        }
        file = file.lexically_normal();
        std::error_code ec;
        if (!std::filesystem::is_regular_file(file, ec)) {
          return ctx_.Err(*topo, f.Path("topology"),
                          "topology file not found: " + Quote(file.string()));
        }
        auto t = ImportTopologyFile(file.string(), format);
        if (!t.ok()) return ctx_.Err(*topo, f.Path("topology"), t.status().message());
        p.topology = std::move(t).value();
      } else {
        ASSIGN_OR_RETURN(std::string desc, AsName(ctx_, *synth, f.Path("synthetic")));
        auto t = MakeSyntheticTopology(desc);
        if (!t.ok()) return ctx_.Err(*synth, f.Path("synthetic"), t.status().message());
        p.topology = std::move(t).value();
      }
      RETURN_IF_ERROR(ApplyOverrides(f, p.topology));
      Status s = p.topology.Validate();
      if (!s.ok()) return ctx_.Err(topo ? *topo : *synth, path, s.message());
      cluster_.profiles.push_back(std::move(p));
    }
    return OkStatus();
  }

  Status ApplyOverrides(const Fields& f, NodeTopology& t) {
    if (const YAML::Node* v = f.Get("gpu_model")) {
      ASSIGN_OR_RETURN(std::string model, AsName(ctx_, *v, f.Path("gpu_model")));
      t.gpu_model = model;
      for (Gpu& g : t.gpus) g.model = model;
    }
    if (const YAML::Node* v = f.Get("gpu_memory_gib")) {
      ASSIGN_OR_RETURN(double gib, AsPositive(ctx_, *v, f.Path("gpu_memory_gib")));
      for (Gpu& g : t.gpus) g.memory_mib = std::llround(gib * 1024);
    }
    if (const YAML::Node* v = f.Get("nic_rate_gbps")) {
      ASSIGN_OR_RETURN(double gbps, AsPositive(ctx_, *v, f.Path("nic_rate_gbps")));
      if (t.nics.empty()) {
        return ctx_.Err(*v, f.Path("nic_rate_gbps"), "the topology has no NICs to apply it to");
      }
      for (Nic& n : t.nics) n.rate_gbps = gbps;
    }
    if (const YAML::Node* v = f.Get("nic_link_layer")) {
      ASSIGN_OR_RETURN(std::string s, AsString(ctx_, *v, f.Path("nic_link_layer")));
      std::string lower = ToLower(s);
      if (lower != "ib" && lower != "roce" && lower != "ethernet") {
        return ctx_.Err(*v, f.Path("nic_link_layer"),
                        "expected ib, roce or ethernet, got " + Quote(s));
      }
      auto layer = ParseLinkLayer(lower);
      if (!layer.ok()) return ctx_.Err(*v, f.Path("nic_link_layer"), layer.status().message());
      if (t.nics.empty()) {
        return ctx_.Err(*v, f.Path("nic_link_layer"), "the topology has no NICs to apply it to");
      }
      for (Nic& n : t.nics) n.link_layer = *layer;
    }
    return OkStatus();
  }

  Status ParseNodes(const YAML::Node& list) {
    RETURN_IF_ERROR(ExpectList(ctx_, list, "nodes"));
    if (list.size() == 0) return ctx_.Err(list, "nodes", "at least one node entry is needed");
    std::unordered_map<std::string, int> profile_of;
    for (int i = 0; i < static_cast<int>(cluster_.profiles.size()); ++i) {
      profile_of.emplace(cluster_.profiles[i].name, i);
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = IndexPath("nodes", i);
      ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, list[i], path, {"hosts", "profile", "health"}));
      const YAML::Node* hosts = f.Get("hosts");
      if (!hosts) return ctx_.Err(list[i], f.Path("hosts"), "missing");
      const YAML::Node* profile = f.Get("profile");
      if (!profile) return ctx_.Err(list[i], f.Path("profile"), "missing");
      ASSIGN_OR_RETURN(std::string pname, AsName(ctx_, *profile, f.Path("profile")));
      auto pit = profile_of.find(pname);
      if (pit == profile_of.end()) {
        return ctx_.Err(*profile, f.Path("profile"), "unknown hardware profile " + Quote(pname));
      }
      Health health = Health::kHealthy;
      if (const YAML::Node* h = f.Get("health")) {
        ASSIGN_OR_RETURN(std::string s, AsString(ctx_, *h, f.Path("health")));
        auto parsed = ParseHealth(s);
        if (!parsed.ok()) return ctx_.Err(*h, f.Path("health"), parsed.status().message());
        health = *parsed;
      }
      ASSIGN_OR_RETURN(std::vector<std::string> names, AsHostList(ctx_, *hosts, f.Path("hosts")));
      if (cluster_.nodes.size() + names.size() > static_cast<size_t>(kMaxNodes)) {
        return ctx_.Err(*hosts, f.Path("hosts"),
                        "more than " + std::to_string(kMaxNodes) + " nodes in the cluster");
      }
      for (std::string& n : names) {
        int id = static_cast<int>(cluster_.nodes.size());
        if (auto [it, fresh] = node_id_.emplace(n, id); !fresh) {
          return ctx_.Err(*hosts, f.Path("hosts"),
                          "duplicate node " + Quote(n) + " (already declared at line " +
                              std::to_string(node_line_[it->second]) + ")");
        }
        ClusterNode node;
        node.name = std::move(n);
        node.profile = pit->second;
        node.health = health;
        cluster_.nodes.push_back(std::move(node));
        node_line_.push_back(LineOf(*hosts));
        node_field_.push_back(f.Path("hosts"));
      }
    }
    return OkStatus();
  }

  // Per-domain facts only the parser needs (where it was declared, what it asked for).
  struct DomainDecl {
    int line = 0;
    std::string path;                  // "network.domains[3]"
    std::optional<YAML::Node> parent;  // handles, not pointers: Fields dies after parsing
    std::optional<YAML::Node> children;
  };
  struct Generator {
    int line = 0;
    std::string path;  // "network.levels[1].generate"
    int size = 0;
    int count = 0;
    std::string prefix;
  };

  Status ParseNetwork(const YAML::Node& node) {
    ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, node, "network", {"levels", "domains"}));
    const YAML::Node* levels = f.Get("levels");
    if (!levels) return ctx_.Err(node, "network.levels", "missing");
    RETURN_IF_ERROR(ExpectList(ctx_, *levels, "network.levels"));
    if (levels->size() == 0) return ctx_.Err(*levels, "network.levels", "at least one level");
    std::vector<std::optional<Generator>> generators;
    for (size_t i = 0; i < levels->size(); ++i) {
      const std::string path = IndexPath("network.levels", i);
      const YAML::Node& ln = (*levels)[i];
      ASSIGN_OR_RETURN(
          Fields lf,
          Fields::Read(ctx_, ln, path, {"name", "uplink_gbps", "oversubscription", "generate"}));
      NetworkLevel level;
      const YAML::Node* name = lf.Get("name");
      if (!name) return ctx_.Err(ln, lf.Path("name"), "missing");
      ASSIGN_OR_RETURN(level.name, AsName(ctx_, *name, lf.Path("name")));
      for (const NetworkLevel& other : cluster_.levels) {
        if (other.name == level.name) {
          return ctx_.Err(*name, lf.Path("name"), "duplicate level " + Quote(level.name));
        }
      }
      if (const YAML::Node* v = lf.Get("uplink_gbps")) {
        ASSIGN_OR_RETURN(level.uplink_gbps, AsNonNegative(ctx_, *v, lf.Path("uplink_gbps")));
      }
      if (const YAML::Node* v = lf.Get("oversubscription")) {
        ASSIGN_OR_RETURN(level.oversubscription, AsPositive(ctx_, *v, lf.Path("oversubscription")));
      }
      std::optional<Generator> gen;
      if (const YAML::Node* g = lf.Get("generate")) {
        ASSIGN_OR_RETURN(gen, ParseGenerator(*g, lf.Path("generate"), level.name));
      }
      generators.push_back(std::move(gen));
      cluster_.levels.push_back(std::move(level));
    }

    std::vector<DomainDecl> decls;
    if (const YAML::Node* domains = f.Get("domains")) {
      RETURN_IF_ERROR(ExpectList(ctx_, *domains, "network.domains"));
      for (size_t i = 0; i < domains->size(); ++i) {
        ASSIGN_OR_RETURN(DomainDecl d, ParseDomain((*domains)[i], IndexPath("network.domains", i)));
        decls.push_back(d);
      }
    }

    // Bottom-up: links between level l and l+1 are resolved once every level-(l+1) domain exists
    // (explicit or generated), then level l's generator groups what is still unattached.
    const int n_levels = static_cast<int>(cluster_.levels.size());
    for (int l = n_levels - 1; l >= 0; --l) {
      if (l + 1 < n_levels) RETURN_IF_ERROR(ResolveLinks(l, decls));
      if (generators[l]) RETURN_IF_ERROR(Generate(l, *generators[l], decls));
    }
    for (size_t d = 0; d < cluster_.domains.size(); ++d) {
      const NetworkDomain& dom = cluster_.domains[d];
      if (dom.level > 0 && dom.parent < 0) {
        return ctx_.Err(decls[d].line, decls[d].path,
                        "domain " + Quote(dom.name) + " at level " +
                            Quote(cluster_.levels[dom.level].name) +
                            " has no parent (set parent:, list it in children: of a " +
                            Quote(cluster_.levels[dom.level - 1].name) +
                            " domain, or add generate: to that level)");
      }
    }
    for (size_t d = 0; d < cluster_.domains.size(); ++d) {
      int p = cluster_.domains[d].parent;
      if (p >= 0) cluster_.domains[p].children.push_back(static_cast<int>(d));
    }
    for (size_t n = 0; n < cluster_.nodes.size(); ++n) {
      if (cluster_.nodes[n].domain < 0) {
        return ctx_.Err(node_line_[n], node_field_[n],
                        "node " + Quote(cluster_.nodes[n].name) +
                            " is in no network domain (list it in a domain's nodes:, or add "
                            "generate: to level " +
                            Quote(cluster_.levels.back().name) + ")");
      }
    }
    return OkStatus();
  }

  StatusOr<Generator> ParseGenerator(const YAML::Node& node, const std::string& path,
                                     const std::string& level_name) {
    ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, node, path, {"size", "count", "prefix"}));
    Generator g;
    g.line = LineOf(node);
    g.path = path;
    g.prefix = level_name;
    const YAML::Node* size = f.Get("size");
    const YAML::Node* count = f.Get("count");
    if ((size != nullptr) == (count != nullptr)) {
      return ctx_.Err(node, path, "give exactly one of size: or count:");
    }
    if (size) {
      ASSIGN_OR_RETURN(g.size, AsInt(ctx_, *size, f.Path("size"), 1, kMaxNodes));
    }
    if (count) {
      ASSIGN_OR_RETURN(g.count, AsInt(ctx_, *count, f.Path("count"), 1, kMaxNodes));
    }
    if (const YAML::Node* p = f.Get("prefix")) {
      ASSIGN_OR_RETURN(g.prefix, AsName(ctx_, *p, f.Path("prefix")));
    }
    return g;
  }

  StatusOr<DomainDecl> ParseDomain(const YAML::Node& node, const std::string& path) {
    ASSIGN_OR_RETURN(
        Fields f, Fields::Read(ctx_, node, path, {"name", "level", "parent", "children", "nodes"}));
    DomainDecl decl;
    decl.line = LineOf(node);
    decl.path = path;
    NetworkDomain dom;
    const YAML::Node* name = f.Get("name");
    if (!name) return ctx_.Err(node, f.Path("name"), "missing");
    ASSIGN_OR_RETURN(dom.name, AsName(ctx_, *name, f.Path("name")));
    RETURN_IF_ERROR(AddDomainName(dom.name, LineOf(*name), f.Path("name")));
    const YAML::Node* level = f.Get("level");
    if (!level) return ctx_.Err(node, f.Path("level"), "missing");
    ASSIGN_OR_RETURN(std::string level_name, AsName(ctx_, *level, f.Path("level")));
    dom.level = LevelIndex(level_name);
    if (dom.level < 0) {
      std::string known;
      for (const NetworkLevel& l : cluster_.levels) known += (known.empty() ? "" : ", ") + l.name;
      return ctx_.Err(*level, f.Path("level"),
                      "unknown level " + Quote(level_name) + " (levels: " + known + ")");
    }
    const int last = static_cast<int>(cluster_.levels.size()) - 1;
    if (const YAML::Node* v = f.Get("parent")) decl.parent = *v;
    if (const YAML::Node* v = f.Get("children")) decl.children = *v;
    if (decl.parent && dom.level == 0) {
      return ctx_.Err(*decl.parent, f.Path("parent"),
                      "a domain at the top level " + Quote(level_name) + " has no parent");
    }
    if (decl.children && dom.level == last) {
      return ctx_.Err(
          *decl.children, f.Path("children"),
          "a domain at the lowest level " + Quote(level_name) + " has nodes, not child domains");
    }
    const int id = static_cast<int>(cluster_.domains.size());
    if (const YAML::Node* nodes = f.Get("nodes")) {
      ASSIGN_OR_RETURN(std::vector<std::string> names, AsHostList(ctx_, *nodes, f.Path("nodes")));
      for (const std::string& n : names) {
        auto it = node_id_.find(n);
        if (it == node_id_.end()) {
          return ctx_.Err(*nodes, f.Path("nodes"), "unknown node " + Quote(n));
        }
        ClusterNode& cn = cluster_.nodes[it->second];
        if (cn.domain >= 0) {
          return ctx_.Err(*nodes, f.Path("nodes"),
                          "node " + Quote(n) + " is already in domain " +
                              Quote(cluster_.domains[cn.domain].name) +
                              " (a node belongs to one domain)");
        }
        cn.domain = id;
        dom.nodes.push_back(it->second);
      }
    }
    cluster_.domains.push_back(std::move(dom));
    return decl;
  }

  Status AddDomainName(const std::string& name, int line, const std::string& field) {
    int id = static_cast<int>(cluster_.domains.size());
    if (auto [it, fresh] = domain_id_.emplace(name, id); !fresh) {
      return ctx_.Err(line, field,
                      "duplicate domain " + Quote(name) + " (first at line " +
                          std::to_string(domain_line_[it->second]) + ")");
    }
    domain_line_.push_back(line);
    return OkStatus();
  }

  int LevelIndex(const std::string& name) const {
    for (int i = 0; i < static_cast<int>(cluster_.levels.size()); ++i) {
      if (cluster_.levels[i].name == name) return i;
    }
    return -1;
  }

  Status SetParent(int child, int parent, const YAML::Node& at, const std::string& field) {
    NetworkDomain& c = cluster_.domains[child];
    if (c.parent >= 0 && c.parent != parent) {
      return ctx_.Err(at, field,
                      "domain " + Quote(c.name) + " already has parent " +
                          Quote(cluster_.domains[c.parent].name) + ", cannot also be under " +
                          Quote(cluster_.domains[parent].name));
    }
    c.parent = parent;
    return OkStatus();
  }

  // Resolves parent:/children: between level l and level l + 1.
  Status ResolveLinks(int l, const std::vector<DomainDecl>& decls) {
    for (size_t d = 0; d < decls.size(); ++d) {
      const NetworkDomain& dom = cluster_.domains[d];
      const DomainDecl& decl = decls[d];
      if (dom.level == l + 1 && decl.parent) {
        const std::string field = decl.path + ".parent";
        ASSIGN_OR_RETURN(std::string pname, AsName(ctx_, *decl.parent, field));
        auto it = domain_id_.find(pname);
        if (it == domain_id_.end()) {
          return ctx_.Err(*decl.parent, field, "unknown domain " + Quote(pname));
        }
        const NetworkDomain& par = cluster_.domains[it->second];
        if (par.level != l) {
          return ctx_.Err(*decl.parent, field,
                          "parent " + Quote(pname) + " is at level " +
                              Quote(cluster_.levels[par.level].name) + "; the parent of a " +
                              Quote(cluster_.levels[l + 1].name) + " domain must be at level " +
                              Quote(cluster_.levels[l].name));
        }
        RETURN_IF_ERROR(SetParent(static_cast<int>(d), it->second, *decl.parent, field));
      }
      if (dom.level == l && decl.children) {
        const std::string field = decl.path + ".children";
        ASSIGN_OR_RETURN(std::vector<std::string> names, AsHostList(ctx_, *decl.children, field));
        for (const std::string& cname : names) {
          auto it = domain_id_.find(cname);
          if (it == domain_id_.end()) {
            return ctx_.Err(*decl.children, field, "unknown domain " + Quote(cname));
          }
          const NetworkDomain& child = cluster_.domains[it->second];
          if (child.level != l + 1) {
            return ctx_.Err(*decl.children, field,
                            "child " + Quote(cname) + " is at level " +
                                Quote(cluster_.levels[child.level].name) + "; children of a " +
                                Quote(cluster_.levels[l].name) + " domain must be at level " +
                                Quote(cluster_.levels[l + 1].name));
          }
          RETURN_IF_ERROR(SetParent(it->second, static_cast<int>(d), *decl.children, field));
        }
      }
    }
    return OkStatus();
  }

  // Groups, in declaration order, the nodes (lowest level) or level-(l+1) domains that are still
  // unattached into new level-l domains named <prefix><i>.
  Status Generate(int l, const Generator& g, std::vector<DomainDecl>& decls) {
    const bool lowest = l + 1 == static_cast<int>(cluster_.levels.size());
    std::vector<int> items;
    if (lowest) {
      for (size_t n = 0; n < cluster_.nodes.size(); ++n) {
        if (cluster_.nodes[n].domain < 0) items.push_back(static_cast<int>(n));
      }
    } else {
      for (size_t d = 0; d < cluster_.domains.size(); ++d) {
        const NetworkDomain& dom = cluster_.domains[d];
        if (dom.level == l + 1 && dom.parent < 0) items.push_back(static_cast<int>(d));
      }
    }
    const int n = static_cast<int>(items.size());
    int groups = g.count;
    if (g.size > 0) groups = (n + g.size - 1) / g.size;
    if (g.count > n) {
      return ctx_.Err(g.line, g.path + ".count",
                      std::to_string(g.count) + " groups but only " + std::to_string(n) +
                          (lowest ? " unattached nodes" : " unattached domains"));
    }
    for (int k = 0; k < groups; ++k) {
      int begin =
          g.size > 0 ? k * g.size : static_cast<int>(static_cast<long long>(k) * n / groups);
      int end = g.size > 0 ? std::min(n, begin + g.size)
                           : static_cast<int>(static_cast<long long>(k + 1) * n / groups);
      NetworkDomain dom;
      dom.name = g.prefix + std::to_string(k);
      dom.level = l;
      RETURN_IF_ERROR(AddDomainName(dom.name, g.line, g.path));
      const int id = static_cast<int>(cluster_.domains.size());
      for (int i = begin; i < end; ++i) {
        if (lowest) {
          cluster_.nodes[items[i]].domain = id;
          dom.nodes.push_back(items[i]);
        } else {
          cluster_.domains[items[i]].parent = id;
        }
      }
      cluster_.domains.push_back(std::move(dom));
      DomainDecl decl;
      decl.line = g.line;
      decl.path = g.path;
      decls.push_back(decl);
    }
    return OkStatus();
  }

  Status ParseRails(const YAML::Node& node) {
    ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, node, "rails", {"count", "scope"}));
    const YAML::Node* count = f.Get("count");
    if (!count) return ctx_.Err(node, "rails.count", "missing");
    ASSIGN_OR_RETURN(cluster_.rails.count, AsInt(ctx_, *count, "rails.count", 0, 1024));
    std::vector<bool> used(cluster_.profiles.size(), false);
    for (const ClusterNode& n : cluster_.nodes) used[n.profile] = true;
    for (size_t i = 0; i < cluster_.profiles.size(); ++i) {
      const HardwareProfile& p = cluster_.profiles[i];
      if (used[i] && static_cast<int>(p.topology.nics.size()) < cluster_.rails.count) {
        return ctx_.Err(*count, "rails.count",
                        std::to_string(cluster_.rails.count) + " rails, but hardware profile " +
                            Quote(p.name) + " has " + std::to_string(p.topology.nics.size()) +
                            " NICs");
      }
    }
    if (const YAML::Node* scope = f.Get("scope")) {
      ASSIGN_OR_RETURN(cluster_.rails.scope_level, AsName(ctx_, *scope, "rails.scope"));
      if (LevelIndex(cluster_.rails.scope_level) < 0) {
        return ctx_.Err(*scope, "rails.scope",
                        "unknown level " + Quote(cluster_.rails.scope_level));
      }
    }
    return OkStatus();
  }

  Status ParseNvlinkDomains(const YAML::Node& list) {
    RETURN_IF_ERROR(ExpectList(ctx_, list, "nvlink_domains"));
    std::unordered_map<std::string, int> line_of;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = IndexPath("nvlink_domains", i);
      ASSIGN_OR_RETURN(Fields f,
                       Fields::Read(ctx_, list[i], path, {"name", "nodes", "gpu_bandwidth_gbps"}));
      NvlinkDomain nv;
      const YAML::Node* name = f.Get("name");
      if (!name) return ctx_.Err(list[i], f.Path("name"), "missing");
      ASSIGN_OR_RETURN(nv.name, AsName(ctx_, *name, f.Path("name")));
      if (auto [it, fresh] = line_of.emplace(nv.name, LineOf(*name)); !fresh) {
        return ctx_.Err(*name, f.Path("name"),
                        "duplicate NVLink domain " + Quote(nv.name) + " (first at line " +
                            std::to_string(it->second) + ")");
      }
      if (const YAML::Node* bw = f.Get("gpu_bandwidth_gbps")) {
        ASSIGN_OR_RETURN(nv.gpu_bandwidth_gbps,
                         AsPositive(ctx_, *bw, f.Path("gpu_bandwidth_gbps")));
      }
      const YAML::Node* nodes = f.Get("nodes");
      if (!nodes) return ctx_.Err(list[i], f.Path("nodes"), "missing");
      ASSIGN_OR_RETURN(std::vector<std::string> names, AsHostList(ctx_, *nodes, f.Path("nodes")));
      const int id = static_cast<int>(cluster_.nvlink_domains.size());
      for (const std::string& n : names) {
        auto it = node_id_.find(n);
        if (it == node_id_.end()) {
          return ctx_.Err(*nodes, f.Path("nodes"), "unknown node " + Quote(n));
        }
        ClusterNode& cn = cluster_.nodes[it->second];
        if (cn.nvlink_domain >= 0) {
          return ctx_.Err(*nodes, f.Path("nodes"),
                          "node " + Quote(n) + " is already in NVLink domain " +
                              Quote(cluster_.nvlink_domains[cn.nvlink_domain].name));
        }
        cn.nvlink_domain = id;
        nv.nodes.push_back(it->second);
      }
      cluster_.nvlink_domains.push_back(std::move(nv));
    }
    return OkStatus();
  }

  Ctx ctx_;
  std::string base_dir_;
  Cluster cluster_;
  std::unordered_map<std::string, int> node_id_;
  std::vector<int> node_line_;
  std::vector<std::string> node_field_;
  std::unordered_map<std::string, int> domain_id_;
  std::vector<int> domain_line_;
};

}  // namespace

StatusOr<Cluster> ParseClusterYaml(const std::string& text, const std::string& source,
                                   const std::string& base_dir) {
  Ctx ctx(source);
  try {
    SpecParser parser(source, base_dir);
    return parser.Run(text);
  } catch (const YAML::Exception& e) {
    std::string hint;
    if (e.msg.find("flow") != std::string::npos) {
      hint = " (a host list such as gpu[001-016] inside { } or [ ] must be quoted)";
    }
    return ctx.Err(e.mark.is_null() ? 0 : e.mark.line + 1, "", "YAML error: " + e.msg + hint);
  } catch (const std::exception& e) {
    return InternalError(source + ": unexpected error while reading the cluster spec: " + e.what());
  }
}

StatusOr<Cluster> ReadClusterYamlFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path, 16u << 20));
  std::string base = std::filesystem::path(path).parent_path().string();
  return ParseClusterYaml(text, path, base);
}

}  // namespace toposched::topo::io
