// Client subcommands of `toposched`, talking to a running daemon over its REST API, with the
// habits of Slurm and kubectl users: submit, queue (squeue), show, cancel, complete, nodes
// (sinfo), explain, drain/resume, events. Each takes --server URL (or $TOPOSCHED_SERVER),
// --token-file F (or $TOPOSCHED_TOKEN_FILE) and --json.
#include <httplib.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>

#include "cli/client.h"
#include "cli/commands.h"
#include "core/file.h"
#include "job/job_spec.h"

namespace toposched::cli {

namespace {

using json = nlohmann::json;

std::string NewKey() {
  std::random_device rd;
  std::string k = "cli-";
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) k += hex[rd() % 16];
  return k;
}

void PrintJson(const json& j) { std::printf("%s\n", j.dump(2).c_str()); }

std::string Str(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "-";
  return j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
}

void AddCommon(CLI::App* cmd, ClientArgs& a) {
  cmd->add_option("--server", a.server,
                  "daemon URL (default $TOPOSCHED_SERVER or " + std::string(kDefaultServer) + ")");
  cmd->add_option("--token-file", a.token_file,
                  "bearer token file (default $TOPOSCHED_TOKEN_FILE)");
  cmd->add_flag("--json", a.json, "print JSON");
}

struct SubmitArgs : ClientArgs {
  std::string file;
  std::string key;
};

// Submits every spec of the file (one spec, or a `jobs:` list), in file order, each with its own
// idempotency key; every spec is parsed and validated first, so a bad entry submits nothing.
// Prints one id per line (JSON: {"id": N} for one spec, {"ids": [...]} for a list).
int RunSubmit(const SubmitArgs& a) {
  StatusOr<std::vector<job::JobSpec>> specs = job::ReadJobSpecsFile(a.file);
  if (!specs.ok()) return Fail(specs.status());
  // The key makes the retries inside Call safe: a submit the daemon committed before a lost
  // answer is not submitted twice. A list's i-th spec (i > 0) gets KEY-i.
  const std::string key = a.key.empty() ? NewKey() : a.key;
  json ids = json::array();
  for (size_t i = 0; i < specs->size(); ++i) {
    const std::string k = i == 0 ? key : key + "-" + std::to_string(i);
    StatusOr<Reply> r = Call(a, "POST", "/api/v1/jobs", job::JobSpecToJson((*specs)[i], -1),
                             {{"Idempotency-Key", k}});
    if (!r.ok()) {
      if (i == 0) return Fail(r.status());
      return Fail(Status(r.status().code(), "submitted " + std::to_string(i) + " of " +
                                                std::to_string(specs->size()) +
                                                " jobs (ids above); job \"" + (*specs)[i].name +
                                                "\": " + r.status().message()));
    }
    const int64_t id = r->body.value("id", int64_t{0});
    ids.push_back(id);
    if (!a.json) std::printf("%lld\n", static_cast<long long>(id));
    std::fflush(stdout);
  }
  if (a.json) {
    const json out = specs->size() == 1 ? json{{"id", ids[0]}} : json{{"ids", ids}};
    std::printf("%s\n", out.dump().c_str());
  }
  return 0;
}

struct QueueArgs : ClientArgs {
  std::string state, user, queue;
  bool all = false;
};

int RunQueue(const QueueArgs& a) {
  json jobs = json::array();
  int64_t after = 0;
  while (true) {
    std::string path = "/api/v1/jobs?limit=10000&after=" + std::to_string(after);
    if (!a.state.empty()) path += "&state=" + UrlEncode(a.state);
    if (!a.user.empty()) path += "&user=" + UrlEncode(a.user);
    if (!a.queue.empty()) path += "&queue=" + UrlEncode(a.queue);
    StatusOr<Reply> r = Call(a, "GET", path);
    if (!r.ok()) return Fail(r.status());
    const json& page = r->body["jobs"];
    for (const json& j : page) {
      const std::string st = j.value("state", "");
      const bool done = st == "COMPLETED" || st == "CANCELLED" || st == "TIMEOUT" ||
                        st == "FAILED" || st == "NODE_FAIL";
      if (a.all || !a.state.empty() || !done) jobs.push_back(j);
      after = j.value("id", after);
    }
    if (page.size() < 10000) break;
  }
  if (a.json) {
    PrintJson(json{{"jobs", jobs}});
    return 0;
  }
  // SOURCE: rest, or kubernetes (a pod group; NAME is then its gang, "<namespace>/<name>").
  std::printf("%8s  %-24s %-10s %-12s %4s %5s  %-11s %-10s %s\n", "JOBID", "NAME", "USER", "QUEUE",
              "PRIO", "GPUS", "STATE", "SOURCE", "NODES");
  for (const json& j : jobs) {
    std::string nodes = "-";
    if (j.contains("placement") && j["placement"].is_object()) {
      nodes.clear();
      for (const json& n : j["placement"]["nodes"]) {
        nodes += (nodes.empty() ? "" : ",") + n.value("node", "");
      }
    }
    const std::string name = j.contains("pod_group") ? Str(j, "pod_group") : Str(j, "name");
    std::printf("%8lld  %-24s %-10s %-12s %4d %5d  %-11s %-10s %s\n",
                static_cast<long long>(j.value("id", int64_t{0})), name.c_str(),
                Str(j, "user").c_str(), Str(j, "queue").c_str(), j.value("priority", 0),
                j.value("gpus", 0), Str(j, "state").c_str(),
                j.contains("source") ? Str(j, "source").c_str() : "rest", nodes.c_str());
  }
  return 0;
}

struct JobArgs : ClientArgs {
  std::string job;
};

// " [cause: gpu_fault]" for an interruption (its category, docs/diagnose.md), else "".
std::string CauseSuffix(const json& e) {
  if (!e.contains("category") || !e["category"].is_string()) return "";
  return " [cause: " + e["category"].get<std::string>() + "]";
}

int RunShow(const JobArgs& a) {
  StatusOr<Reply> r = Call(a, "GET", JobPath(a.job));
  if (!r.ok()) return Fail(r.status());
  const json& j = r->body;
  if (a.json) {
    PrintJson(j);
    return 0;
  }
  for (const char* k : {"job_id", "name", "user", "queue", "priority", "state", "gpus", "replicas",
                        "gpus_per_replica", "submit_time_us", "time_limit_s", "source"}) {
    std::printf("%-17s %s\n", (std::string(k) + ":").c_str(), Str(j, k).c_str());
  }
  if (j.contains("pod_group")) std::printf("%-17s %s\n", "pod_group:", Str(j, "pod_group").c_str());
  if (j.contains("placement") && j["placement"].is_object()) {
    const json& p = j["placement"];
    std::printf("%-17s %s (predicted %.3f ms, best possible %.3f ms)\n",
                "placement:", Str(p, "domain").c_str(), p.value("predicted_ms", 0.0),
                p.value("best_possible_ms", 0.0));
    for (const json& n : p["nodes"]) {
      std::printf("  %-15s gpus %s\n", n.value("node", "").c_str(), n["gpus"].dump().c_str());
    }
  }
  std::printf("%-17s %s\n", "explanation:", Str(j, "explanation").c_str());
  std::printf("events:\n");
  for (const json& e : j["events"]) {
    std::printf("  %lld %s -> %s: %s%s\n", static_cast<long long>(e.value("time_us", int64_t{0})),
                Str(e, "from").c_str(), Str(e, "to").c_str(), Str(e, "reason").c_str(),
                CauseSuffix(e).c_str());
  }
  return 0;
}

int RunJobAction(const JobArgs& a, const std::string& action) {
  StatusOr<Reply> r = Call(a, "POST", JobPath(a.job) + "/" + action, "");
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(r->body);
  } else {
    std::printf("%s %s\n", Str(r->body, "job_id").c_str(), Str(r->body, "state").c_str());
  }
  return 0;
}

