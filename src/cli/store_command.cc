// `toposched store check`: replays a store's whole log of inputs through a fresh scheduler, as a
// new standby catches up, and checks what the chaos rounds (scripts/chaos-ha.sh) and an operator
// need to trust it: the log is dense (every sequence number once, in order), no log key of an
// etcd store was ever written twice (its etcd version is 1), the scheduler's invariants hold
// after every input (no GPU in two jobs), the replayed events are the stored ones, and no
// idempotency key names two submits. Reads only: a store that is absent or empty is refused.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/service.h"
#include "cli/commands.h"
#include "store/etcd_client.h"
#include "store/etcd_store.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::cli {

namespace {

struct StoreCheckArgs {
  std::string cluster;
  std::string store;  // sqlite:PATH or etcd://HOST:PORT[,...]
  std::string prefix = "/toposched";
  std::string cacert, cert, key;
  bool json = false;
};

// Log keys read per range request when their versions are checked (versions and revisions only,
// a few hundred bytes a key: a page stays far below the gateway's answer sizes).
constexpr int64_t kVersionPage = 1000;

// The facts about one store's log.
struct LogFacts {
  std::vector<store::InputRecord> inputs;
  int64_t rewritten_keys = -1;  // etcd: log keys whose version is not 1; -1: not an etcd store
  std::string first_rewritten;
};

// An etcd store under `a.prefix`, refused when nothing is there (opening it would write the
// layout version into an empty prefix).
StatusOr<std::unique_ptr<store::EtcdStore>> OpenEtcd(const StoreCheckArgs& a,
                                                     std::shared_ptr<store::EtcdClient>& client) {
  store::EtcdOptions eo;
  ASSIGN_OR_RETURN(eo.endpoints,
                   store::ParseEtcdUrl(a.store, !a.cacert.empty() || !a.cert.empty()));
  eo.ca_file = a.cacert;
  eo.cert_file = a.cert;
  eo.key_file = a.key;
  client = std::make_shared<store::EtcdClient>(eo);
  ASSIGN_OR_RETURN(
      store::EtcdRange any,
      client->Range(a.prefix + "/", store::EtcdClient::PrefixEnd(a.prefix + "/"), 1, true));
  if (any.count == 0) {
    return NotFoundError("etcd prefix " + a.prefix + "/ holds no store (no keys under it)");
  }
  store::EtcdStoreOptions so;
  so.prefix = a.prefix;
  return store::EtcdStore::Open(client, so);
}

// Log keys under `prefix`/log/ whose etcd version is not 1 (written more than once).
Status CountRewrittenKeys(const store::EtcdClient& client, const std::string& prefix,
                          LogFacts& facts) {
  facts.rewritten_keys = 0;
  std::string from = prefix + "/log/";
  const std::string end = store::EtcdClient::PrefixEnd(prefix + "/log/");
  while (true) {
    ASSIGN_OR_RETURN(store::EtcdRange page, client.Range(from, end, kVersionPage));
    for (const store::EtcdKeyValue& kv : page.kvs) {
      if (kv.version == 1) continue;
      if (facts.rewritten_keys++ == 0) {
        facts.first_rewritten = kv.key + " (version " + std::to_string(kv.version) + ")";
      }
    }
    if (!page.more || page.kvs.empty()) return OkStatus();
    from = page.kvs.back().key + std::string(1, '\0');
  }
}

// Opens the store and replays it with the invariants checked after each input; the facts.
StatusOr<LogFacts> CheckStore(const StoreCheckArgs& a, const topo::Cluster& cluster) {
  api::ServiceOptions o;
  o.standby = true;  // takes no writes, runs no passes
  o.background_passes = false;
  o.check_each_input = true;
  o.cluster_source = a.cluster;
  LogFacts facts;
  std::unique_ptr<store::JobStore> st;
  const std::string sqlite = "sqlite:";
  if (a.store.rfind("etcd://", 0) == 0) {
    std::shared_ptr<store::EtcdClient> client;
    ASSIGN_OR_RETURN(std::unique_ptr<store::EtcdStore> es, OpenEtcd(a, client));
    RETURN_IF_ERROR(CountRewrittenKeys(*client, a.prefix, facts));
    o.db_path = a.store + a.prefix;
    st = std::move(es);
  } else if (a.store.rfind(sqlite, 0) == 0 && a.store.size() > sqlite.size()) {
    o.db_path = a.store.substr(sqlite.size());
    if (!std::filesystem::exists(o.db_path)) {
      return NotFoundError(o.db_path + ": no such database");
    }
    ASSIGN_OR_RETURN(st, store::OpenSqliteStore(o.db_path, o.store));
  } else {
    return InvalidArgumentError(
        "--store: expected sqlite:PATH or etcd://HOST:PORT[,HOST:PORT...], got \"" + a.store +
        "\"");
  }
  store::JobStore* raw = st.get();
  ASSIGN_OR_RETURN(facts.inputs, raw->ReadInputs());  // dense and in order, or DataLoss
  // Open replays every input (invariants after each), then compares the replayed events with
  // the stored ones.
  ASSIGN_OR_RETURN(std::unique_ptr<api::Service> svc,
                   api::Service::Open(cluster, o, std::move(st)));
  RETURN_IF_ERROR(svc->CheckInvariants());
  if (svc->applied_seq() != static_cast<int64_t>(facts.inputs.size())) {
    return Status(StatusCode::kDataLoss, o.db_path + ": replayed to input " +
                                             std::to_string(svc->applied_seq()) + " of " +
                                             std::to_string(facts.inputs.size()));
  }
  return facts;
}

// Idempotency keys that name more than one submit input: key → the job ids.
std::map<std::string, std::vector<int64_t>> DuplicateKeys(
    const std::vector<store::InputRecord>& in) {
  std::map<std::string, std::vector<int64_t>> by_key, dup;
  for (const store::InputRecord& r : in) {
    if (r.kind == "submit" && !r.idem_key.empty()) by_key[r.idem_key].push_back(r.job_id);
  }
  for (auto& [k, ids] : by_key) {
    if (ids.size() > 1) dup[k] = ids;
  }
  return dup;
}

int RunStoreCheck(const StoreCheckArgs& a) {
  spdlog::set_level(spdlog::level::err);  // the replay's per-input notes are not the answer
  StatusOr<topo::Cluster> cluster = topo::io::ReadClusterYamlFile(a.cluster);
  if (!cluster.ok()) return Fail(cluster.status());
  cluster->Finalize();
  StatusOr<LogFacts> facts = CheckStore(a, *cluster);
  if (!facts.ok()) return Fail(facts.status());
  const std::map<std::string, std::vector<int64_t>> dup = DuplicateKeys(facts->inputs);
  const bool bad = !dup.empty() || facts->rewritten_keys > 0;
  if (a.json) {
    nlohmann::ordered_json j;
    j["inputs"] = facts->inputs.size();
    j["invariants_each_input"] = "ok";
    j["rewritten_log_keys"] = facts->rewritten_keys;
    j["duplicate_idempotency_keys"] = dup;
    nlohmann::ordered_json log = nlohmann::ordered_json::array();
    for (const store::InputRecord& r : facts->inputs) {
      log.push_back({r.seq, r.kind, r.time_us, r.job_id, r.idem_key});
    }
    j["log"] = std::move(log);  // [seq, kind, time_us, job_id, idempotency key]
    std::printf("%s\n", j.dump().c_str());
    return bad ? 1 : 0;
  }
  std::printf("inputs: %zu\n", facts->inputs.size());
  std::printf("invariants after each input: ok\n");
  std::printf("idempotency keys on two submits: %zu%s\n", dup.size(),
              dup.empty() ? "" : (" (first: " + dup.begin()->first + ")").c_str());
  if (facts->rewritten_keys >= 0) {
    std::printf(
        "log keys written more than once: %lld%s\n", static_cast<long long>(facts->rewritten_keys),
        facts->first_rewritten.empty() ? "" : (" (first: " + facts->first_rewritten + ")").c_str());
  }
  return bad ? 1 : 0;
}

}  // namespace

