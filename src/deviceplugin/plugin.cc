#include "deviceplugin/plugin.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "deviceplugin/service.h"
#include "deviceplugin/v1beta1.grpc.pb.h"

namespace toposched::deviceplugin {

namespace {

// How long Stop lets in-flight calls finish before cancelling them. The plugin's calls answer
// in microseconds; ListAndWatch streams are ended first. 100 ms bounds a kubelet restart's
// re-serve.
constexpr std::chrono::milliseconds kShutdownGrace{100};

// Identity of a socket file: inode and change time; empty when it does not exist. A kubelet
// that restarts creates kubelet.sock anew, which changes both.
std::string SocketId(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_ino) + ":" + std::to_string(st.st_ctim.tv_sec) + "." +
         std::to_string(st.st_ctim.tv_nsec);
}

}  // namespace

StatusOr<std::unique_ptr<DevicePlugin>> DevicePlugin::Create(
    const topo::NodeTopology& topology, const std::map<std::string, DriverGpu>& driver,
    PluginOptions options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(DeviceTable devices, DeviceTable::Create(topology, driver));
  ASSIGN_OR_RETURN(std::shared_ptr<DeviceState> state,
                   DeviceState::Create(topology, std::move(devices), std::move(options)));
  return std::unique_ptr<DevicePlugin>(new DevicePlugin(std::move(state)));
}

DevicePlugin::DevicePlugin(std::shared_ptr<DeviceState> state) : state_(std::move(state)) {}

DevicePlugin::~DevicePlugin() { Stop(); }

Status DevicePlugin::Serve() {
  StopServer();
  const std::string path = state_->options().socket_path();
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return InternalError(path + ": cannot remove the old socket: " + std::strerror(errno));
  }
  service_ = std::make_unique<DevicePluginService>(state_);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (server_ == nullptr) {
    service_.reset();
    return Status(StatusCode::kUnavailable, path + ": cannot serve the device plugin there");
  }
  return OkStatus();
}

void DevicePlugin::StopServer() {
  if (server_ == nullptr) return;
  service_->EndStreams();
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
  server_.reset();
  service_.reset();
}

Status DevicePlugin::Register() const {
  const PluginOptions& o = state_->options();
  auto channel =
      grpc::CreateChannel("unix://" + o.kubelet_socket_path(), grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(o.endpoint);
  request.set_resource_name(o.resource_name);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty reply;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(o.register_timeout_ms));
  context.set_wait_for_ready(true);
  const grpc::Status s = stub->Register(&context, request, &reply);
  if (!s.ok()) {
    return Status(StatusCode::kUnavailable, "registering " + o.resource_name + " with " +
                                                o.kubelet_socket_path() + ": " + s.error_message());
  }
  return OkStatus();
}

Status DevicePlugin::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (server_ != nullptr) return FailedPreconditionError("the device plugin already runs");
    stopping_ = false;
    RETURN_IF_ERROR(Serve());
  }
  watcher_ = std::thread([this] { WatchLoop(); });
  return OkStatus();
}

// Each pass: the plugin's socket gone (the kubelet removes it when it starts) → serve again;
// kubelet.sock new or not yet registered with → register. The first pass runs at once.
void DevicePlugin::WatchLoop() {
  const PluginOptions& o = state_->options();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (SocketId(o.socket_path()).empty()) {
      if (Status s = Serve(); !s.ok()) {
        last_error_ = s;
        spdlog::error("msg=\"device plugin cannot serve\" error=\"{}\"", s.message());
      } else {
        registered_ = false;
      }
    }
    const std::string kubelet = SocketId(o.kubelet_socket_path());
    if (server_ != nullptr && !kubelet.empty() && (!registered_ || kubelet != kubelet_id_)) {
      lock.unlock();  // Register waits on the kubelet; Stop must not wait behind it
      const Status s = Register();
      lock.lock();
      last_error_ = s;
      registered_ = s.ok();
      if (s.ok()) {
        kubelet_id_ = kubelet;
        ++registrations_;
        spdlog::info("msg=\"registered with the kubelet\" resource={} endpoint={}", o.resource_name,
                     o.socket_path());
      } else {
        spdlog::warn("msg=\"registration failed, retrying\" error=\"{}\"", s.message());
      }
    }
    stop_cv_.wait_for(lock, std::chrono::milliseconds(o.restart_check_ms),
                      [this] { return stopping_; });
  }
}

void DevicePlugin::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  std::lock_guard<std::mutex> lock(mu_);
  if (server_ != nullptr) {
    StopServer();
    ::unlink(state_->options().socket_path().c_str());
  }
}

Status DevicePlugin::SetHealthy(std::string_view id, bool healthy) {
  return state_->SetHealthy(id, healthy);
}

int DevicePlugin::registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

Status DevicePlugin::last_register_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_error_;
}

}  // namespace toposched::deviceplugin