struct CompleteArgs : JobArgs {
  std::optional<int> exit_code;
  std::optional<int> signal;
  std::string log;
  std::string node;
};

// The last `max` bytes of a log (where a failure's lines are), from its first whole line. A
// regular file is read from its last `max` bytes; a stream that cannot seek (a pipe) is read
// through, keeping the last `max` bytes, up to kMaxStreamBytes (then refused: give a file).
StatusOr<std::string> ReadLogTail(const std::string& path, size_t max) {
  constexpr std::streamoff kMaxStreamBytes = 256LL << 20;
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError(path + ": cannot open the log");
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  bool cut = false;
  std::string text;
  if (size > 0) {  // seekable
    cut = size > static_cast<std::streamoff>(max);
    f.seekg(cut ? size - static_cast<std::streamoff>(max) : 0, std::ios::beg);
    text.resize(max);
    f.read(text.data(), static_cast<std::streamsize>(max));
    text.resize(static_cast<size_t>(f.gcount()));
  } else {
    f.clear();
    std::ifstream s(path, std::ios::binary);
    std::string chunk(64 * 1024, '\0');
    std::streamoff total = 0;
    while (s.read(chunk.data(), static_cast<std::streamsize>(chunk.size())) || s.gcount() > 0) {
      total += s.gcount();
      if (total > kMaxStreamBytes) {
        return InvalidArgumentError(path +
                                    ": a stream of more than 256 MiB; give the log as a file");
      }
      text.append(chunk.data(), static_cast<size_t>(s.gcount()));
      if (text.size() > 2 * max) {
        text.erase(0, text.size() - max);
        cut = true;
      }
    }
    if (text.size() > max) {
      text.erase(0, text.size() - max);
      cut = true;
    }
  }
  if (cut) {
    const size_t nl = text.find('\n');
    text.erase(0, nl == std::string::npos ? 0 : nl + 1);
  }
  return text;
}

