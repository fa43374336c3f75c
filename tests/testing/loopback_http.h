// A real HTTP server on 127.0.0.1 for tests that play another party over HTTP (the Kubernetes
// API server): the test adds its handlers to server(), then Start(); the server is stopped and
// its thread joined when the object goes, on every path out of the test (a failed ASSERT too).
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

namespace toposched::testing {

class LoopbackHttp {
 public:
  LoopbackHttp() = default;
  LoopbackHttp(const LoopbackHttp&) = delete;
  LoopbackHttp& operator=(const LoopbackHttp&) = delete;
  ~LoopbackHttp() { Stop(); }

  httplib::Server& server() { return srv_; }

  // Binds an ephemeral port and serves on a thread; false (and a test failure) when it is not
  // serving within 5 s.
  bool Start() {
    port_ = srv_.bind_to_any_port("127.0.0.1");
    if (port_ <= 0) {
      ADD_FAILURE() << "no loopback port to bind";
      return false;
    }
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!srv_.is_running()) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "the loopback server did not start within 5 s";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

  void Stop() {
    srv_.stop();
    if (thread_.joinable()) thread_.join();
  }

  int port() const { return port_; }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  httplib::Server srv_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace toposched::testing
