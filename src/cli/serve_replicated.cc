#include "cli/serve_replicated.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "api/replica.h"
#include "cli/commands.h"
#include "store/etcd_election.h"
#include "store/etcd_store.h"

namespace toposched::cli {

namespace {

// What ends a generation: a stop signal (the daemon exits) or a step-down (it is rebuilt).
struct GenerationEnd {
  std::mutex mu;
  std::condition_variable cv;
  int signal = 0;
  bool step_down = false;
};

// Between two tries to reopen the store after a step-down: etcd without quorum answers at once,
// and a second is short beside a lease TTL.
constexpr int kReopenPauseMs = 1000;

// One generation: the store opened as a standby, its replica and its listeners, until `end`.
// Returns the status that ended it (OK for a stop signal); `opened` tells whether it got as
// far as serving.
Status RunGeneration(const EtcdServeOptions& e, const topo::Cluster& cluster, api::ServiceOptions o,
                     api::ServerOptions& so, const std::string& port_file,
                     const GenerationHooks& hooks, GenerationEnd& end, bool& opened) {
  store::EtcdOptions eo;
  StatusOr<std::vector<std::string>> endpoints =
      store::ParseEtcdUrl(e.url, !e.cacert.empty() || !e.cert.empty());
  if (!endpoints.ok()) return endpoints.status();
  eo.endpoints = *endpoints;
  eo.ca_file = e.cacert;
  eo.cert_file = e.cert;
  eo.key_file = e.key;
  auto client = std::make_shared<store::EtcdClient>(eo);
  store::EtcdStoreOptions storeo;
  storeo.prefix = e.prefix;
  ASSIGN_OR_RETURN(std::unique_ptr<store::EtcdStore> st, store::EtcdStore::Open(client, storeo));
  store::EtcdStore* store = st.get();
  o.standby = true;
  o.db_path = e.url + e.prefix;
  ASSIGN_OR_RETURN(std::unique_ptr<api::Service> svc,
                   api::Service::Open(cluster, o, std::move(st)));
  spdlog::info("msg=\"opened as a standby\" store={} replayed_inputs={} cluster={} nodes={}",
               o.db_path, svc->replayed_inputs(), cluster.name, cluster.nodes.size());
  store::ElectionOptions el;
  el.key = store->LeaderKey();
  el.identity = e.advertise_url;
  el.lease_ttl_s = e.lease_ttl_s;
  RETURN_IF_ERROR(el.Validate());
  Status step_down_why;
  ASSIGN_OR_RETURN(
      std::unique_ptr<api::Replica> replica,
      api::Replica::Start(*svc, *store, std::make_unique<store::LeaderElection>(client, el), {},
                          [&end, &step_down_why](const Status& why) {
                            std::lock_guard<std::mutex> lk(end.mu);
                            step_down_why = why;
                            end.step_down = true;
                            end.cv.notify_all();
                          }));
  api::Replica* r = replica.get();
  so.replica = [r] {
    const api::Replica::View v = r->view();
    return api::ReplicaStatus{v.leader, v.leader_url, v.unread_ms > api::kStaleAfterMs};
  };
  so.extra_metrics = [r] { return r->MetricsText(); };
  if (o.extender) {
    api::Service* service = svc.get();
    so.extender = [service](const std::string& verb,
                            const std::string& body) -> StatusOr<std::string> {
      if (service->standby()) {
        return Status(StatusCode::kUnavailable,
                      "this daemon is a standby: the extender verbs are answered by the leader "
                      "only");
      }
      return service->ExtenderCall(verb, body);
    };
  }
  if (hooks.start) RETURN_IF_ERROR(hooks.start(*svc));
  StatusOr<std::unique_ptr<api::Server>> server = api::Server::Start(*svc, so);
  if (!server.ok()) {
    if (hooks.stop) hooks.stop();
    return server.status();
  }
  so.port = (*server)->port();  // a rebuilt generation listens where this one did
  if (!port_file.empty()) {
    const std::string tmp = port_file + ".tmp";
    if (FILE* f = std::fopen(tmp.c_str(), "w"); f != nullptr) {
      std::fprintf(f, "%d\n", so.port);
      std::fclose(f);
      std::rename(tmp.c_str(), port_file.c_str());
    }
  }
  opened = true;
  {
    std::unique_lock<std::mutex> lk(end.mu);
    end.cv.wait(lk, [&] { return end.signal != 0 || end.step_down; });
  }
  (*server)->Stop();
  if (hooks.stop) hooks.stop();
  replica.reset();  // before the service: it applies to it and reads its store
  svc.reset();
  so.replica = nullptr;
  so.extra_metrics = nullptr;
  so.extender = nullptr;
  std::lock_guard<std::mutex> lk(end.mu);
  if (end.signal != 0) return OkStatus();
  end.step_down = false;
  return step_down_why;
}

}  // namespace

Status EtcdServeOptions::Validate() const {
  RETURN_IF_ERROR(store::ParseEtcdUrl(url, false).status());
  if (cert.empty() != key.empty()) {
    return InvalidArgumentError("--etcd-cert and --etcd-key: give both or neither");
  }
  if (advertise_url.rfind("http://", 0) != 0 && advertise_url.rfind("https://", 0) != 0) {
    return InvalidArgumentError(
        "--advertise-url: needed with an etcd store, as http(s)://HOST:PORT where the other "
        "daemons and clients reach this one; got \"" +
        advertise_url + "\"");
  }
  store::ElectionOptions el;
  el.key = prefix + "/leader";
  el.identity = advertise_url;
  el.lease_ttl_s = lease_ttl_s;
  RETURN_IF_ERROR(el.Validate());
  store::EtcdStoreOptions so;
  so.prefix = prefix;
  return so.Validate();
}

int RunEtcdServe(const EtcdServeOptions& e, const topo::Cluster& cluster,
                 api::ServiceOptions service_options, api::ServerOptions server_options,
                 const sigset_t& stop_signals, const std::string& port_file,
                 const GenerationHooks& hooks) {
  if (Status st = e.Validate(); !st.ok()) return Fail(st);
  auto shared_end = std::make_shared<GenerationEnd>();
  GenerationEnd& end = *shared_end;
  // The stop signals are blocked in every thread; this one takes them.
  std::thread signals([shared_end, stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::lock_guard<std::mutex> lk(shared_end->mu);
    shared_end->signal = sig;
    shared_end->cv.notify_all();
  });
  signals.detach();  // the process ends with it blocked when no signal came
  bool ever_opened = false;
  while (true) {
    bool opened = false;
    Status st =
        RunGeneration(e, cluster, service_options, server_options, port_file, hooks, end, opened);
    ever_opened = ever_opened || opened;
    {
      std::lock_guard<std::mutex> lk(end.mu);
      if (end.signal != 0) {
        spdlog::info("msg=stopping signal={}", end.signal);
        return 0;
      }
    }
    if (!ever_opened) return Fail(st);
    spdlog::warn("msg=\"rebuilding as a standby from the log\" why=\"{}\"", st.message());
    std::unique_lock<std::mutex> lk(end.mu);
    end.cv.wait_for(lk, std::chrono::milliseconds(kReopenPauseMs), [&] { return end.signal != 0; });
  }
}

}  // namespace toposched::cli
