// `toposched serve --store etcd://...`: one of several daemons sharing a store on etcd
// (docs/ha.md). Each generation of the daemon opens the store as a hot standby, follows the log,
// and leads when elected; a leader that must step down (lease lost, append fenced) is torn down
// and rebuilt as a standby from the log, on the same port, until a stop signal.
#pragma once

#include <signal.h>

#include <functional>
#include <string>

#include "api/server.h"
#include "api/service.h"
#include "core/status.h"
#include "topo/cluster.h"

namespace toposched::cli {

struct EtcdServeOptions {
  std::string url;  // etcd://HOST:PORT[,HOST:PORT...]
  std::string prefix = "/toposched";
  std::string cacert, cert, key;  // client TLS (https to the members)
  // The leadership lease (store::ElectionOptions::lease_ttl_s gives the reasoning of 15 s).
  int lease_ttl_s = 15;
  // Where the other daemons send writes to this one when it leads: http(s)://HOST:PORT.
  std::string advertise_url;
  Status Validate() const;
};

// Hooks around each generation's service: started after it opens (the Kubernetes watches),
// stopped before it closes.
struct GenerationHooks {
  std::function<Status(api::Service&)> start;
  std::function<void()> stop;
};

// Serves until SIGINT/SIGTERM (blocked in `stop_signals`). The first generation's errors
// (etcd unreachable, wrong certificates, another daemon's schema under the prefix) end it at once
// with a one-line message and exit code 1; later ones are retried.
int RunEtcdServe(const EtcdServeOptions& e, const topo::Cluster& cluster,
                 api::ServiceOptions service_options, api::ServerOptions server_options,
                 const sigset_t& stop_signals, const std::string& port_file,
                 const GenerationHooks& hooks);

}  // namespace toposched::cli
