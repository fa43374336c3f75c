#include "topo/io/slurm.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/source_error.h"
#include "core/strings.h"

namespace toposched::topo::io {

namespace {

// Host names one host list may expand to (its bracket groups multiply), and all the host lists
// of one file together: 10x the largest Slurm clusters (about 10,000 nodes: Frontier 9,408,
// Aurora 10,624 on the TOP500 list). Fuzzing found a 643-byte block line whose product of
// bracket groups expanded to a million names (0.6 s; 13 s under ASan).
constexpr int kMaxHosts = 1 << 17;
constexpr size_t kMaxHostsPerFile = 1 << 18;

// Where a piece of config text came from: 1-based line and byte column of the file.

// One logical line: physical lines joined at trailing backslashes. `pieces` maps offsets in
// `text` back to the file, so errors point at the column where a token was written.
struct ConfLine {
  struct Piece {
    size_t offset = 0;  // in text
    SourcePos pos;      // of text[offset] in the file
  };
  int number = 0;  // 1-based line where the logical line starts
  SourcePos start;
  std::string text;
  std::vector<Piece> pieces;

  SourcePos PosOf(size_t offset) const {
    const Piece* p = &pieces.front();
    for (const Piece& q : pieces) {
      if (q.offset <= offset) p = &q;
    }
    return {p->pos.line, p->pos.column + static_cast<int>(offset - p->offset)};
  }
};

// Splits Slurm config text into logical lines: '#' to the end of a line is a comment, a trailing
// backslash joins the next line, blank lines are dropped.
std::vector<ConfLine> LogicalLines(std::string_view text) {
  std::vector<ConfLine> out;
  ConfLine pending;
  int number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    const std::string_view whole = text.substr(pos, eol - pos);
    std::string_view raw = whole;
    ++number;
    pos = eol + 1;
    if (size_t hash = raw.find('#'); hash != std::string_view::npos) raw = raw.substr(0, hash);
    std::string_view t = Trim(raw);
    bool cont = !t.empty() && t.back() == '\\';
    if (cont) t = Trim(t.substr(0, t.size() - 1));
    if (pending.text.empty()) pending.number = number;
    if (!t.empty()) {
      if (!pending.text.empty()) pending.text += ' ';
      const SourcePos at{number, static_cast<int>(t.data() - whole.data()) + 1};
      if (pending.text.empty()) pending.start = at;
      pending.pieces.push_back({pending.text.size(), at});
      pending.text += t;
    }
    if (!cont && !pending.text.empty()) {
      out.push_back(std::move(pending));
      pending = ConfLine();
    }
    if (eol == text.size()) break;
  }
  if (!pending.text.empty()) out.push_back(std::move(pending));
  return out;
}

struct KeyValue {
  std::string key;  // lower-cased
  std::string raw_key;
  std::string value;
  SourcePos key_pos;
  SourcePos value_pos;
};

// "<source>:<line>:<column>: <msg>": the place a reader's error names.
StatusOr<std::vector<KeyValue>> SplitKeyValues(const std::string& source, const ConfLine& line) {
  std::vector<KeyValue> out;
  const std::string& s = line.text;
  size_t i = 0;
  while (i < s.size()) {
    if (std::isspace(static_cast<unsigned char>(s[i]))) {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < s.size() && !std::isspace(static_cast<unsigned char>(s[end]))) ++end;
    const std::string tok = s.substr(i, end - i);
    size_t eq = tok.find('=');
    if (eq == std::string::npos || eq == 0) {
      return SourceError(source, line.PosOf(i), "expected Key=Value, got " + Quote(tok));
    }
    KeyValue kv;
    kv.raw_key = tok.substr(0, eq);
    kv.key = ToLower(kv.raw_key);
    kv.value = tok.substr(eq + 1);
    kv.key_pos = line.PosOf(i);
    kv.value_pos = line.PosOf(i + eq + 1);
    for (const KeyValue& prev : out) {
      if (prev.key == kv.key) {
        return SourceError(source, kv.key_pos,
                           "key " + Quote(kv.raw_key) + " given twice (first at " +
                               std::to_string(prev.key_pos.line) + ":" +
                               std::to_string(prev.key_pos.column) + "), expected each key once");
      }
    }
    out.push_back(std::move(kv));
    i = end;
  }
  return out;
}

const KeyValue* FindKey(const std::vector<KeyValue>& kvs, const std::string& lower_key) {
  for (const KeyValue& kv : kvs) {
    if (kv.key == lower_key) return &kv;
  }
  return nullptr;
}

// `allowed` holds keys as Slurm spells them; the comparison is case-insensitive.
Status CheckKeys(const std::string& source, const std::vector<KeyValue>& kvs,
                 std::initializer_list<const char*> allowed) {
  for (const KeyValue& kv : kvs) {
    bool ok = false;
    std::string expected;
    for (const char* a : allowed) {
      ok = ok || kv.key == ToLower(a);
      expected += (expected.empty() ? "" : ", ") + std::string(a);
    }
    if (!ok) {
      return SourceError(
          source, kv.key_pos,
          "unknown key " + Quote(kv.raw_key) + " (expected one of: " + expected + ")");
    }
  }
  return OkStatus();
}

// `expanded` counts the names of the file so far, against kMaxHostsPerFile.
StatusOr<std::vector<std::string>> ExpandAt(const std::string& source, const KeyValue& kv,
                                            size_t& expanded) {
  auto hosts = ExpandHostList(kv.value, kMaxHosts);
  if (!hosts.ok()) {
    return SourceError(source, kv.value_pos,
                       kv.raw_key + "=: " + hosts.status().message() +
                           " (expected a host list such as gpu[001-016],login1)");
  }
  if (hosts->empty()) {
    return SourceError(source, kv.value_pos, kv.raw_key + "= is empty, expected a host list");
  }
  expanded += hosts->size();
  if (expanded > kMaxHostsPerFile) {
    return SourceError(source, kv.value_pos,
                       kv.raw_key + "=: the host lists of this file expand to more than " +
                           std::to_string(kMaxHostsPerFile) + " names in all");
  }
  return std::move(hosts).value();
}

// ---- topology.conf ---------------------------------------------------------------------------

struct SwitchDecl {
  std::string name;
  int line = 0;
  SourcePos name_pos;                 // SwitchName='s value
  SourcePos switches_pos;             // Switches='s value
  SourcePos nodes_pos;                // Nodes='s value
  std::vector<std::string> switches;  // child switch names
  std::vector<std::string> nodes;
  double link_speed = 0;
};

// Union-find over switch ids: interchangeable parallel switches become one domain.
struct UnionFind {
  explicit UnionFind(int n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int Find(int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  }
  void Union(int a, int b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  std::vector<int> parent;
};

// Switches grouped into logical domains (interchangeable parallel switches merged), linked parent
// to child, with each domain's depth from its root.
struct SwitchTree {
  std::vector<std::vector<int>> members;  // per domain: switch ids in declaration order
  std::vector<int> parent;                // per domain: parent domain, -1 for a root
  std::vector<std::vector<int>> children;
  std::vector<int> depth;
};

StatusOr<SwitchTree> LinkSwitches(const std::string& source, const std::vector<SwitchDecl>& sw) {
  const int n = static_cast<int>(sw.size());
  std::unordered_map<std::string, int> id_of;
  for (int i = 0; i < n; ++i) {
    if (auto [it, fresh] = id_of.emplace(sw[i].name, i); !fresh) {
      return SourceError(source, sw[i].name_pos,
                         "switch " + Quote(sw[i].name) + " already defined at line " +
                             std::to_string(sw[it->second].line) + ", expected a new switch name");
    }
  }
  std::vector<std::vector<int>> kids(n), parents(n);
  for (int i = 0; i < n; ++i) {
    for (const std::string& c : sw[i].switches) {
      auto it = id_of.find(c);
      if (it == id_of.end()) {
        return SourceError(source, sw[i].switches_pos,
                           "switch " + Quote(sw[i].name) + ": Switches= names undefined switch " +
                               Quote(c) + ", expected switches defined by SwitchName= lines");
      }
      if (it->second == i) {
        return SourceError(
            source, sw[i].switches_pos,
            "switch " + Quote(sw[i].name) + " lists itself, expected child switches");
      }
      if (std::find(kids[i].begin(), kids[i].end(), it->second) != kids[i].end()) continue;
      kids[i].push_back(it->second);
      parents[it->second].push_back(i);
    }
  }
  // Parallel parents (every switch listing the same children) are one logical switch.
  UnionFind uf(n);
  for (int c = 0; c < n; ++c) {
    if (parents[c].size() < 2) continue;
    const int first = parents[c][0];
    for (size_t k = 1; k < parents[c].size(); ++k) {
      const int other = parents[c][k];
      auto sorted = [](std::vector<int> v) {
        std::sort(v.begin(), v.end());
        return v;
      };
      auto sorted_names = [](std::vector<std::string> v) {
        std::sort(v.begin(), v.end());
        return v;
      };
      if (sorted(kids[first]) != sorted(kids[other]) ||
          sorted_names(sw[first].nodes) != sorted_names(sw[other].nodes)) {
        return SourceError(source, sw[other].switches_pos,
                           "switch " + Quote(sw[c].name) + " has several parents (" +
                               Quote(sw[first].name) + ", " + Quote(sw[other].name) +
                               ") that are not interchangeable; toposched models a tree in which "
                               "each switch has one parent");
      }
      uf.Union(first, other);
    }
  }
  // Logical domains in declaration order of their first member.
  std::vector<int> domain_of(n, -1);
  std::vector<std::vector<int>> members;
  for (int i = 0; i < n; ++i) {
    int root = uf.Find(i);
    if (domain_of[root] < 0) {
      domain_of[root] = static_cast<int>(members.size());
      members.emplace_back();
    }
    domain_of[i] = domain_of[root];
    members[domain_of[i]].push_back(i);
  }
  const int nd = static_cast<int>(members.size());
  std::vector<int> dparent(nd, -1);
  std::vector<std::vector<int>> dchildren(nd);
  for (int i = 0; i < n; ++i) {
    for (int c : kids[i]) {
      const int pd = domain_of[i], cd = domain_of[c];
      if (dparent[cd] >= 0 && dparent[cd] != pd) {
        return SourceError(source, sw[i].switches_pos,
                           "switch " + Quote(sw[c].name) + " is under both " +
                               Quote(sw[members[dparent[cd]][0]].name) + " and " +
                               Quote(sw[i].name) + ", expected one parent per switch");
      }
      if (dparent[cd] < 0) {
        dparent[cd] = pd;
        dchildren[pd].push_back(cd);
      }
    }
  }
  // Depth from the root; a cycle leaves some domain without a root.
  std::vector<int> depth(nd, -1);
  std::vector<int> order;
  for (int d = 0; d < nd; ++d) {
    if (dparent[d] < 0) {
      depth[d] = 0;
      order.push_back(d);
    }
  }
  for (size_t k = 0; k < order.size(); ++k) {
    for (int c : dchildren[order[k]]) {
      depth[c] = depth[order[k]] + 1;
      order.push_back(c);
    }
  }
  for (int d = 0; d < nd; ++d) {
    if (depth[d] < 0) {
      const SwitchDecl& s = sw[members[d][0]];
      return SourceError(source, s.name_pos,
                         "switch " + Quote(s.name) + " is part of a cycle, expected a tree");
    }
  }
  return SwitchTree{std::move(members), std::move(dparent), std::move(dchildren), std::move(depth)};
}

StatusOr<SlurmTopology> BuildTree(const std::string& source, const std::vector<SwitchDecl>& sw) {
  ASSIGN_OR_RETURN(SwitchTree tree, LinkSwitches(source, sw));
  const std::vector<std::vector<int>>& members = tree.members;
  const std::vector<int>& depth = tree.depth;
  const int nd = static_cast<int>(members.size());

  SlurmTopology topo;
  topo.kind = SlurmTopology::Kind::kTree;
  const int max_depth = nd == 0 ? -1 : *std::max_element(depth.begin(), depth.end());
  for (int l = 0; l <= max_depth; ++l) {
    NetworkLevel level;
    level.name = "switch-" + std::to_string(l);
    topo.levels.push_back(level);
  }
  std::unordered_map<std::string, int> node_id;
  std::vector<int> node_domain;
  for (int d = 0; d < nd; ++d) {
    NetworkDomain dom;
    std::vector<std::string> names;
    double speed = 0;
    for (int m : members[d]) {
      names.push_back(sw[m].name);
      if (sw[m].link_speed > 0 && (speed == 0 || sw[m].link_speed < speed)) {
        speed = sw[m].link_speed;
      }
    }
    dom.name = names.size() == 1 ? names[0] : CompressHostList(names);
    dom.level = depth[d];
    dom.parent = tree.parent[d];
    dom.children = tree.children[d];
    const SwitchDecl& s = sw[members[d][0]];  // members are interchangeable: same nodes
    for (const std::string& node : s.nodes) {
      auto [it, fresh] = node_id.emplace(node, static_cast<int>(topo.node_names.size()));
      if (fresh) {
        topo.node_names.push_back(node);
        node_domain.push_back(d);
      } else if (node_domain[it->second] != d) {
        return SourceError(source, s.nodes_pos,
                           "node " + Quote(node) + " is under switch " +
                               Quote(topo.domains[node_domain[it->second]].name) + " and " +
                               Quote(s.name) + ", expected each node under one switch");
      } else {
        continue;  // listed twice by one switch
      }
      dom.nodes.push_back(it->second);
    }
    topo.domains.push_back(std::move(dom));
    topo.link_speed.push_back(speed);
  }
  for (int d = 0; d < nd; ++d) {
    double speed = topo.link_speed[d];
    NetworkLevel& level = topo.levels[depth[d]];
    if (speed > 0 && (level.uplink_gbps == 0 || speed < level.uplink_gbps)) {
      level.uplink_gbps = speed;
    }
  }
  return topo;
}

StatusOr<double> ParseLinkSpeed(const std::string& source, const KeyValue& kv) {
  auto speed = ParseDouble(kv.value);
  if (!speed.ok() || !std::isfinite(*speed) || *speed <= 0) {
    return SourceError(source, kv.value_pos,
                       "LinkSpeed= must be a positive number, got " + Quote(kv.value));
  }
  return *speed;
}

// ---- gres.conf ---------------------------------------------------------------------------------

StatusOr<std::vector<int>> ParseLinks(const std::string& source, const KeyValue& kv) {
  std::vector<int> out;
  for (const std::string& tok : Split(kv.value, ',')) {
    auto n = ParseInt(tok);
    if (!n.ok() || *n < -1 || *n > 1 << 20) {
      return SourceError(source, kv.value_pos,
                         "Links=: bad item " + Quote(tok) + " in " + Quote(kv.value) +
                             ", expected NVLink counts (-1 = self)");
    }
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

int MinorOf(const std::string& file) {
  size_t e = file.size();
  size_t b = e;
  while (b > 0 && std::isdigit(static_cast<unsigned char>(file[b - 1]))) --b;
  if (b == e || e - b > 9) return -1;
  return std::stoi(file.substr(b));
}

}  // namespace

namespace {

StatusOr<SwitchDecl> ParseSwitchLine(const std::string& source, const ConfLine& line,
                                     const std::vector<KeyValue>& kvs, size_t& expanded) {
  RETURN_IF_ERROR(CheckKeys(source, kvs, {"SwitchName", "Switches", "Nodes", "LinkSpeed"}));
  SwitchDecl s;
  s.name = kvs.front().value;
  s.line = line.number;
  s.name_pos = kvs.front().value_pos;
  if (s.name.empty()) {
    return SourceError(source, s.name_pos, "SwitchName= is empty, expected a switch name");
  }
  if (const KeyValue* kv = FindKey(kvs, "switches")) {
    s.switches_pos = kv->value_pos;
    ASSIGN_OR_RETURN(s.switches, ExpandAt(source, *kv, expanded));
  }
  if (const KeyValue* kv = FindKey(kvs, "nodes")) {
    s.nodes_pos = kv->value_pos;
    ASSIGN_OR_RETURN(s.nodes, ExpandAt(source, *kv, expanded));
  }
  if (const KeyValue* kv = FindKey(kvs, "linkspeed")) {
    ASSIGN_OR_RETURN(s.link_speed, ParseLinkSpeed(source, *kv));
  }
  return s;
}

// Collects topology/block lines (BlockName=, BlockSizes=) into one level of blocks.
class BlockReader {
 public:
  explicit BlockReader(const std::string& source) : source_(source) {
    topo_.kind = SlurmTopology::Kind::kBlock;
  }
  bool empty() const { return topo_.domains.empty() && sizes_line_ == 0; }

  Status AddBlock(const ConfLine& line, const std::vector<KeyValue>& kvs) {
    RETURN_IF_ERROR(CheckKeys(source_, kvs, {"BlockName", "Nodes"}));
    const KeyValue& head = kvs.front();
    const std::string& name = head.value;
    if (name.empty()) return SourceError(source_, head.value_pos, "BlockName= is empty");
    const int id = static_cast<int>(topo_.domains.size());
    if (auto [it, fresh] = block_id_.emplace(name, id); !fresh) {
      return SourceError(source_, head.value_pos,
                         "block " + Quote(name) + " already defined at line " +
                             std::to_string(block_lines_[it->second]) +
                             ", expected a new block name");
    }
    const KeyValue* nodes = FindKey(kvs, "nodes");
    if (!nodes) {
      return SourceError(source_, line.start,
                         "block " + Quote(name) + ": no Nodes=, expected the block's host list");
    }
    ASSIGN_OR_RETURN(std::vector<std::string> names, ExpandAt(source_, *nodes, expanded_));
    NetworkDomain dom;
    dom.name = name;
    dom.level = 0;
    for (const std::string& n : names) {
      auto [it, fresh] = node_id_.emplace(n, static_cast<int>(topo_.node_names.size()));
      if (!fresh) {
        return SourceError(source_, nodes->value_pos,
                           "node " + Quote(n) + " is in block " + Quote(BlockOf(it->second, name)) +
                               " and in " + Quote(name) + ", expected each node in one block");
      }
      topo_.node_names.push_back(n);
      dom.nodes.push_back(it->second);
    }
    topo_.domains.push_back(std::move(dom));
    topo_.link_speed.push_back(0);
    block_lines_.push_back(line.number);
    return OkStatus();
  }

  Status AddSizes(const ConfLine& line, const std::vector<KeyValue>& kvs) {
    RETURN_IF_ERROR(CheckKeys(source_, kvs, {"BlockSizes"}));
    const KeyValue& kv = kvs.front();
    if (sizes_line_ > 0) {
      return SourceError(source_, kv.key_pos,
                         "BlockSizes= already given at line " + std::to_string(sizes_line_) +
                             ", expected it once");
    }
    sizes_line_ = line.number;
    sizes_pos_ = kv.key_pos;
    for (const std::string& tok : Split(kv.value, ',')) {
      auto v = ParseInt(tok);
      if (!v.ok() || *v <= 0 || *v > kMaxHosts) {
        return SourceError(
            source_, kv.value_pos,
            "BlockSizes=: bad size " + Quote(tok) + ", expected positive node counts");
      }
      if (!topo_.block_sizes.empty() && *v <= topo_.block_sizes.back()) {
        return SourceError(source_, kv.value_pos, "BlockSizes= must be increasing");
      }
      topo_.block_sizes.push_back(static_cast<int>(*v));
    }
    return OkStatus();
  }

  StatusOr<SlurmTopology> Finish() && {
    if (topo_.domains.empty()) {
      return SourceError(source_, sizes_pos_,
                         "BlockSizes= without any BlockName= line, expected blocks first");
    }
    NetworkLevel level;
    level.name = "block";
    topo_.levels.push_back(level);
    return std::move(topo_);
  }

 private:
  std::string BlockOf(int node, const std::string& fallback) const {
    for (const NetworkDomain& d : topo_.domains) {
      if (std::find(d.nodes.begin(), d.nodes.end(), node) != d.nodes.end()) return d.name;
    }
    return fallback;  // listed twice by the block being read
  }

  const std::string& source_;
  size_t expanded_ = 0;  // host names of the block lists so far (kMaxHostsPerFile)
  SlurmTopology topo_;
  std::unordered_map<std::string, int> block_id_, node_id_;
  std::vector<int> block_lines_;
  int sizes_line_ = 0;
  SourcePos sizes_pos_;
};

}  // namespace

StatusOr<SlurmTopology> ParseTopologyConf(std::string_view text, const std::string& source) {
  std::vector<SwitchDecl> switches;
  size_t expanded = 0;  // host names of the tree's lists (the block reader counts its own)
  BlockReader blocks(source);
  for (const ConfLine& line : LogicalLines(text)) {
    ASSIGN_OR_RETURN(std::vector<KeyValue> kvs, SplitKeyValues(source, line));
    const KeyValue& head = kvs.front();
    const bool is_switch = head.key == "switchname";
    const bool is_block = head.key == "blockname" || head.key == "blocksizes";
    if (!is_switch && !is_block) {
      const bool known = head.key == "switches" || head.key == "nodes" || head.key == "linkspeed";
      return SourceError(
          source, head.key_pos,
          (known ? "a line must start with the switch or block name, got " : "unknown key ") +
              Quote(head.raw_key) +
              ", expected SwitchName=, BlockName= or BlockSizes= first on a line");
    }
    if ((is_switch && !blocks.empty()) || (is_block && !switches.empty())) {
      return SourceError(
          source, head.key_pos,
          "tree (SwitchName=) and block (BlockName=) lines cannot be mixed, expected " +
              std::string(is_switch ? "BlockName= or BlockSizes=" : "SwitchName="));
    }
    if (is_switch) {
      ASSIGN_OR_RETURN(SwitchDecl s, ParseSwitchLine(source, line, kvs, expanded));
      switches.push_back(std::move(s));
    } else if (head.key == "blockname") {
      RETURN_IF_ERROR(blocks.AddBlock(line, kvs));
    } else {
      RETURN_IF_ERROR(blocks.AddSizes(line, kvs));
    }
  }
  if (!blocks.empty()) return std::move(blocks).Finish();
  return BuildTree(source, switches);
}

Status ApplySlurmTopology(const SlurmTopology& topo, Cluster& cluster) {
  Cluster c = cluster;
  c.levels = topo.levels;
  c.domains = topo.domains;
  for (ClusterNode& n : c.nodes) n.domain = -1;
  c.Finalize();
  for (size_t d = 0; d < c.domains.size(); ++d) {
    for (int& n : c.domains[d].nodes) {
      if (n < 0 || n >= static_cast<int>(topo.node_names.size())) {
        return InvalidArgumentError("Slurm topology: domain " + Quote(c.domains[d].name) +
                                    " has node id " + std::to_string(n) + " out of range");
      }
      const std::string& name = topo.node_names[n];
      int id = c.FindNode(name);
      if (id < 0) {
        return InvalidArgumentError("Slurm topology: node " + Quote(name) + " (under " +
                                    Quote(c.domains[d].name) + ") is not in cluster " +
                                    Quote(c.name));
      }
      n = id;
      c.nodes[id].domain = static_cast<int>(d);
    }
  }
  if (!c.rails.scope_level.empty() && c.FindLevel(c.rails.scope_level) < 0) {
    c.rails.scope_level.clear();
  }
  Status s = c.Validate();
  if (!s.ok()) return s.WithPrefix("Slurm topology");
  cluster = std::move(c);
  return OkStatus();
}

StatusOr<std::vector<GresGpu>> ParseGresConf(std::string_view text, const std::string& source) {
  std::vector<GresGpu> out;
  size_t expanded = 0;  // host names of the file's lists so far
  for (const ConfLine& line : LogicalLines(text)) {
    ASSIGN_OR_RETURN(std::vector<KeyValue> kvs, SplitKeyValues(source, line));
    RETURN_IF_ERROR(CheckKeys(source, kvs,
                              {"NodeName", "Name", "Type", "File", "Cores", "Links", "Count",
                               "AutoDetect", "Flags", "MultipleFiles"}));
    const KeyValue* name = FindKey(kvs, "name");
    if (!name) {
      // "AutoDetect=off" or "NodeName=x AutoDetect=nvml": a setting, no device.
      bool only_global =
          FindKey(kvs, "autodetect") && std::all_of(kvs.begin(), kvs.end(), [](const KeyValue& kv) {
            return kv.key == "autodetect" || kv.key == "nodename";
          });
      if (only_global) {
        if (const KeyValue* kv = FindKey(kvs, "nodename")) {
          RETURN_IF_ERROR(ExpandAt(source, *kv, expanded).status());
        }
        continue;
      }
      return SourceError(source, line.start, "missing Name=, expected Name=gpu");
    }
    if (name->value != "gpu") continue;
    std::vector<std::string> nodes = {""};
    if (const KeyValue* kv = FindKey(kvs, "nodename")) {
      ASSIGN_OR_RETURN(nodes, ExpandAt(source, *kv, expanded));
    }
    std::vector<std::string> files;
    const KeyValue* file = FindKey(kvs, "file");
    const KeyValue* multiple = FindKey(kvs, "multiplefiles");
    if (file && multiple) {
      return SourceError(source, multiple->key_pos, "File= and MultipleFiles= are exclusive");
    }
    if (file) {
      ASSIGN_OR_RETURN(files, ExpandAt(source, *file, expanded));
    } else if (multiple) {
      files = {multiple->value};  // several device files of one GPU (MIG)
    }
    if (const KeyValue* kv = FindKey(kvs, "count")) {
      auto count = ParseInt(kv->value);
      if (!count.ok() || *count < 0 || *count > 4096) {
        return SourceError(source, kv->value_pos, "Count=: bad count " + Quote(kv->value));
      }
      if (files.empty()) {
        files.assign(static_cast<size_t>(*count), "");
      } else if (static_cast<size_t>(*count) != files.size()) {
        return SourceError(
            source, kv->value_pos,
            "Count=" + kv->value + " but File= names " + std::to_string(files.size()) + " devices");
      }
    }
    if (files.empty()) return SourceError(source, line.start, "a gpu line needs File= or Count=");
    std::vector<int> cores, links;
    if (const KeyValue* kv = FindKey(kvs, "cores")) {
      auto parsed = ParseIntList(kv->value, 1 << 16);
      if (!parsed.ok()) {
        return SourceError(source, kv->value_pos, "Cores=: " + parsed.status().message());
      }
      cores = std::move(parsed).value();
    }
    if (const KeyValue* kv = FindKey(kvs, "links")) {
      if (files.size() > 1) {
        return SourceError(source, kv->key_pos,
                           "Links= needs a line with a single device, File= names " +
                               std::to_string(files.size()));
      }
      ASSIGN_OR_RETURN(links, ParseLinks(source, *kv));
    }
    std::string type;
    if (const KeyValue* kv = FindKey(kvs, "type")) type = kv->value;
    for (const std::string& node : nodes) {
      for (const std::string& f : files) {
        GresGpu g;
        g.node = node;
        g.type = type;
        g.file = f;
        g.minor = multiple || f.empty() ? -1 : MinorOf(f);
        g.cores = cores;
        g.links = links;
        out.push_back(std::move(g));
      }
    }
  }
  return out;
}

}  // namespace toposched::topo::io
