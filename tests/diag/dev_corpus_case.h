// One log of data/diagnosis-corpus/dev and what its thread concluded, as the family tests use
// it: the top cause must be that category and cite the line that says so.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "diag/diagnose.h"
#include "testing/samples.h"

namespace toposched::diag {

struct DevCorpusCase {
  std::string file;      // in data/diagnosis-corpus/dev
  std::string expected;  // its INDEX.tsv `expected`
  std::string key;       // a substring of a line the top cause must cite
};

// The case's log diagnosed alone: its top cause and the line it cites.
inline void ExpectTopCauseCites(const DevCorpusCase& c) {
  const std::string path = testing::SourceDir() + "/data/diagnosis-corpus/dev/" + c.file;
  auto d = DiagnoseFiles({path}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_FALSE(d->causes.empty()) << c.file << ": no known cause";
  const Cause& top = d->causes.front();
  EXPECT_EQ(CategoryName(top.category), c.expected) << c.file << ": " << top.summary;
  bool cited = false;
  for (const Evidence& ev : top.evidence) cited |= ev.text.find(c.key) != std::string::npos;
  EXPECT_TRUE(cited) << c.file << ": the top cause does not cite \"" << c.key << "\"";
}

// A parameterized test's name: the file's first 40 characters (others than letters and digits
// as '_') and the case's index.
inline std::string DevCorpusCaseName(const ::testing::TestParamInfo<DevCorpusCase>& info) {
  std::string name = info.param.file.substr(0, 40);
  for (char& ch : name) {
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  }
  return name + "_" + std::to_string(info.index);
}

}  // namespace toposched::diag
