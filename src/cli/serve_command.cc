// `toposched serve`: the daemon. Loads the cluster, opens the SQLite store (replaying what it
// holds), serves HTTP until SIGINT/SIGTERM.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>

#include "api/extender.h"
#include "api/kube_binder.h"
#include "api/kube_watch.h"
#include "api/server.h"
#include "api/service.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/serve_replicated.h"
#include "core/file.h"
#include "core/time_units.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

namespace {

struct ServeArgs {
  std::string cluster;
  std::string db;
  // --store: sqlite:PATH (the same as --db PATH) or etcd://HOST:PORT[,...] (docs/ha.md).
  std::string store;
  EtcdServeOptions etcd;
  std::string listen = "127.0.0.1:8470";
  std::string token_file;
  std::string agent_token_file;  // the node agents' token (ServerOptions::agent_token)
  bool create_token = false;
  std::string port_file;
  int pass_interval_ms = 1000;
  size_t max_body_bytes = 1 << 20;
  int max_connections = 512;
  std::string sync = "full";
  bool quiet = false;
  // Kubernetes scheduler extender (docs/kubernetes.md).
  bool extender = true;
  std::string extender_config;
  int64_t reservation_timeout_s = 0;  // 0: the config's, else 300
  std::string kube_api_server;        // "": in-cluster when KUBERNETES_SERVICE_HOST is set
  std::string kube_token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token";
  std::string kube_ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt";
  bool kube_watch = true;  // follow Nodes and Pods when an API server is known
  int kube_watch_timeout_s = 300;
  std::string kube_scheduler_name = "toposched";  // the Pods followed: spec.schedulerName
  // LEVEL=KEY: the Node label giving the node's domain at a level of the model.
  std::vector<std::string> kube_level_labels;
  double kube_nvlink_gbps = 0;  // per-GPU NVLink GB/s of NVLink domains the labels add
  // The extender's HTTPS listener for kube-scheduler (client certificates).
  std::string extender_listen;  // HOST:PORT, "": off
  std::string extender_tls_cert, extender_tls_key, extender_client_ca;
  std::string extender_port_file;
};

// The extender options from a YAML (or JSON) file: the keys of api::ExtenderOptions, with
// reservation_timeout_s in seconds. An unknown key is an error.
Status ReadExtenderConfig(const std::string& path, api::ExtenderOptions& o) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return InvalidArgumentError(path + ": " + e.what());
  }
  if (root.IsNull()) return OkStatus();
  if (!root.IsMap()) return InvalidArgumentError(path + ": expected a mapping of options");
  const std::pair<const char*, std::string*> strings[] = {
      {"group_name_key", &o.group_name_key},
      {"group_size_key", &o.group_size_key},
      {"kubeflow_job_key", &o.kubeflow_job_key},
      {"kubeflow_type_key", &o.kubeflow_type_key},
      {"kubeflow_index_key", &o.kubeflow_index_key},
      {"master_replicas_key", &o.master_replicas_key},
      {"annotation_prefix", &o.annotation_prefix},
      {"gpu_resource", &o.gpu_resource},
      {"gpus_annotation_key", &o.gpus_annotation_key}};
  for (const auto& kv : root) {
    const std::string key = kv.first.as<std::string>("");
    const std::string where = path + ":" + std::to_string(kv.first.Mark().line + 1) + ": " + key;
    try {
      bool known = false;
      for (const auto& [name, out] : strings) {
        if (key == name) {
          *out = kv.second.as<std::string>();
          known = true;
        }
      }
      if (known) continue;
      if (key == "pod_index_keys") {
        o.pod_index_keys = kv.second.as<std::vector<std::string>>();
      } else if (key == "reservation_timeout_s") {
        o.reservation_timeout_us = kv.second.as<int64_t>() * kUsPerS;
      } else if (key == "max_score") {
        o.max_score = kv.second.as<int64_t>();
      } else {
        return InvalidArgumentError(where + ": unknown option");
      }
    } catch (const std::exception& e) {
      return InvalidArgumentError(where + ": " + e.what());
    }
  }
  return OkStatus();
}

