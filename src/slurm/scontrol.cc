#include "slurm/scontrol.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "core/source_error.h"
#include "core/strings.h"
#include "slurm/job_states.h"

namespace toposched::slurm {

namespace {

Status LineError(const std::string& source, int line, const std::string& msg) {
  return SourceError(source, line, msg);
}

bool IsFieldKey(std::string_view key) {
  if (key.empty() || !std::isupper(static_cast<unsigned char>(key[0]))) return false;
  for (char c : key) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != ':' && c != '/' &&
        c != '.') {
      return false;
    }
  }
  return true;
}

// Splits one line into fields; nullopt when the first token is not a field.
std::optional<Record> ParseRecordLine(std::string_view line) {
  Record r;
  for (const std::string& tok : SplitWhitespace(line)) {
    size_t eq = tok.find('=');
    if (eq != std::string::npos && IsFieldKey(std::string_view(tok).substr(0, eq))) {
      r.emplace_back(tok.substr(0, eq), tok.substr(eq + 1));
    } else if (r.empty()) {
      return std::nullopt;
    } else {
      r.back().second += " " + tok;
    }
  }
  return r;
}

std::string NullToEmpty(const std::string& v) {
  return v == "(null)" || v == "N/A" ? std::string() : v;
}

StatusOr<int> LeadingInt(std::string_view v) {
  size_t n = 0;
  while (n < v.size() && std::isdigit(static_cast<unsigned char>(v[n]))) ++n;
  if (n == 0) return InvalidArgumentError("expected a number, got " + Quote(v));
  auto i = ParseInt(v.substr(0, n));
  if (!i.ok() || *i > (1 << 30)) return InvalidArgumentError("bad number " + Quote(v));
  return static_cast<int>(*i);
}

// "gres:gpu:v100:8,gres:shard:2" / "gres/gpu:8" → the gpu entry's type and count.
bool GpuFromTres(std::string_view tres, std::string* type, int* count) {
  for (std::string item : Split(tres, ',', true)) {
    for (const char* prefix : {"gres:", "gres/"}) {
      if (StartsWith(item, prefix)) item = item.substr(5);
    }
    std::vector<std::string> parts = Split(item, ':');
    if (parts.empty() || parts[0] != "gpu") continue;
    *type = "";
    *count = 1;
    if (parts.size() == 2) {
      auto n = ParseInt(parts[1]);
      if (n.ok()) {
        *count = static_cast<int>(*n);
      } else {
        *type = parts[1];
      }
    } else if (parts.size() >= 3) {
      *type = parts[1];
      auto n = ParseInt(parts[2]);
      if (!n.ok()) return false;
      *count = static_cast<int>(*n);
    }
    return true;
  }
  return false;
}

}  // namespace

StatusOr<std::vector<Record>> ParseRecords(std::string_view text, const std::string& source) {
  std::vector<Record> out;
  int number = 0;
  for (const std::string& line : Split(text, '\n')) {
    ++number;
    if (Trim(line).empty()) continue;
    auto r = ParseRecordLine(line);
    if (!r) {
      std::string head(Trim(line).substr(0, 40));
      return LineError(source, number, "expected Key=Value fields, got " + Quote(head));
    }
    out.push_back(std::move(*r));
  }
  return out;
}

std::optional<std::string> Field(const Record& r, std::string_view key) {
  for (const auto& [k, v] : r) {
    if (k == key) return v;
  }
  return std::nullopt;
}

