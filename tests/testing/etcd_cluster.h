// A real etcd cluster for tests: `members` etcd processes (Debian's /usr/bin/etcd) on free
// loopback ports, each with its own data directory under a temporary directory, started
// together and stopped (SIGKILL, waited for) when the object goes, nothing left running.
#pragma once

#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace toposched::testing {

inline constexpr const char* kEtcdBinary = "/usr/bin/etcd";

inline bool EtcdInstalled() { return access(kEtcdBinary, X_OK) == 0; }

// A port that was free a moment ago (bound to 0, read, closed).
inline int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

class EtcdCluster {
 public:
  explicit EtcdCluster(int members = 3) {
    char tmpl[] = "/tmp/toposched-etcd-XXXXXX";
    dir_ = mkdtemp(tmpl) ? tmpl : "";
    for (int i = 0; i < members; ++i) {
      client_ports_.push_back(FreeLoopbackPort());
      peer_ports_.push_back(FreeLoopbackPort());
    }
    for (int i = 0; i < members; ++i) {
      initial_ += (i ? "," : "") + Name(i) + "=http://127.0.0.1:" + std::to_string(peer_ports_[i]);
    }
    pids_.assign(members, -1);
  }
  ~EtcdCluster() {
    for (size_t i = 0; i < pids_.size(); ++i) Kill(static_cast<int>(i));
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

  // Starts every member and waits until the cluster answers a write (false after `timeout`).
  bool Start(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (!StartMember(static_cast<int>(i), "new")) return false;
    }
    return WaitWritable(timeout);
  }

  // A member stopped at once (SIGKILL), as a crashed machine.
  void Kill(int i) {
    if (pids_[i] <= 0) return;
    kill(pids_[i], SIGKILL);
    int st = 0;
    waitpid(pids_[i], &st, 0);
    pids_[i] = -1;
  }
  // A killed member started again on its data directory.
  bool Restart(int i) { return StartMember(i, "existing"); }

  // True once a write through any member succeeds.
  bool WaitWritable(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      for (size_t i = 0; i < pids_.size(); ++i) {
        if (pids_[i] <= 0) continue;
        httplib::Client c("http://127.0.0.1:" + std::to_string(client_ports_[i]));
        c.set_connection_timeout(0, 200000);
        c.set_read_timeout(0, 300000);
        auto r = c.Post("/v3/kv/put", R"({"key":"cHJvYmU=","value":"MQ=="})", "application/json");
        if (r && r->status == 200) return true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // "etcd://127.0.0.1:A,127.0.0.1:B,..."
  std::string Url() const {
    std::string u = "etcd://";
    for (size_t i = 0; i < client_ports_.size(); ++i) {
      u += (i ? "," : "") + std::string("127.0.0.1:") + std::to_string(client_ports_[i]);
    }
    return u;
  }
  std::vector<std::string> Endpoints() const {
    std::vector<std::string> out;
    for (int p : client_ports_) out.push_back("http://127.0.0.1:" + std::to_string(p));
    return out;
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string Name(int i) const { return "m" + std::to_string(i); }

  bool StartMember(int i, const std::string& state) {
    const std::string client = "http://127.0.0.1:" + std::to_string(client_ports_[i]);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_ports_[i]);
    std::vector<std::string> args = {
        kEtcdBinary, "--name", Name(i), "--data-dir", dir_ + "/" + Name(i), "--listen-client-urls",
        client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
        "--initial-advertise-peer-urls", peer, "--initial-cluster", initial_,
        "--initial-cluster-state", state, "--initial-cluster-token", "toposched-test",
        "--log-level", "error",
        // Raft's heartbeat and election timeout a third of etcd's defaults (100 ms, 1 s): on
        // loopback a round trip is microseconds, and the cluster elects its first raft leader,
        // and replaces a killed one, within the tests' second rather than seconds.
        "--heartbeat-interval", "30", "--election-timeout", "300"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const std::string log = dir_ + "/" + Name(i) + ".log";
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const int rc = posix_spawn(&pids_[i], kEtcdBinary, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) pids_[i] = -1;
    return rc == 0;
  }

  std::string dir_, initial_;
  std::vector<int> client_ports_, peer_ports_;
  std::vector<pid_t> pids_;
};

}  // namespace toposched::testing