StatusOr<std::string> ReadToken(const std::string& path) {
  // A token is a line of tens of bytes; 64 KiB bounds a device or pipe given by mistake.
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, 64 * 1024, "a token file"));
  std::string t = text.substr(0, text.find('\n'));
  while (!t.empty() && (t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.size() < 16) {
    return InvalidArgumentError(path + ": token must be at least 16 characters");
  }
  return t;
}

// A fresh random token written to `path`, created with mode 0600 (never readable by others, not
// even for a moment). `exclusive`: fail with AlreadyExists when the file exists.
StatusOr<std::string> MakeToken(const std::string& path, bool exclusive) {
  std::random_device rd;
  std::string t;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 40; ++i) t += hex[rd() % 16];
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC), 0600);
  if (fd < 0 && errno == EEXIST) {
    return Status(StatusCode::kAlreadyExists, path + ": the token file exists");
  }
  if (fd < 0) return NotFoundError(path + ": cannot write the token file");
  fchmod(fd, 0600);  // an existing file keeps its mode otherwise
  const std::string line = t + "\n";
  const bool written = write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
  if (close(fd) != 0 || !written) return NotFoundError(path + ": cannot write the token file");
  return t;
}

// --token-file, created first when absent and --create-token is given.
StatusOr<std::string> TokenFromFile(const std::string& path, bool create) {
  if (create) {
    StatusOr<std::string> made = MakeToken(path, /*exclusive=*/true);
    if (made.ok()) {
      spdlog::info("msg=\"created the token file\" token_file={}", path);
      return made;
    }
    if (made.status().code() != StatusCode::kAlreadyExists) return made.status();
  }
  return ReadToken(path);
}

// Every connection is a descriptor: the soft limit (often 1,024) would cap --max-connections
// below what was asked. Raised to the hard limit, at most 65,536; a failure only logs.
void RaiseOpenFilesLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= r.rlim_max) return;
  const rlim_t want = r.rlim_max == RLIM_INFINITY ? 65536 : std::min<rlim_t>(r.rlim_max, 65536);
  if (want <= r.rlim_cur) return;
  const rlim_t was = r.rlim_cur;
  r.rlim_cur = want;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
    spdlog::warn("msg=\"cannot raise the open-files limit\" soft={}", was);
  }
}

// --listen and --extender-listen (with the extender listener's certificate flags) into the
// listeners' options.
Status ParseListeners(const ServeArgs& a, api::ServerOptions& so) {
  const size_t colon = a.listen.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("--listen: expected HOST:PORT, got \"" + a.listen + "\"");
  }
  so.host = a.listen.substr(0, colon);
  try {
    so.port = std::stoi(a.listen.substr(colon + 1));
  } catch (...) {
    return InvalidArgumentError("--listen: bad port in \"" + a.listen + "\"");
  }
  so.max_body_bytes = a.max_body_bytes;
  so.max_connections = a.max_connections;
  if (!a.extender_listen.empty()) {
    if (!a.extender) return InvalidArgumentError("--extender-listen with --no-extender");
    const size_t ec = a.extender_listen.rfind(':');
    if (ec == std::string::npos) {
      return InvalidArgumentError("--extender-listen: expected HOST:PORT, got \"" +
                                  a.extender_listen + "\"");
    }
    so.extender_tls.host = a.extender_listen.substr(0, ec);
    try {
      so.extender_tls.port = std::stoi(a.extender_listen.substr(ec + 1));
    } catch (...) {
      return InvalidArgumentError("--extender-listen: bad port in \"" + a.extender_listen + "\"");
    }
    if (a.extender_tls_cert.empty() || a.extender_tls_key.empty() || a.extender_client_ca.empty()) {
      return InvalidArgumentError(
          "--extender-listen: needs --extender-tls-cert, --extender-tls-key and "
          "--extender-client-ca (kube-scheduler authenticates with a client certificate)");
    }
    so.extender_tls.cert_file = a.extender_tls_cert;
    so.extender_tls.key_file = a.extender_tls_key;
    so.extender_tls.client_ca_file = a.extender_client_ca;
  } else if (!a.extender_tls_cert.empty() || !a.extender_tls_key.empty() ||
             !a.extender_client_ca.empty() || !a.extender_port_file.empty()) {
    return InvalidArgumentError(
        "--extender-tls-cert, --extender-tls-key, --extender-client-ca and --extender-port-file "
        "need --extender-listen");
  }
  return OkStatus();
}

