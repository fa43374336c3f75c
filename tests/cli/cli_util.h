// Helpers for the CLI tests: run the real `toposched` binary (TS_CLI) through the shell and
// capture its exit code, stdout and stderr; write and read files in one temporary directory
// shared by every test of the binary.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace toposched::cli_testing {

struct Result {
  int code = -1;
  std::string out, err;
};

// The source tree, and the V100 sample several CLI tests place on.
inline const std::string kSrc = TS_SOURCE_DIR;
inline const std::string kV100 =
    kSrc + "/data/samples/nvidia-smi/02-v100-sxm2-8gpu-dgx1like-2socket-1nic-oneflow-dlperf.txt";

inline std::string TempDir() {
  static std::string dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "toposched-cli-XXXXXX").string();
    char* d = mkdtemp(tmpl.data());
    return std::string(d ? d : "/tmp");
  }();
  return dir;
}

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline Result RunCli(const std::string& args) {
  static int n = 0;
  std::string out = TempDir() + "/out" + std::to_string(n) + ".txt";
  std::string err = TempDir() + "/err" + std::to_string(n++) + ".txt";
  std::string cmd = std::string(TS_CLI) + " " + args + " >" + out + " 2>" + err;
  int st = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = Slurp(out);
  r.err = Slurp(err);
  return r;
}

inline std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string p = TempDir() + "/" + name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

}  // namespace toposched::cli_testing
