// The device plugin's life with the kubelet: serve v1beta1.DevicePlugin on a Unix socket in the
// kubelet's device-plugin directory, register with the kubelet (v1beta1.Registration on
// kubelet.sock), and when the kubelet restarts (it removes every plugin socket and creates
// kubelet.sock anew) serve again and register again. Knows nothing of flags or of where the
// topology came from.
#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/status.h"
#include "deviceplugin/device_state.h"
#include "deviceplugin/devices.h"
#include "deviceplugin/options.h"
#include "topo/node_topology.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace toposched::deviceplugin {

class DevicePluginService;

// Thread-safe. Owns its gRPC server and a watch thread between Start and Stop.
class DevicePlugin {
 public:
  // InvalidArgument for bad options, a topology without GPUs, or device ids that clash.
  static StatusOr<std::unique_ptr<DevicePlugin>> Create(
      const topo::NodeTopology& topology, const std::map<std::string, DriverGpu>& driver,
      PluginOptions options);
  ~DevicePlugin();
  DevicePlugin(const DevicePlugin&) = delete;
  DevicePlugin& operator=(const DevicePlugin&) = delete;

  // Serves on options.socket_path() (a stale socket file there is replaced), registers once and
  // starts watching the kubelet. A registration that fails (no kubelet yet, or it refused) is
  // logged and retried at each check: Start fails only when the socket cannot be served.
  Status Start();
  // Ends the streams, stops the server and the watch, removes the socket. Idempotent.
  void Stop();

  // Container requests follow the extender's choice for the pod being admitted, read through
  // `list` (DeviceState::EnableGangChoices). Before Start only.
  void EnableGangChoices(PodListFn list) { state_->EnableGangChoices(std::move(list)); }
  // NotFound for an unknown device id; a change is streamed to the kubelet.
  Status SetHealthy(std::string_view id, bool healthy);
  // The daemon's failed GPUs (DeviceState::SetDaemonFailed); a change is streamed.
  Status SetDaemonFailed(const std::vector<int>& positions) {
    return state_->SetDaemonFailed(positions);
  }
  const DeviceState& state() const { return *state_; }
  // Successful Register calls so far (1 after a first registration, +1 per kubelet restart).
  int registrations() const;
  // The last registration's error (OK after a success).
  Status last_register_error() const;

 private:
  explicit DevicePlugin(std::shared_ptr<DeviceState> state);

  Status Serve();     // (re)creates the socket and a new server; mu_ held
  void StopServer();  // mu_ held
  Status Register() const;
  void WatchLoop();

  std::shared_ptr<DeviceState> state_;
  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::thread watcher_;
  int registrations_ = 0;
  Status last_error_;
  bool registered_ = false;  // with the kubelet whose socket is kubelet_id_
  std::string kubelet_id_;   // "<inode>:<ctime ns>" of kubelet.sock when last registered
};

}  // namespace toposched::deviceplugin