// With the extender: its options from --extender-config and --reservation-timeout-s, checked
// (before anything is written).
Status ReadExtenderOptions(const ServeArgs& a, api::ExtenderOptions& extender_options) {
  if (!a.extender) return OkStatus();
  if (!a.extender_config.empty()) {
    RETURN_IF_ERROR(ReadExtenderConfig(a.extender_config, extender_options));
  }
  if (a.reservation_timeout_s < 0) {
    return InvalidArgumentError("--reservation-timeout-s: must be > 0");
  }
  if (a.reservation_timeout_s > 0) {
    extender_options.reservation_timeout_us = a.reservation_timeout_s * kUsPerS;
  }
  return extender_options.Validate();
}

// The bearer token (--token-file, created first with --create-token; without it a new one in
// DB.token) and the node agents' token (--agent-token-file).
Status ReadTokens(const ServeArgs& a, api::ServerOptions& so) {
  if (a.create_token && a.token_file.empty()) {
    return InvalidArgumentError("--create-token: needs --token-file");
  }
  if (a.token_file.empty() && a.db.empty()) {
    return InvalidArgumentError(
        "--store etcd://: needs --token-file (every daemon of the store takes the same token)");
  }
  StatusOr<std::string> token = a.token_file.empty()
                                    ? MakeToken(a.db + ".token", /*exclusive=*/false)
                                    : TokenFromFile(a.token_file, a.create_token);
  if (!token.ok()) return token.status();
  so.token = *token;
  if (a.token_file.empty()) {
    spdlog::warn("msg=\"no --token-file: generated a token\" token_file={}.token", a.db);
  }

  if (!a.agent_token_file.empty()) {
    StatusOr<std::string> agent = TokenFromFile(a.agent_token_file, false);
    if (!agent.ok()) return agent.status().WithPrefix("--agent-token-file");
    so.agent_token = *agent;
  }
  return OkStatus();
}

// --kube-level-label LEVEL=KEY, checked against the cluster whether or not a watch runs: the
// Node label key of each level named.
StatusOr<std::map<std::string, std::string>> LevelLabelKeys(const ServeArgs& a,
                                                            const topo::Cluster& cluster) {
  std::map<std::string, std::string> level_keys;
  for (const std::string& arg : a.kube_level_labels) {
    StatusOr<std::pair<std::string, std::string>> kv =
        SplitAssignment("--kube-level-label", arg, "LEVEL=KEY");
    if (!kv.ok()) return kv.status();
    const std::string& level = kv->first;
    if (cluster.FindLevel(level) < 0) {
      return InvalidArgumentError("--kube-level-label: the cluster has no level \"" + level + "\"");
    }
    level_keys[level] = kv->second;
  }
  return level_keys;
}

// Blocks SIGINT and SIGTERM in this thread (and the threads it starts), so that they go to the
// thread waiting for them (sigwait), not to worker threads. Returns the set blocked.
sigset_t BlockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