int RunComplete(const CompleteArgs& a) {
  json body = json::object();
  if (a.exit_code) body["exit_code"] = *a.exit_code;
  if (a.signal) body["signal"] = *a.signal;
  if (!a.node.empty()) body["node"] = a.node;
  if (!a.log.empty()) {
    // 128 KiB: under the daemon's default body limit (1 MiB) even if every byte is a control
    // character that JSON escapes to 6.
    StatusOr<std::string> log = ReadLogTail(a.log, 128 * 1024);
    if (!log.ok()) return Fail(log.status());
    body["log"] = *log;
  }
  StatusOr<Reply> r =
      Call(a, "POST", JobPath(a.job) + "/complete",
           body.empty() ? "" : body.dump(-1, ' ', false, json::error_handler_t::replace));
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(r->body);
    return 0;
  }
  std::printf("%s %s\n", Str(r->body, "job_id").c_str(), Str(r->body, "state").c_str());
  return 0;
}

int RunReport(const CompleteArgs& a) {
  StatusOr<std::string> log = ReadLogTail(a.log, 128 * 1024);  // as RunComplete
  if (!log.ok()) return Fail(log.status());
  json body = {{"log", *log}};
  if (!a.node.empty()) body["node"] = a.node;
  StatusOr<Reply> r = Call(a, "POST", JobPath(a.job) + "/report",
                           body.dump(-1, ' ', false, json::error_handler_t::replace));
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(r->body);
    return 0;
  }
  const json& c = r->body["cause"];
  std::printf("%s %s\n", Str(r->body, "job_id").c_str(), Str(r->body, "state").c_str());
  if (c.is_object()) {
    std::printf("cause: %s (confidence %.2f): %s\n", Str(c, "category").c_str(),
                c.value("confidence", 0.0), Str(c, "summary").c_str());
    if (!Str(c, "topology").empty()) std::printf("topology: %s\n", Str(c, "topology").c_str());
    if (!Str(c, "fix").empty()) std::printf("fix: %s\n", Str(c, "fix").c_str());
  } else {
    std::printf("cause: no known fault in the log\n");
  }
  for (const json& action : r->body["actions"]) {
    std::printf("done: %s\n", action.get<std::string>().c_str());
  }
  return 0;
}

