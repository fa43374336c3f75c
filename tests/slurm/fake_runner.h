// A CommandRunner for tests: answers commands with captured output and records every call.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "slurm/runner.h"
#include "testing/samples.h"

namespace toposched::slurm::testing_util {

inline std::string Data(const std::string& name) {
  return ::toposched::testing::ReadFileText(::toposched::testing::SourceDir() +
                                            "/tests/slurm/testdata/" + name);
}

class FakeRunner : public CommandRunner {
 public:
  std::map<std::string, CommandResult> answers;  // joined argv → result
  std::vector<std::string> calls;
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv) override {
    std::string key;
    for (const std::string& a : argv) key += (key.empty() ? "" : " ") + a;
    calls.push_back(key);
    auto it = answers.find(key);
    if (it != answers.end()) return it->second;
    if (argv.size() > 2 && (argv[1] == "update" || argv[1] == "release")) return CommandResult{};
    return CommandResult{1, "", "unexpected command " + key};
  }
  bool Called(const std::string& c) const {
    return std::find(calls.begin(), calls.end(), c) != calls.end();
  }
};

}  // namespace toposched::slurm::testing_util