// The service's options from the flags; the Kubernetes clients come later (ConnectKubeApi).
api::ServiceOptions ServiceOptionsOf(const ServeArgs& a,
                                     const api::ExtenderOptions& extender_options) {
  api::ServiceOptions o;
  o.db_path = a.db;
  o.nvlink_gbps = a.kube_nvlink_gbps;
  o.cluster_source = a.cluster;
  o.store.sync_full = a.sync == "full";
  o.pass_interval_ms = a.pass_interval_ms;
  o.extender = a.extender;
  o.extender_options = extender_options;
  return o;
}

// The API server the extender binds pods through: --kube-api-server, else, in a pod, the one
// its service account talks to; "" when none is known.
std::string KubeApiServer(const ServeArgs& a) {
  std::string server = a.kube_api_server;
  if (server.empty()) {
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (host != nullptr && *host != '\0') {
      const std::string h = host;
      server = "https://" + (h.find(':') != std::string::npos ? "[" + h + "]" : h) + ":" +
               (port != nullptr && *port != '\0' ? port : "443");
    }
  }
  return server;
}

// The clients of the Kubernetes API server, owned for the service that uses them.
struct KubeClients {
  std::unique_ptr<api::KubeApiBinder> binder;
  std::unique_ptr<api::KubeApiEvictor> evictor;
  api::KubeApiOptions api;
};

// With the extender and an API server known: the binder that creates Bindings and the evictor
// (o.binder, o.evictor point at them). Logs which binder the extender uses.
Status ConnectKubeApi(const ServeArgs& a, api::ServiceOptions& o, KubeClients& kube) {
  if (!a.extender) return OkStatus();
  const std::string server = KubeApiServer(a);
  if (!server.empty() && server != "none") {
    kube.api.server = server;
    kube.api.token_file = a.kube_token_file;
    kube.api.ca_file = a.kube_ca_file;
    StatusOr<std::unique_ptr<api::KubeApiBinder>> b = api::KubeApiBinder::Create(kube.api);
    if (!b.ok()) return b.status().WithPrefix("--kube-api-server");
    kube.binder = std::move(b).value();
    o.binder = kube.binder.get();
    // Pods of a pod group the queue stopped (preempted, requeued, cancelled) are evicted.
    StatusOr<std::unique_ptr<api::KubeApiEvictor>> e = api::KubeApiEvictor::Create(kube.api);
    if (!e.ok()) return e.status().WithPrefix("--kube-api-server");
    kube.evictor = std::move(e).value();
    o.evictor = kube.evictor.get();
  }
  spdlog::info("msg=extender binder={}", kube.binder ? server : std::string("none"));
  if (a.extender_listen.empty()) {
    // Earlier builds served kube-scheduler's verbs without a token on loopback; now they need
    // a credential, and kube-scheduler can only present a client certificate.
    spdlog::warn(
        "msg=\"extender verbs only with the bearer token: kube-scheduler, which cannot send "
        "one, needs --extender-listen with client certificates (docs/kubernetes.md, The "
        "extender listener)\"");
  }
  return OkStatus();
}

// Followed through the API server: Nodes (NotReady → unhealthy, cordon → drained) and this
// scheduler's Pods (deleted or finished → their GPUs freed). Destroyed in reverse order: the
// watchers before the sinks they feed.
struct KubeWatch {
  std::unique_ptr<api::ServiceNodeSink> node_sink;
  std::unique_ptr<api::ServicePodSink> pod_sink;
  std::unique_ptr<api::KubeWatcher> node_watcher, pod_watcher;
};