StatusOr<std::vector<GresItem>> ParseGres(std::string_view text) {
  std::vector<GresItem> out;
  std::string t(Trim(text));
  if (t.empty() || t == "(null)") return out;
  // Split on commas outside parentheses: "gpu:v100:2(IDX:0,2),shard:1".
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : t) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) items.push_back(cur);
  for (const std::string& item : items) {
    GresItem g;
    std::string head = item;
    std::string paren;
    size_t lp = item.find('(');
    if (lp != std::string::npos) {
      if (item.back() != ')')
        return InvalidArgumentError("unbalanced parenthesis in " + Quote(item));
      head = item.substr(0, lp);
      paren = item.substr(lp + 1, item.size() - lp - 2);
    }
    std::vector<std::string> parts = Split(head, ':');
    if (parts.empty() || parts[0].empty()) return InvalidArgumentError("empty GRES in " + Quote(t));
    g.name = parts[0];
    g.count = 1;
    if (parts.size() == 2) {
      auto n = ParseInt(parts[1]);
      if (n.ok()) {
        g.count = static_cast<int>(*n);
      } else {
        g.type = parts[1];
      }
    } else if (parts.size() == 3) {
      g.type = parts[1];
      auto n = ParseInt(parts[2]);
      if (!n.ok()) return InvalidArgumentError("bad GRES count in " + Quote(item));
      g.count = static_cast<int>(*n);
    } else if (parts.size() > 3) {
      return InvalidArgumentError("too many ':' in GRES " + Quote(item));
    }
    if (StartsWith(paren, "IDX:")) {
      std::string idx = paren.substr(4);
      if (idx != "N/A" && !idx.empty()) {
        auto list = ParseIntList(idx, 4096);
        if (!list.ok()) return InvalidArgumentError("bad IDX list in " + Quote(item));
        g.indices = std::move(list).value();
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

StatusOr<std::vector<SlurmNode>> ParseNodes(std::string_view text, const std::string& source) {
  ASSIGN_OR_RETURN(std::vector<Record> records, ParseRecords(text, source));
  std::vector<SlurmNode> out;
  int number = 0;
  for (const Record& r : records) {
    ++number;
    SlurmNode n;
    auto name = Field(r, "NodeName");
    if (!name) return LineError(source, number, "record without NodeName=");
    n.name = *name;
    auto fail = [&](const std::string& field, const Status& s) {
      return LineError(source, number,
                       "node " + Quote(n.name) + ": " + field + "=: " + s.message());
    };
    n.state = Field(r, "State").value_or("UNKNOWN");
    std::string up = n.state;
    for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const char* bad : {"DOWN", "FAIL", "NOT_RESPONDING", "POWERED_DOWN", "POWERING_DOWN",
                            "UNKNOWN", "FUTURE", "REBOOT", "POWER_DOWN"}) {
      if (up.find(bad) != std::string::npos) n.usable = false;
    }
    if (up.find('*') != std::string::npos) n.usable = false;  // not responding
    if (up.find("DRAIN") != std::string::npos) n.drained = true;
    if (auto g = Field(r, "Gres")) {
      auto items = ParseGres(*g);
      if (!items.ok()) return fail("Gres", items.status());
      for (const GresItem& it : *items) {
        if (it.name != "gpu") continue;
        n.gpus += it.count;
        if (n.gpu_type.empty()) n.gpu_type = it.type;
      }
    }
    if (auto g = Field(r, "GresUsed")) {
      auto items = ParseGres(*g);
      if (!items.ok()) return fail("GresUsed", items.status());
      n.gpus_used_known = true;
      std::set<int> used;
      for (const GresItem& it : *items) {
        if (it.name != "gpu") continue;
        if (it.count > 0 && it.indices.empty()) {
          return fail("GresUsed", InvalidArgumentError("GPUs in use without (IDX:...) (use -d)"));
        }
        used.insert(it.indices.begin(), it.indices.end());
      }
      n.gpus_used.assign(used.begin(), used.end());
    }
    if (auto p = Field(r, "Partitions")) n.partitions = Split(NullToEmpty(*p), ',', true);
    if (auto c = Field(r, "CPUTot")) {
      auto v = LeadingInt(*c);
      if (v.ok()) n.cpus = *v;
    }
    out.push_back(std::move(n));
  }
  return out;
}

StatusOr<std::vector<SlurmJob>> ParseJobs(std::string_view text, const std::string& source) {
  // "No jobs in the system" is what scontrol prints for an empty queue.
  if (Trim(text) == "No jobs in the system") return std::vector<SlurmJob>{};
  ASSIGN_OR_RETURN(std::vector<Record> records, ParseRecords(text, source));
  std::vector<SlurmJob> out;
  int number = 0;
  for (const Record& r : records) {
    ++number;
    SlurmJob j;
    auto id = Field(r, "JobId");
    if (!id) return LineError(source, number, "record without JobId=");
    j.id = *id;
    auto fail = [&](const std::string& field, const std::string& msg) {
      return LineError(source, number, "job " + j.id + ": " + field + "=: " + msg);
    };
    j.name = Field(r, "JobName").value_or("");
    std::string user = Field(r, "UserId").value_or("");
    j.user = user.substr(0, user.find('('));
    j.state = Field(r, "JobState").value_or("");
    auto mapped = MapSlurmJobState(j.state);
    if (!mapped.ok()) return fail("JobState", mapped.status().message());
    j.mapped = *mapped;
    j.reason = NullToEmpty(Field(r, "Reason").value_or(""));
    j.held = j.mapped == job::JobState::kPending &&
             (j.reason == "JobHeldUser" || j.reason == "JobHeldAdmin");
    j.partition = Field(r, "Partition").value_or("");
    j.comment = NullToEmpty(Field(r, "Comment").value_or(""));
    if (auto nn = Field(r, "NumNodes")) {
      auto v = LeadingInt(*nn);
      if (!v.ok()) return fail("NumNodes", v.status().message());
      j.num_nodes = *v;
    }
    std::string type;
    int count = 0;
    if (auto t = Field(r, "TresPerNode"); t && GpuFromTres(*t, &type, &count)) {
      j.gpus_per_node = count;
      j.gpu_type = type;
    } else if (auto t = Field(r, "TresPerJob"); t && GpuFromTres(*t, &type, &count)) {
      if (j.num_nodes <= 0 || count % j.num_nodes != 0) {
        return fail("TresPerJob", "GPUs per job " + std::to_string(count) +
                                      " not divisible by NumNodes " + std::to_string(j.num_nodes));
      }
      j.gpus_per_node = count / j.num_nodes;
      j.gpu_type = type;
    }
    j.node_list = NullToEmpty(Field(r, "NodeList").value_or(""));
    j.req_node_list = NullToEmpty(Field(r, "ReqNodeList").value_or(""));
    j.batch = Field(r, "BatchFlag").value_or("0") == "1";
    // -d detail: "Nodes=gpu[01-02] CPU_IDs=0-1 Mem=0 GRES=gpu:v100:8(IDX:0-7)" per node group.
    std::vector<std::string> hosts;
    for (const auto& [k, v] : r) {
      if (k == "Nodes") {
        auto h = ExpandHostList(v);
        if (!h.ok()) return fail("Nodes", h.status().message());
        hosts = std::move(h).value();
      } else if (k == "GRES" && !hosts.empty()) {
        auto items = ParseGres(v);
        if (!items.ok()) return fail("GRES", items.status().message());
        std::vector<int> idx;
        for (const GresItem& it : *items) {
          if (it.name == "gpu") idx.insert(idx.end(), it.indices.begin(), it.indices.end());
        }
        std::sort(idx.begin(), idx.end());
        for (const std::string& h : hosts) j.gpus_by_node[h] = idx;
      }
    }
    out.push_back(std::move(j));
  }
  return out;
}

StatusOr<std::string> TopologyConfFromShowTopology(std::string_view text,
                                                   const std::string& source) {
  struct Sw {
    std::string name, link_speed;
    std::vector<std::string> nodes, switches;
    int line = 0;
  };
  std::vector<Sw> sws;
  int number = 0;
  for (const std::string& raw : Split(text, '\n')) {
    ++number;
    if (Trim(raw).empty()) continue;
    auto r = ParseRecordLine(raw);
    if (!r || r->empty() || (*r)[0].first != "SwitchName") {
      return LineError(
          source, number,
          "expected SwitchName=..., got " + Quote(std::string(Trim(raw)).substr(0, 40)));
    }
    Sw s;
    s.line = number;
    s.name = (*r)[0].second;
    for (const auto& [k, v] : *r) {
      if (k == "LinkSpeed") s.link_speed = v;
      if (k == "Nodes" || k == "Switches") {
        auto h = ExpandHostList(v);
        if (!h.ok()) return LineError(source, number, k + "=: " + h.status().message());
        (k == "Nodes" ? s.nodes : s.switches) = std::move(h).value();
      }
    }
    sws.push_back(std::move(s));
  }
  std::map<std::string, const Sw*> by_name;
  for (const Sw& s : sws) by_name[s.name] = &s;
  std::string out = "# topology.conf rebuilt from `scontrol show topology`\n";
  for (const Sw& s : sws) {
    std::set<std::string> below;
    for (const std::string& c : s.switches) {
      auto it = by_name.find(c);
      if (it == by_name.end()) {
        return LineError(source, s.line,
                         "switch " + Quote(s.name) + ": unknown child switch " + Quote(c));
      }
      below.insert(it->second->nodes.begin(), it->second->nodes.end());
    }
    std::vector<std::string> direct;
    for (const std::string& n : s.nodes) {
      if (!below.count(n)) direct.push_back(n);
    }
    std::string line = "SwitchName=" + s.name;
    if (!s.switches.empty()) line += " Switches=" + CompressHostList(s.switches);
    if (!direct.empty()) line += " Nodes=" + CompressHostList(direct);
    if (!s.link_speed.empty()) line += " LinkSpeed=" + s.link_speed;
    out += line + "\n";
  }
  return out;
}

StatusOr<LayoutRequest> ParseLayoutRequest(std::string_view text) {
  LayoutRequest r;
  std::string t(text);
  for (char& c : t) {
    if (c == ',') c = ' ';
  }
  for (const std::string& tok : SplitWhitespace(t)) {
    size_t eq = tok.find('=');
    if (eq == std::string::npos) {
      return InvalidArgumentError("layout: expected key=value, got " + Quote(tok));
    }
    std::string key = ToLower(tok.substr(0, eq));
    std::string val = tok.substr(eq + 1);
    if (key == "model") {
      auto p = job::ParseParamCount(val);
      if (!p.ok()) return InvalidArgumentError("layout: model=: " + p.status().message());
      r.model_params = *p;
      continue;
    }
    int* slot = key == "tp"   ? &r.tp
                : key == "pp" ? &r.pp
                : key == "dp" ? &r.dp
                : key == "ep" ? &r.ep
                              : nullptr;
    if (!slot) {
      return InvalidArgumentError("layout: unknown key " + Quote(key) +
                                  " (expected tp, pp, dp, ep, model)");
    }
    auto v = ParseInt(val);
    if (!v.ok() || *v < 1 || *v > 65536) {
      return InvalidArgumentError("layout: " + key + "=: expected a positive integer, got " +
                                  Quote(val));
    }
    *slot = static_cast<int>(*v);
  }
  return r;
}

std::optional<std::string> FindDirective(std::string_view script) {
  for (const std::string& line : Split(script, '\n')) {
    std::string_view l = Trim(line);
    if (StartsWith(l, "#TOPOSCHED")) return std::string(Trim(l.substr(10)));
  }
  return std::nullopt;
}

}  // namespace toposched::slurm
