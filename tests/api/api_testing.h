// Helpers for the daemon tests: temporary directories, job specs, and a real `toposched serve`
// child process (started, waited for, SIGKILLed) that tests talk to over loopback HTTP.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace toposched::testing_api {

// These tests are HTTP clients, and Debian's cpp-httplib client writes without MSG_NOSIGNAL: a
// server that closes a connection on a refused request while the client is still sending (413)
// would kill the test process with SIGPIPE instead of failing the write. Clients ignore it, as
// the toposched CLI does (src/cli/client.cc).
inline const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

inline std::string MakeTempDir(const std::string& prefix) {
  std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  char* d = mkdtemp(tmpl.data());
  return d ? std::string(d) : std::string();
}

inline void RemoveDir(const std::string& dir) {
  std::error_code ec;
  if (!dir.empty()) std::filesystem::remove_all(dir, ec);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// One job of `gpus` GPUs as one replica (a TP group of that size), in JSON.
inline std::string JobJson(const std::string& name, int gpus, int priority = 0,
                           const std::string& queue = "default") {
  return "{\"name\": \"" + name + "\", \"user\": \"tester\", \"queue\": \"" + queue +
         "\", \"priority\": " + std::to_string(priority) +
         ", \"replicas\": 1, \"gpus_per_replica\": " + std::to_string(gpus) +
         ", \"layout\": {\"tp\": " + std::to_string(gpus) + "}, \"model_params\": \"8B\"}";
}

// A `toposched serve` child on 127.0.0.1 with an OS-chosen port (read from --port-file).
class ServeProcess {
 public:
  ServeProcess(std::string cli, std::string cluster, std::string db, std::string token_file,
               std::string dir)
      : cli_(std::move(cli)),
        cluster_(std::move(cluster)),
        db_(std::move(db)),
        token_file_(std::move(token_file)),
        dir_(std::move(dir)) {}
  ~ServeProcess() { Kill(); }

  // Starts the child and waits until it has written its port (up to `timeout`). False on failure.
  bool Start(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    const std::string port_file = dir_ + "/port." + std::to_string(starts_);
    const std::string log = dir_ + "/serve." + std::to_string(starts_++) + ".log";
    std::error_code ec;
    std::filesystem::remove(port_file, ec);
    std::vector<std::string> args = {cli_, "serve", "--cluster", cluster_,
                                     // A URL (etcd://, sqlite:) is a --store; a path the --db.
                                     IsStoreUrl(db_) ? "--store" : "--db", db_, "--listen", listen_,
                                     "--port-file", port_file, "--token-file", token_file_,
                                     "--pass-interval-ms", "50", "--quiet"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // posix_spawn, not fork: the test has client threads running when it restarts the server.
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    const int rc = posix_spawn(&pid_, cli_.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
      pid_ = -1;
      return false;
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      std::string p = ReadFile(port_file);
      if (!p.empty() && p.back() == '\n') {
        port_ = std::atoi(p.c_str());
        return port_ > 0;
      }
      int st = 0;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

  void Kill(int sig = SIGKILL) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int st = 0;
    waitpid(pid_, &st, 0);
    pid_ = -1;
  }

  static bool IsStoreUrl(const std::string& s) {
    return s.rfind("sqlite:", 0) == 0 || s.find("://") != std::string::npos;
  }
  // Appended to the serve command line on the next Start.
  void set_extra_args(std::vector<std::string> args) { extra_args_ = std::move(args); }
  // HOST:PORT for --listen on the next Start (default 127.0.0.1:0, any free port).
  void set_listen(std::string listen) { listen_ = std::move(listen); }
  // Sends `sig` (SIGSTOP, SIGCONT) without waiting for the child.
  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }
  bool running() const { return pid_ > 0; }
  int port() const { return port_; }
  std::string log(int start) const {
    return ReadFile(dir_ + "/serve." + std::to_string(start) + ".log");
  }

 private:
  std::string cli_, cluster_, db_, token_file_, dir_;
  std::vector<std::string> extra_args_;
  std::string listen_ = "127.0.0.1:0";
  pid_t pid_ = -1;
  int port_ = 0;
  int starts_ = 0;
};

}  // namespace toposched::testing_api