// Starts the Node and Pod watches of `kube_api` feeding the service.
Status StartKubeWatch(const ServeArgs& a, const api::KubeApiOptions& kube_api,
                      const std::map<std::string, std::string>& level_keys, api::Service& svc,
                      KubeWatch& watch) {
  api::KubeWatchOptions wo;
  wo.api = kube_api;
  wo.watch_timeout_s = a.kube_watch_timeout_s;
  wo.labels.level_keys = level_keys;
  watch.node_sink = std::make_unique<api::ServiceNodeSink>(svc);
  watch.pod_sink = std::make_unique<api::ServicePodSink>(svc);
  StatusOr<std::unique_ptr<api::KubeWatcher>> nw = api::KubeWatcher::Nodes(wo, *watch.node_sink);
  if (!nw.ok()) return nw.status().WithPrefix("--kube-watch-timeout-s");
  watch.node_watcher = std::move(nw).value();
  StatusOr<std::unique_ptr<api::KubeWatcher>> pw =
      api::KubeWatcher::Pods(wo, *watch.pod_sink, a.kube_scheduler_name);
  if (!pw.ok()) return pw.status();
  watch.pod_watcher = std::move(pw).value();
  spdlog::info("msg=\"watching Kubernetes nodes and pods\" server={} scheduler_name={}",
               kube_api.server, a.kube_scheduler_name);
  return OkStatus();
}

// Writes `port` to `path` (nothing when "") whole, then renames it, so a reader never sees a
// partial number.
Status WritePortFile(const std::string& path, int port) {
  if (path.empty()) return OkStatus();
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) return NotFoundError(path + ": cannot write");
  std::fprintf(f, "%d\n", port);
  std::fclose(f);
  std::rename(tmp.c_str(), path.c_str());
  return OkStatus();
}

// --store and --db into the SQLite path (a.db) or the etcd options (a.etcd.url): one of them.
Status ResolveStore(ServeArgs& a) {
  const std::string sqlite = "sqlite:";
  if (a.store.empty()) {
    if (a.db.empty()) return InvalidArgumentError("serve: give --db PATH or --store");
    return OkStatus();
  }
  if (a.store.rfind(sqlite, 0) == 0) {
    const std::string path = a.store.substr(sqlite.size());
    if (path.empty()) return InvalidArgumentError("--store sqlite:PATH: the path is empty");
    if (!a.db.empty() && a.db != path) {
      return InvalidArgumentError("--db " + a.db + " and --store " + a.store +
                                  " name two stores: give one");
    }
    a.db = path;
    return OkStatus();
  }
  if (a.store.rfind("etcd://", 0) == 0) {
    if (!a.db.empty()) {
      return InvalidArgumentError("--db " + a.db + " with --store " + a.store + ": give one");
    }
    a.etcd.url = a.store;
    return a.etcd.Validate();
  }
  return InvalidArgumentError(
      "--store: expected sqlite:PATH or etcd://HOST:PORT[,HOST:PORT...], "
      "got \"" +
      a.store + "\"");
}

