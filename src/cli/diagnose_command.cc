// `toposched diagnose [JOB] --log FILE ... [--cluster FILE (--node NAME | --state FILE) | --topo
// FILE] [--json]`: why a job was interrupted or slow, from its logs, tied to its node's topology
// (src/diag).
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "core/time_units.h"
#include "diag/diagnose.h"
#include "state/cluster_state.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/import.h"
#include "topo/io/json_io.h"

namespace toposched::cli {

namespace {

struct DiagnoseArgs {
  ClientArgs client;  // --server, --token-file: the job's events and placement from the daemon
  std::string job;
  std::vector<std::string> logs;
  std::string cluster_file;
  std::string node;
  std::string topo_file;
  std::string state_file;  // offline placement: a cluster state (JSON) holding JOB's allocation
  bool json = false;
};

// Offline, the node JOB ran on: its allocation's first node in --state (with --cluster), as the
// daemon's placement is with --server.
Status NodeFromState(DiagnoseArgs& a) {
  if (a.state_file.empty()) return OkStatus();
  if (a.cluster_file.empty()) return InvalidArgumentError("--state needs --cluster FILE");
  std::string id = a.job;
  if (id.rfind("job-", 0) == 0) id = id.substr(4);
  if (id.empty() || id.size() > 18 || id.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError("--state needs the JOB as its allocation id (17 or job-17)");
  }
  auto c = topo::io::ReadClusterYamlFile(a.cluster_file);
  if (!c.ok()) return c.status();
  c->Finalize();
  auto st = sched::ReadClusterStateJsonFile(a.state_file, *c);
  if (!st.ok()) return st.status();
  const std::vector<sched::NodeGpus>* parts = st->Allocation(sched::AllocId::Job(std::stoll(id)));
  if (parts == nullptr || parts->empty()) {
    return NotFoundError(a.state_file + ": no allocation " + id + " (the job's id)");
  }
  if (a.node.empty()) a.node = c->nodes[parts->front().node].name;
  return OkStatus();
}

int Usage(const std::string& message) {
  std::fprintf(stderr, "toposched diagnose: %s\n", message.c_str());
  return 2;
}

// The node the diagnosis is tied to, from --cluster/--node or --topo; nullopt without either.
StatusOr<std::optional<diag::NodeContext>> LoadNode(const DiagnoseArgs& a) {
  if (!a.topo_file.empty()) {
    auto t = topo::io::ImportTopologyFile(a.topo_file, topo::io::TopoFormat::kAuto);
    if (!t.ok()) return t.status();
    return std::optional<diag::NodeContext>(diag::NodeContext{a.topo_file, std::move(t).value()});
  }
  if (a.cluster_file.empty() || a.node.empty()) return std::optional<diag::NodeContext>();
  auto c = topo::io::ReadClusterYamlFile(a.cluster_file);
  if (!c.ok()) return c.status();
  const int idx = c->FindNode(a.node);
  if (idx < 0) {
    return NotFoundError(a.cluster_file + ": no node \"" + a.node + "\"");
  }
  return std::optional<diag::NodeContext>(diag::NodeContext{a.node, c->topology(idx)});
}

nlohmann::json CauseJson(const diag::Cause& c) {
  nlohmann::json ev = nlohmann::json::array();
  for (const diag::Evidence& e : c.evidence) {
    ev.push_back({{"file", e.file}, {"line", e.line}, {"text", e.text}});
  }
  return {{"category", diag::CategoryName(c.category)},
          {"confidence", c.confidence},
          {"summary", c.summary},
          {"evidence", ev},
          {"topology", c.topology},
          {"fix", c.fix},
          {"rule", c.rule}};
}

std::string Counts(const std::vector<diag::NoCauseReport::Count>& counts) {
  std::string out;
  for (const auto& c : counts) {
    out += (out.empty() ? "" : ", ") + c.name + " " + std::to_string(c.lines);
  }
  return out.empty() ? "none" : out;
}

// After "no known cause": what was read and why none decided.
void PrintNoCause(const diag::NoCauseReport& r) {
  std::printf("   read by family: %s\n", Counts(r.families).c_str());
  if (!r.kinds.empty()) std::printf("   read by kind: %s\n", Counts(r.kinds).c_str());
  std::printf("   why none decided: %s\n", r.why.c_str());
  for (const auto& c : r.candidates) {
    std::printf("   nearest (%s): %s:%lld: %s\n", c.kind.c_str(), c.file.c_str(),
                static_cast<long long>(c.line), c.text.c_str());
  }
}

nlohmann::json NoCauseJson(const diag::NoCauseReport& r) {
  nlohmann::json families = nlohmann::json::object();
  for (const auto& c : r.families) families[c.name] = c.lines;
  nlohmann::json kinds = nlohmann::json::object();
  for (const auto& c : r.kinds) kinds[c.name] = c.lines;
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& c : r.candidates) {
    candidates.push_back({{"file", c.file}, {"line", c.line}, {"text", c.text}, {"kind", c.kind}});
  }
  return {{"families", families},
          {"kinds", kinds},
          {"unrecognised_faults", r.unrecognised_faults},
          {"candidates", candidates},
          {"why", r.why}};
}

void PrintText(const DiagnoseArgs& a, const diag::Diagnosis& d) {
  if (!a.job.empty()) std::printf("job %s\n", a.job.c_str());
  if (d.causes.empty()) {
    std::printf("no known cause (%lld lines read)\n", static_cast<long long>(d.stats.lines));
    if (d.no_cause) PrintNoCause(*d.no_cause);
    return;
  }
  int i = 0;
  for (const diag::Cause& c : d.causes) {
    std::printf("%d. %s (confidence %.2f): %s\n", ++i, diag::CategoryName(c.category), c.confidence,
                c.summary.c_str());
    for (const diag::Evidence& e : c.evidence) {
      std::printf("   %s:%lld: %s\n", e.file.c_str(), static_cast<long long>(e.line),
                  e.text.c_str());
    }
    if (!c.topology.empty()) std::printf("   topology: %s\n", c.topology.c_str());
    if (!c.fix.empty()) std::printf("   fix: %s\n", c.fix.c_str());
  }
  if (!d.logs.empty()) std::printf("logs, each read alone:\n");
  for (const diag::LogPart& p : d.logs) {
    std::printf("   %s: %s", p.file.c_str(), diag::LogRoleName(p.role));
    if (p.top) {
      std::printf(": %s (%.2f)", diag::CategoryName(p.top->category), p.top->confidence);
    }
    std::printf("\n");
  }
  if (!d.timeline.empty()) std::printf("timeline, the logs' cited lines merged:\n");
  for (const diag::TimelineEntry& t : d.timeline) {
    std::printf("   %s %s:%lld (%s%s): %s\n", t.time ? t.time->key.c_str() : "-",
                t.line.file.c_str(), static_cast<long long>(t.line.line), diag::LogRoleName(t.role),
                t.first_seen ? ", seen first" : "", t.line.text.c_str());
  }
}

nlohmann::json LogsJson(const diag::Diagnosis& d) {
  nlohmann::json logs = nlohmann::json::array();
  for (const diag::LogPart& p : d.logs) {
    nlohmann::json l = {{"file", p.file}, {"role", diag::LogRoleName(p.role)}};
    l["category"] = p.top ? nlohmann::json(diag::CategoryName(p.top->category)) : nlohmann::json();
    l["confidence"] = p.top ? nlohmann::json(p.top->confidence) : nlohmann::json();
    l["time"] = p.time ? nlohmann::json(p.time->key) : nlohmann::json();
    l["first_seen"] =
        p.first_seen ? nlohmann::json({{"line", p.first_seen->line}, {"text", p.first_seen->text}})
                     : nlohmann::json();
    logs.push_back(std::move(l));
  }
  return logs;
}

nlohmann::json TimelineJson(const diag::Diagnosis& d) {
  nlohmann::json out = nlohmann::json::array();
  for (const diag::TimelineEntry& t : d.timeline) {
    out.push_back({{"file", t.line.file},
                   {"line", t.line.line},
                   {"text", t.line.text},
                   {"kind", diag::KindName(t.line.kind)},
                   {"time", t.time ? nlohmann::json(t.time->key) : nlohmann::json()},
                   {"role", diag::LogRoleName(t.role)},
                   {"first_seen", t.first_seen}});
  }
  return out;
}

// What the daemon knows of the job: its events (as job::FormatEvent prints them) and, when it is
// pending, its explanation, as one text; the node it ran on (its placement's first node, else
// the node its last failure event names); the daemon's cluster model.
struct FromServer {
  diag::TextInput events;
  std::string node;
  std::optional<topo::Cluster> cluster;
};

StatusOr<FromServer> FetchJob(const DiagnoseArgs& a) {
  ASSIGN_OR_RETURN(Reply job, Call(a.client, "GET", JobPath(a.job)));
  FromServer f;
  f.events.name = ServerUrl(a.client) + JobPath(a.job);
  const nlohmann::json& b = job.body;
  if (b.contains("events") && b["events"].is_array()) {
    for (const nlohmann::json& e : b["events"]) {
      char t[48];
      std::snprintf(t, sizeof t, "%.6fs ", SecondsOfUs(e.value("time_us", int64_t{0})));
      const std::string reason = e.value("reason", std::string());
      f.events.text += t + e.value("job", std::string()) + " " + e.value("from", std::string()) +
                       " -> " + e.value("to", std::string()) + ": " + reason + "\n";
      for (const char* marker : {"node ", " of ", " on "}) {
        const size_t at = reason.find(marker);
        if (at == std::string::npos || reason.find("unhealthy") == std::string::npos) continue;
        const size_t from = at + std::string(marker).size();
        f.node = reason.substr(from, reason.find_first_of(" (;,", from) - from);
        break;
      }
    }
  }
  if (b.value("state", std::string()) == "PENDING" && b.contains("explanation") &&
      b["explanation"].is_string()) {
    f.events.text += b["explanation"].get<std::string>() + "\n";
  }
  if (b.contains("placement") && b["placement"].is_object() && b["placement"].contains("nodes") &&
      !b["placement"]["nodes"].empty()) {
    f.node = b["placement"]["nodes"][0].value("node", f.node);
  }
  if (a.cluster_file.empty() && a.topo_file.empty()) {
    ASSIGN_OR_RETURN(Reply topo, Call(a.client, "GET", "/api/v1/topology"));
    ASSIGN_OR_RETURN(
        topo::Cluster c,
        topo::io::ClusterFromJson(topo.body.dump(), ServerUrl(a.client) + "/api/v1/topology"));
    f.cluster = std::move(c);
  }
  return f;
}

int RunDiagnose(DiagnoseArgs a) {
  const bool server = !a.client.server.empty();
  if (a.logs.empty() && !server) return Usage("give at least one --log FILE, or --server URL JOB");
  if (server && a.job.empty()) return Usage("--server needs the JOB (17 or job-17)");
  if (!a.state_file.empty() && server) return Usage("give --server or --state, not both");
  if (Status st = NodeFromState(a); !st.ok()) {
    return st.code() == StatusCode::kInvalidArgument && st.message().rfind("--state needs", 0) == 0
               ? Usage(st.message())
               : Fail(st);
  }
  if (!a.node.empty() && a.cluster_file.empty() && !server) {
    return Usage("--node needs --cluster FILE");
  }
  if (!a.cluster_file.empty() && a.node.empty() && !server) {
    return Usage("--cluster needs --node NAME");
  }
  if (!a.cluster_file.empty() && !a.topo_file.empty()) {
    return Usage("give --cluster/--node or --topo, not both");
  }
  std::vector<diag::TextInput> texts;
  std::optional<diag::NodeContext> from_server;
  if (server) {
    auto f = FetchJob(a);
    if (!f.ok()) return Fail(f.status());
    texts.push_back(f->events);
    if (a.node.empty()) a.node = f->node;
    if (f->cluster && !a.node.empty()) {
      const int idx = f->cluster->FindNode(a.node);
      if (idx >= 0) from_server = diag::NodeContext{a.node, f->cluster->topology(idx)};
    }
  }
  auto node = LoadNode(a);
  if (!node.ok()) return Fail(node.status());
  if (!node->has_value() && from_server) *node = std::move(from_server);
  auto d = diag::DiagnoseInputs(a.logs, texts, node->has_value() ? &node->value() : nullptr);
  if (!d.ok()) return Fail(d.status());
  if (!a.json) {
    PrintText(a, *d);
    return 0;
  }
  nlohmann::json causes = nlohmann::json::array();
  for (const diag::Cause& c : d->causes) causes.push_back(CauseJson(c));
  nlohmann::json j = {{"job", a.job.empty() ? nlohmann::json() : nlohmann::json(a.job)},
                      {"causes", causes},
                      {"lines_read", d->stats.lines}};
  if (d->causes.empty()) j["summary"] = "no known cause";
  if (d->no_cause) j["no_cause"] = NoCauseJson(*d->no_cause);
  if (!d->logs.empty()) j["logs"] = LogsJson(*d);
  if (!d->timeline.empty()) j["timeline"] = TimelineJson(*d);
  // Log text may hold bytes that are not UTF-8: replace them rather than fail.
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  return 0;
}

}  // namespace

