// The kubelet's side of the Device Plugin API v1beta1, for tests: a Registration server on a
// Unix socket (what the kubelet serves on kubelet.sock) that records every RegisterRequest,
// and a client of the plugin's own socket. Real gRPC over real Unix sockets; no kubelet runs
// on the test machines.
#pragma once

#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "deviceplugin/v1beta1.grpc.pb.h"

namespace toposched::testing {

// How long a test waits for the plugin to register or stream: far above the plugin's 1 s
// check interval (options.restart_check_ms, 50 ms in these tests), so only a real failure
// reaches it.
inline constexpr std::chrono::seconds kKubeletWait{10};

class FakeKubelet final : public v1beta1::Registration::Service {
 public:
  // Serves on `socket` (removed first when it exists).
  explicit FakeKubelet(const std::string& socket) {
    std::filesystem::remove(socket);
    grpc::ServerBuilder b;
    b.AddListeningPort("unix://" + socket, grpc::InsecureServerCredentials());
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~FakeKubelet() override { Shutdown(); }
  void Shutdown() {
    if (server_ == nullptr) return;
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
    server_.reset();
  }
  bool serving() const { return server_ != nullptr; }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    std::lock_guard<std::mutex> lock(mu_);
    requests_.push_back(*request);
    cv_.notify_all();
    return grpc::Status::OK;
  }
  // True once `n` requests have come, within kKubeletWait.
  bool WaitForRequests(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kKubeletWait, [&] { return requests_.size() >= n; });
  }
  std::vector<v1beta1::RegisterRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<v1beta1::RegisterRequest> requests_;
};

// A client of the plugin's socket, as the kubelet dials it.
inline std::unique_ptr<v1beta1::DevicePlugin::Stub> PluginClient(const std::string& socket) {
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials()));
}

// A fresh directory under /tmp (short: Unix socket paths hold 107 bytes), removed with its
// contents at the end.
class SocketDir {
 public:
  SocketDir() {
    std::string tmpl = "/tmp/tsdp.XXXXXX";
    char* d = mkdtemp(tmpl.data());
    path_ = d != nullptr ? d : "";
  }
  ~SocketDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace toposched::testing