void RegisterStoreCommands(CLI::App& app, int& rc) {
  auto args = std::make_shared<StoreCheckArgs>();
  CLI::App* store = app.add_subcommand("store", "The daemon's store of inputs");
  store->require_subcommand(1);
  CLI::App* check = store->add_subcommand(
      "check",
      "Replay a store's whole log, checking the invariants after every input, the log's "
      "linearity and the idempotency keys (exit 1 when one fails)");
  check->add_option("--cluster", args->cluster, "Cluster YAML the store was written with")
      ->required();
  check->add_option("--store", args->store, "sqlite:PATH or etcd://HOST:PORT[,HOST:PORT...]")
      ->required();
  check->add_option("--store-prefix", args->prefix, "etcd: the prefix of the store's keys")
      ->capture_default_str();
  check->add_option("--etcd-cacert", args->cacert, "etcd: CA of the members' certificates (PEM)");
  check->add_option("--etcd-cert", args->cert, "etcd: client certificate (PEM)");
  check->add_option("--etcd-key", args->key, "etcd: the client certificate's key (PEM)");
  check->add_flag("--json", args->json,
                  "One JSON object: the facts and the log ([seq, kind, time_us, job_id, key])");
  check->callback([args, &rc] { rc = RunStoreCheck(*args); });
}

}  // namespace toposched::cli
