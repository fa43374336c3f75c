// Golden files: an output compared byte for byte with a file kept in the source tree. After an
// intended change, TS_UPDATE_GOLDEN=1 rewrites the files instead; review their diff.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace toposched::testing {

// The file's bytes; a failed expectation (naming the path) when it cannot be read.
inline std::string ReadGolden(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `got` must equal the golden file at `path` (absolute) byte for byte; with TS_UPDATE_GOLDEN
// set, the file is rewritten with `got` instead.
inline void ExpectGolden(const std::string& path, const std::string& got) {
  if (std::getenv("TS_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(path, std::ios::binary) << got;
    return;
  }
  EXPECT_EQ(got, ReadGolden(path))
      << "output differs from the golden file " << path << " (TS_UPDATE_GOLDEN=1 rewrites it)";
}

// The names (without the extension) of the files in `dir` ending in `ext`, sorted: goldens are
// found by glob, never listed by hand.
inline std::vector<std::string> GoldenNames(const std::string& dir, const std::string& ext) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.size() > ext.size() && name.ends_with(ext)) {
      out.push_back(name.substr(0, name.size() - ext.size()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace toposched::testing