int RunServe(ServeArgs a) {
  if (a.quiet) spdlog::set_level(spdlog::level::warn);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%fZ level=%l %v", spdlog::pattern_time_type::utc);
  RaiseOpenFilesLimit();
  // The flags are checked, and the tokens read, before anything is written.
  api::ServerOptions so;
  if (Status st = ResolveStore(a); !st.ok()) return Fail(st);
  if (Status st = ParseListeners(a, so); !st.ok()) return Fail(st);
  if (a.sync != "full" && a.sync != "normal") {
    return Fail(InvalidArgumentError("--sync: expected full or normal, got \"" + a.sync + "\""));
  }
  api::ExtenderOptions extender_options;
  if (Status st = ReadExtenderOptions(a, extender_options); !st.ok()) return Fail(st);
  if (Status st = ReadTokens(a, so); !st.ok()) return Fail(st);

  StatusOr<topo::Cluster> cluster = topo::io::ReadClusterYamlFile(a.cluster);
  if (!cluster.ok()) return Fail(cluster.status());
  cluster->Finalize();
  StatusOr<std::map<std::string, std::string>> level_keys = LevelLabelKeys(a, *cluster);
  if (!level_keys.ok()) return Fail(level_keys.status());

  const sigset_t set = BlockStopSignals();
  api::ServiceOptions o = ServiceOptionsOf(a, extender_options);
  KubeClients kube;
  if (Status st = ConnectKubeApi(a, o, kube); !st.ok()) return Fail(st);
  if (!a.etcd.url.empty()) {
    KubeWatch watch;
    GenerationHooks hooks;
    if (kube.binder && a.kube_watch) {
      hooks.start = [&](api::Service& svc) {
        return StartKubeWatch(a, kube.api, *level_keys, svc, watch);
      };
      hooks.stop = [&watch] {
        watch.pod_watcher.reset();
        watch.node_watcher.reset();
      };
    }
    o.db_path = a.etcd.url + a.etcd.prefix;
    return RunEtcdServe(a.etcd, *cluster, o, so, set, a.port_file, hooks);
  }
  StatusOr<std::unique_ptr<api::Service>> svc = api::Service::Open(*cluster, o);
  if (!svc.ok()) return Fail(svc.status());
  spdlog::info("msg=opened db={} replayed_inputs={} cluster={} nodes={}", a.db,
               (*svc)->replayed_inputs(), cluster->name, cluster->nodes.size());
  if (a.extender) {
    api::Service* service = svc->get();
    so.extender = [service](const std::string& verb, const std::string& body) {
      return service->ExtenderCall(verb, body);
    };
  }
  KubeWatch watch;
  if (kube.binder && a.kube_watch) {
    if (Status st = StartKubeWatch(a, kube.api, *level_keys, **svc, watch); !st.ok()) {
      return Fail(st);
    }
  }
  StatusOr<std::unique_ptr<api::Server>> server = api::Server::Start(**svc, so);
  if (!server.ok()) return Fail(server.status());
  if (Status st = WritePortFile(a.port_file, (*server)->port()); !st.ok()) return Fail(st);
  if (Status st = WritePortFile(a.extender_port_file, (*server)->extender_port()); !st.ok()) {
    return Fail(st);
  }
  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("msg=stopping signal={}", sig);
  (*server)->Stop();
  watch.pod_watcher.reset();
  watch.node_watcher.reset();
  svc->reset();
  return 0;
}

}  // namespace