int RunExplain(const JobArgs& a) {
  StatusOr<Reply> r = Call(a, "GET", JobPath(a.job) + "/explain");
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(r->body);
  } else {
    std::printf("%s\n", Str(r->body, "explanation").c_str());
    if (r->body.contains("placement_explanation")) {
      std::printf("%s\n", Str(r->body, "placement_explanation").c_str());
    }
    // The predicted NCCL transport per hop, and the environment for the ranks' NICs.
    if (r->body.contains("transports")) {
      for (const json& h : r->body["transports"]) {
        const int hops = h.value("hops", 0);
        std::printf("transport %s: %s (%d hop%s, e.g. %s%s)\n", Str(h, "dimension").c_str(),
                    Str(h, "transport").c_str(), hops, hops == 1 ? "" : "s",
                    Str(h, "example").c_str(),
                    Str(h, "via").empty() ? "" : (" via " + Str(h, "via")).c_str());
      }
      for (const json& w : r->body["transport_warnings"]) {
        std::printf("warning: %s\n", w.get<std::string>().c_str());
      }
      for (auto it = r->body["nccl_env"].begin(); it != r->body["nccl_env"].end(); ++it) {
        std::printf("env: %s=%s\n", it.key().c_str(), it.value().get<std::string>().c_str());
      }
    }
  }
  return 0;
}

int RunNodes(const ClientArgs& a) {
  StatusOr<Reply> r = Call(a, "GET", "/api/v1/nodes");
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(r->body);
    return 0;
  }
  std::printf("%-16s %-12s %4s %4s %5s  %-9s %-7s %s\n", "NODE", "PROFILE", "GPUS", "FREE", "ALLOC",
              "HEALTH", "DRAINED", "JOBS");
  for (const json& n : r->body["nodes"]) {
    std::string jobs;
    for (const json& j : n["jobs"]) jobs += (jobs.empty() ? "" : ",") + j.get<std::string>();
    std::printf("%-16s %-12s %4d %4d %5d  %-9s %-7s %s\n", Str(n, "name").c_str(),
                Str(n, "profile").c_str(), n.value("gpus", 0), n.value("free", 0),
                n.value("allocated", 0), Str(n, "health").c_str(),
                n.value("drained", false) ? "yes" : "no", jobs.empty() ? "-" : jobs.c_str());
  }
  return 0;
}

struct NodeArgs : ClientArgs {
  std::string node;
  std::string reason;
};

int RunDrain(const NodeArgs& a, bool drain) {
  const std::string path = "/api/v1/nodes/" + UrlEncode(a.node) + (drain ? "/drain" : "/resume");
  StatusOr<Reply> r = Call(a, "POST", path, json{{"reason", a.reason}}.dump());
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(r->body);
  } else {
    std::printf("%s %s\n", a.node.c_str(), drain ? "drained" : "resumed");
  }
  return 0;
}

struct EventsArgs : ClientArgs {
  std::string job;
  int64_t after = 0;
  int limit = 1000;
};

int RunEvents(const EventsArgs& a) {
  std::string path =
      "/api/v1/events?after=" + std::to_string(a.after) + "&limit=" + std::to_string(a.limit);
  if (!a.job.empty()) path += "&job=" + UrlEncode(a.job);
  StatusOr<Reply> r = Call(a, "GET", path);
  if (!r.ok()) return Fail(r.status());
  if (a.json) {
    PrintJson(r->body);
    return 0;
  }
  for (const json& e : r->body["events"]) {
    std::printf("%lld %s %s -> %s: %s%s\n", static_cast<long long>(e.value("time_us", int64_t{0})),
                Str(e, "job").c_str(), Str(e, "from").c_str(), Str(e, "to").c_str(),
                Str(e, "reason").c_str(), CauseSuffix(e).c_str());
  }
  return 0;
}

}  // namespace

