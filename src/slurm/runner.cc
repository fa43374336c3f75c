#include "slurm/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace toposched::slurm {

namespace {

constexpr size_t kMaxOutputBytes = 64u << 20;

std::string Joined(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

}  // namespace

StatusOr<CommandResult> ProcessRunner::Run(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgumentError("empty command");
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    return Status(StatusCode::kUnavailable, std::string("pipe: ") + std::strerror(errno));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return Status(StatusCode::kUnavailable, std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return Status(StatusCode::kUnavailable, std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    execvp(args[0], args.data());
    const char* msg = "exec failed\n";
    (void)!write(2, msg, std::strlen(msg));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  CommandResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (sinks[i]->size() < kMaxOutputBytes) sinks[i]->append(buf, static_cast<size_t>(n));
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) close(f.fd);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (r.exit_code == 127 && r.err == "exec failed\n") {
    return Status(StatusCode::kUnavailable, argv[0] + ": cannot run (not installed?)");
  }
  return r;
}

StatusOr<std::string> RunChecked(CommandRunner& runner, const std::vector<std::string>& argv) {
  auto r = runner.Run(argv);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    std::string err = r->err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return Status(StatusCode::kUnavailable,
                  Joined(argv) + ": exit " + std::to_string(r->exit_code) + ": " + err);
  }
  return std::move(r->out);
}

}  // namespace toposched::slurm