void RegisterServeCommand(CLI::App& app, int& rc) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Run the scheduler daemon: REST API, metrics, durable SQLite store");
  cmd->add_option("--cluster", args->cluster, "cluster spec (YAML)")->required();
  cmd->add_option("--db", args->db, "SQLite database file (created when absent); or --store");
  cmd->add_option("--store", args->store,
                  "sqlite:PATH (as --db PATH) or etcd://HOST:PORT[,HOST:PORT...]: a store on etcd "
                  "shared by several daemons, one leading, the others hot standbys (docs/ha.md)");
  cmd->add_option("--store-prefix", args->etcd.prefix, "etcd: the prefix of the store's keys")
      ->capture_default_str();
  cmd->add_option("--etcd-cacert", args->etcd.cacert,
                  "etcd: CA of the members' certificates (PEM; the members are reached over TLS)");
  cmd->add_option("--etcd-cert", args->etcd.cert, "etcd: this daemon's client certificate (PEM)");
  cmd->add_option("--etcd-key", args->etcd.key, "etcd: the client certificate's key (PEM)");
  cmd->add_option("--lease-ttl-s", args->etcd.lease_ttl_s,
                  "etcd: the leadership lease; a standby takes over within about this long "
                  "after the leader stops (15: kube-scheduler's default lease)")
      ->capture_default_str();
  cmd->add_option("--advertise-url", args->etcd.advertise_url,
                  "etcd: http(s)://HOST:PORT where clients and the other daemons reach this one "
                  "(standbys redirect changes to the leader's)");
  cmd->add_option("--listen", args->listen, "HOST:PORT to listen on (port 0: any free port)")
      ->capture_default_str();
  cmd->add_option("--token-file", args->token_file,
                  "file holding the bearer token (default: a new one in DB.token)");
  cmd->add_option("--agent-token-file", args->agent_token_file,
                  "file holding the node agents' token: it may only send node topologies");
  cmd->add_flag("--create-token", args->create_token,
                "create --token-file with a new random token (mode 0600) when it does not exist");
  cmd->add_option("--port-file", args->port_file, "write the port listened on to this file");
  cmd->add_option("--pass-interval-ms", args->pass_interval_ms, "periodic scheduling pass interval")
      ->capture_default_str();
  cmd->add_option("--max-body-bytes", args->max_body_bytes, "largest request body accepted")
      ->capture_default_str();
  cmd->add_option("--max-connections", args->max_connections,
                  "connections served at once, per listener; beyond it a connection is told 503 "
                  "(GET /healthz is still answered)")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--sync", args->sync,
                  "full: fsync every commit (power-loss safe); normal: crash safe only")
      ->capture_default_str();
  cmd->add_flag("--quiet", args->quiet, "log warnings and errors only");
  cmd->add_flag("--extender,!--no-extender", args->extender,
                "serve the Kubernetes scheduler extender at POST /extender/<verb> (default on)");
  cmd->add_option("--extender-config", args->extender_config,
                  "extender options (YAML): gang label keys, annotation prefix, GPU resource, "
                  "reservation_timeout_s, max_score");
  cmd->add_option("--reservation-timeout-s", args->reservation_timeout_s,
                  "release a pod gang's unbound reservations after this long without progress "
                  "(default 300)");
  cmd->add_option("--kube-api-server", args->kube_api_server,
                  "API server the bind verb creates Bindings in (default: in-cluster when "
                  "KUBERNETES_SERVICE_HOST is set; none: bind only records)");
  cmd->add_option("--kube-token-file", args->kube_token_file,
                  "service account token for --kube-api-server (re-read on every bind)")
      ->capture_default_str();
  cmd->add_flag("--kube-watch,!--no-kube-watch", args->kube_watch,
                "follow the API server's Nodes and Pods (default on when an API server is known): "
                "a NotReady or deleted node is unhealthy, a cordoned one drained; a deleted or "
                "finished pod frees its GPUs");
  cmd->add_option("--kube-scheduler-name", args->kube_scheduler_name,
                  "the Pods followed are those with this spec.schedulerName")
      ->capture_default_str();
  cmd->add_option("--kube-level-label", args->kube_level_labels,
                  "LEVEL=KEY: the Node label whose value names the node's domain at that level of "
                  "the cluster's network (repeatable; default: the network.topology.* key whose "
                  "last segment is the level's name); a node the labels put elsewhere is moved "
                  "in the model");
  cmd->add_option("--kube-nvlink-gbps", args->kube_nvlink_gbps,
                  "per-GPU NVLink bandwidth (GB/s) of a multi-node NVLink domain that a node's "
                  "nvidia.com/gpu.clique names and the cluster lacks (none: such a clique is "
                  "refused and logged)");
  cmd->add_option("--kube-watch-timeout-s", args->kube_watch_timeout_s,
                  "seconds before the API server ends each watch (it is re-opened)")
      ->capture_default_str();
  cmd->add_option("--extender-listen", args->extender_listen,
                  "HOST:PORT of the extender's HTTPS listener for kube-scheduler (client "
                  "certificates; off when not given)");
  cmd->add_option("--extender-tls-cert", args->extender_tls_cert,
                  "the extender listener's certificate (PEM)");
  cmd->add_option("--extender-tls-key", args->extender_tls_key,
                  "the extender listener's private key (PEM)");
  cmd->add_option("--extender-client-ca", args->extender_client_ca,
                  "CA whose client certificates the extender listener accepts (PEM)");
  cmd->add_option("--extender-port-file", args->extender_port_file,
                  "write the extender listener's port to this file");
  cmd->add_option("--kube-ca-file", args->kube_ca_file, "CA bundle of the API server (https)")
      ->capture_default_str();
  cmd->callback([args, &rc]() { rc = RunServe(*args); });
}

}  // namespace toposched::cli