void RegisterClientCommands(CLI::App& app, int& rc) {
  {
    auto a = std::make_shared<SubmitArgs>();
    CLI::App* c = app.add_subcommand("submit", "Submit one job spec or a jobs: list (YAML/JSON)");
    c->add_option("FILE", a->file, "job file: one spec or a jobs: list")->required();
    c->add_option("--key", a->key, "idempotency key (default: a new random key)");
    AddCommon(c, *a);
    c->callback([a, &rc] { rc = RunSubmit(*a); });
  }
  {
    auto a = std::make_shared<QueueArgs>();
    CLI::App* c = app.add_subcommand("queue", "List jobs (pending and running unless --all)");
    c->add_option("--state", a->state, "only this state (PENDING, R, ...)");
    c->add_option("--user", a->user, "only this user");
    c->add_option("--queue", a->queue, "only this queue");
    c->add_flag("--all", a->all, "include finished jobs");
    AddCommon(c, *a);
    c->callback([a, &rc] { rc = RunQueue(*a); });
  }
  auto job_cmd = [&](const char* name, const char* help, auto run) {
    auto a = std::make_shared<JobArgs>();
    CLI::App* c = app.add_subcommand(name, help);
    c->add_option("JOB", a->job, "job id (17 or job-17)")->required();
    AddCommon(c, *a);
    c->callback([a, &rc, run] { rc = run(*a); });
  };
  job_cmd("show", "A job's state, placement, explanation and events", RunShow);
  job_cmd("cancel", "Cancel a job", [](const JobArgs& a) { return RunJobAction(a, "cancel"); });
  {
    auto a = std::make_shared<CompleteArgs>();
    CLI::App* c = app.add_subcommand(
        "complete",
        "Report that a running job's processes finished, with an exit report to diagnose");
    c->add_option("JOB", a->job, "job id (17 or job-17)")->required();
    c->add_option("--exit-code", a->exit_code, "the launcher's exit status (non-zero: FAILED)");
    c->add_option("--signal", a->signal, "the signal that killed it (1..64)")
        ->check(CLI::Range(1, 64));
    c->add_option("--log", a->log,
                  "a log of the job (its last 128 KiB are sent): NCCL, driver/Xid, launcher")
        ->check(CLI::ExistingFile);
    c->add_option("--node", a->node, "the node the log comes from (default: the job's only node)");
    AddCommon(c, *a);
    c->callback([a, &rc] { rc = RunComplete(*a); });
  }
  {
    auto a = std::make_shared<CompleteArgs>();
    CLI::App* c = app.add_subcommand(
        "report",
        "Send a running job's log: a transport fallback degrades it, a GPU fault drains the node");
    c->add_option("JOB", a->job, "job id (17 or job-17)")->required();
    c->add_option("--log", a->log, "the job's log (its last 128 KiB are sent)")
        ->required()
        ->check(CLI::ExistingFile);
    c->add_option("--node", a->node, "the node the log comes from (default: the job's only node)");
    AddCommon(c, *a);
    c->callback([a, &rc] { rc = RunReport(*a); });
  }
  job_cmd("explain", "Why a job waits, or why it runs where it does", RunExplain);
  {
    auto a = std::make_shared<ClientArgs>();
    CLI::App* c = app.add_subcommand("nodes", "Nodes with free/allocated GPUs, health, drain");
    AddCommon(c, *a);
    c->callback([a, &rc] { rc = RunNodes(*a); });
  }
  for (bool drain : {true, false}) {
    auto a = std::make_shared<NodeArgs>();
    CLI::App* c = app.add_subcommand(
        drain ? "drain" : "resume",
        drain ? "Drain a node (no new jobs; running ones stay)" : "Resume a drained node");
    c->add_option("NODE", a->node, "node name")->required();
    c->add_option("--reason", a->reason, "why (kept in the event log)");
    AddCommon(c, *a);
    c->callback([a, &rc, drain] { rc = RunDrain(*a, drain); });
  }
  {
    auto a = std::make_shared<EventsArgs>();
    CLI::App* c = app.add_subcommand("events", "The event log");
    c->add_option("--job", a->job, "only this job");
    c->add_option("--after", a->after, "events after this position");
    c->add_option("--limit", a->limit, "at most this many")->capture_default_str();
    AddCommon(c, *a);
    c->callback([a, &rc] { rc = RunEvents(*a); });
  }
}

}  // namespace toposched::cli
