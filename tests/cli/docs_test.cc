// The generated manual page and shell completions (`toposched man`, `toposched completion`),
// and where the binary finds its data files (cli/data_dir.h), through the real binary.
#include <gtest/gtest.h>

#include <string>

#include "cli/cli_util.h"

namespace {

using namespace toposched::cli_testing;  // NOLINT: RunCli, WriteTemp, TempDir, Slurp

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(CliDocs, ManPageCoversTheCommandTree) {
  Result r = RunCli("man");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind(".\\\" Generated", 0), 0u);
  EXPECT_TRUE(Has(r.out, ".TH TOPOSCHED 1"));
  EXPECT_TRUE(Has(r.out, ".SS \"toposched topo import [OPTIONS] FILE\""));
  EXPECT_TRUE(Has(r.out, ".SS \"toposched serve [OPTIONS]\""));
  EXPECT_TRUE(Has(r.out, "\\fB\\-\\-create\\-token\\fR"));
  EXPECT_TRUE(Has(r.out, "\\fIauto|nvidia\\-smi|hwloc|nccl\\-xml|json\\fR"));
  // Hidden commands document the others, not themselves.
  EXPECT_FALSE(Has(r.out, ".SS \"toposched completion"));
  EXPECT_FALSE(Has(r.out, ".SS \"toposched man"));
}

TEST(CliDocs, HiddenFromHelp) {
  Result r = RunCli("--help");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.out, "serve"));
  EXPECT_FALSE(Has(r.out, "completion"));
}

// The bash completion script, sourced into a real bash, completes commands, options and the
// choices of an option.
TEST(CliDocs, BashCompletionCompletes) {
  Result r = RunCli("completion bash");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string script = WriteTemp("completion.bash", r.out);
  struct Case {
    std::string words;
    int cword;
    std::string want;
  } cases[] = {
      {"toposched se", 1, "serve"},
      {"toposched topo im", 2, "import"},
      {"toposched topo import --format nc", 4, "nccl-xml"},
      {"toposched serve --create-t", 2, "--create-token"},
      {"toposched serve --sync x --create-t", 4, "--create-token"},  // a value is skipped
  };
  for (const Case& c : cases) {
    const std::string out = WriteTemp("completion.out", "");
    const std::string cmd = "bash -c 'source " + script + "; COMP_WORDS=(" + c.words +
                            "); COMP_CWORD=" + std::to_string(c.cword) +
                            "; _toposched; echo \"${COMPREPLY[*]}\"' >" + out + " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << c.words;
    std::string got = Slurp(out);
    if (!got.empty() && got.back() == '\n') got.pop_back();
    EXPECT_EQ(got, c.want) << c.words;
  }
}

TEST(CliDocs, ZshCompletionDefinesOneFunctionPerCommand) {
  Result r = RunCli("completion zsh");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("#compdef toposched\n", 0), 0u);
  EXPECT_TRUE(Has(r.out, "_toposched_cmd__topo__import() {"));
  EXPECT_TRUE(Has(r.out, "_toposched_cmd__place_node() {"));
  EXPECT_TRUE(Has(r.out, "'--format=[nvidia-smi|hwloc|nccl-xml|json|auto]:text:(auto "));
  EXPECT_TRUE(Has(r.out, "\n_toposched_cmd \"$@\"\n"));
  Result bad = RunCli("completion fish");
  EXPECT_EQ(bad.code, 2);
}

TEST(CliDocs, VersionFlag) {
  Result r = RunCli("--version");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("toposched ", 0), 0u);
}

// The build-tree binary finds the source tree's data from any working directory;
// TOPOSCHED_DATA_DIR overrides that.
TEST(CliDataDir, DemoDefaultsComeFromTheDataDirectory) {
  const std::string cmd = "cd / && " + std::string(TS_CLI) + " demo >/dev/null 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  Result missing = RunCli("--version >/dev/null; TOPOSCHED_DATA_DIR=/nonexistent-data " +
                          std::string(TS_CLI) + " demo");
  EXPECT_EQ(missing.code, 1);
  EXPECT_TRUE(Has(missing.err, "/nonexistent-data/clusters/h100-2rack.yaml")) << missing.err;
}

}  // namespace