void RegisterDiagnoseCommand(CLI::App& app, int& rc) {
  auto args = std::make_shared<DiagnoseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "diagnose", "Why a job was interrupted or slow: ranked causes from its logs, with the fix");
  cmd->add_option("JOB", args->job,
                  "the job: with --server its id (17 or job-17), offline a label in the report");
  cmd->add_option("--log", args->logs,
                  "a log file (NCCL, driver, Slurm, Kubernetes, PyTorch), or a directory of "
                  "them; one per rank or node finds the first that failed")
      ->take_all();
  cmd->add_option("--cluster", args->cluster_file, "cluster spec (YAML), with --node");
  cmd->add_option("--node", args->node, "the node of --cluster the job ran on");
  cmd->add_option("--topo", args->topo_file, "the node's topology file, instead of --cluster");
  cmd->add_option("--state", args->state_file,
                  "offline placement: a cluster state (JSON, as `cluster generate` or the "
                  "simulator save it); JOB's allocation gives the node (with --cluster)");
  cmd->add_option("--server", args->client.server,
                  "daemon URL: read the job's events, placement and the cluster from it");
  cmd->add_option("--token-file", args->client.token_file,
                  "bearer token file for --server (default $TOPOSCHED_TOKEN_FILE)");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->callback([args, &rc] { rc = RunDiagnose(*args); });
}

}  // namespace toposched::cli
