// `toposched serve`: the daemon. Loads the cluster, opens the SQLite store (replaying what it
// holds), serves HTTP until SIGINT/SIGTERM.
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "api/server.h"
#include "api/service.h"
#include "cli/commands.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

namespace {

struct ServeArgs {
  std::string cluster;
  std::string db;
  std::string listen = "127.0.0.1:8470";
  std::string token_file;
  std::string port_file;
  int pass_interval_ms = 1000;
  size_t max_body_bytes = 1 << 20;
  std::string sync = "full";
  bool quiet = false;
};

StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFoundError(path + ": cannot read the token file");
  std::string t;
  std::getline(in, t);
  while (!t.empty() && (t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.size() < 16) {
    return InvalidArgumentError(path + ": token must be at least 16 characters");
  }
  return t;
}

// A fresh random token written to `path` (mode 0600).
StatusOr<std::string> MakeToken(const std::string& path) {
  std::random_device rd;
  std::string t;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) t += hex[rd() % 16];
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return NotFoundError(path + ": cannot write the token file");
  std::fprintf(f, "%s\n", t.c_str());
  std::fclose(f);
  chmod(path.c_str(), 0600);
  return t;
}

int RunServe(const ServeArgs& a) {
  if (a.quiet) spdlog::set_level(spdlog::level::warn);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%fZ level=%l %v", spdlog::pattern_time_type::utc);
  const size_t colon = a.listen.rfind(':');
  if (colon == std::string::npos) {
    return Fail(InvalidArgumentError("--listen: expected HOST:PORT, got \"" + a.listen + "\""));
  }
  api::ServerOptions so;
  so.host = a.listen.substr(0, colon);
  try {
    so.port = std::stoi(a.listen.substr(colon + 1));
  } catch (...) {
    return Fail(InvalidArgumentError("--listen: bad port in \"" + a.listen + "\""));
  }
  so.max_body_bytes = a.max_body_bytes;
  if (a.sync != "full" && a.sync != "normal") {
    return Fail(InvalidArgumentError("--sync: expected full or normal, got \"" + a.sync + "\""));
  }
  StatusOr<std::string> token =
      a.token_file.empty() ? MakeToken(a.db + ".token") : ReadToken(a.token_file);
  if (!token.ok()) return Fail(token.status());
  so.token = *token;
  if (a.token_file.empty()) {
    spdlog::warn("msg=\"no --token-file: generated a token\" token_file={}.token", a.db);
  }

  StatusOr<topo::Cluster> cluster = topo::io::ReadClusterYamlFile(a.cluster);
  if (!cluster.ok()) return Fail(cluster.status());
  cluster->Finalize();

  // Signals go to the thread waiting for them below, not to worker threads.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);

  api::ServiceOptions o;
  o.db_path = a.db;
  o.store.sync_full = a.sync == "full";
  o.pass_interval_ms = a.pass_interval_ms;
  StatusOr<std::unique_ptr<api::Service>> svc = api::Service::Open(*cluster, o);
  if (!svc.ok()) return Fail(svc.status());
  spdlog::info("msg=opened db={} replayed_inputs={} cluster={} nodes={}", a.db,
               (*svc)->replayed_inputs(), cluster->name, cluster->nodes.size());
  StatusOr<std::unique_ptr<api::Server>> server = api::Server::Start(**svc, so);
  if (!server.ok()) return Fail(server.status());
  if (!a.port_file.empty()) {
    // Written whole, then renamed, so a reader never sees a partial number.
    const std::string tmp = a.port_file + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    if (f == nullptr) return Fail(NotFoundError(a.port_file + ": cannot write"));
    std::fprintf(f, "%d\n", (*server)->port());
    std::fclose(f);
    std::rename(tmp.c_str(), a.port_file.c_str());
  }
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("msg=stopping signal={}", sig);
  (*server)->Stop();
  svc->reset();
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int& rc) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "run the scheduler daemon: REST API, metrics, durable SQLite store");
  cmd->add_option("--cluster", args->cluster, "cluster spec (YAML)")->required();
  cmd->add_option("--db", args->db, "SQLite database file (created when absent)")->required();
  cmd->add_option("--listen", args->listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--token-file", args->token_file,
                  "file holding the bearer token (default: a new one in DB.token)");
  cmd->add_option("--port-file", args->port_file, "write the port listened on to this file");
  cmd->add_option("--pass-interval-ms", args->pass_interval_ms, "periodic scheduling pass interval")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", args->max_body_bytes, "largest request body accepted")
      ->capture_default_str();
  cmd->add_option("--sync", args->sync,
                  "full: fsync every commit (power-loss safe); normal: crash safe only")
      ->capture_default_str();
  cmd->add_flag("--quiet", args->quiet, "log warnings and errors only");
  cmd->callback([args, &rc]() { rc = RunServe(*args); });
}

}  // namespace toposched::cli
