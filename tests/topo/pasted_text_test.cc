// Issue 18, "text as people paste it": nvidia-smi topo -m text copied from terminals, chats and
// web pages. Every real topo -m sample in data/samples/nvidia-smi must read to exactly the same
// model after the manglings a copy adds (CRLF, a byte order mark, shell prompts before and after,
// Markdown fences, spaces instead of tabs); two tables as real web pages show them
// (data/samples/pasted) must read or be refused with the line and the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/import.h"
#include "topo/io/json_io.h"
#include "topo/io/nvidia_smi.h"

namespace toposched::topo::io {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

std::string Lines(const std::string& text, const std::function<std::string(std::string)>& f) {
  std::string out;
  size_t at = 0;
  while (at < text.size()) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    out += f(text.substr(at, nl - at)) + "\n";
    at = nl + 1;
  }
  return out;
}

// Each tab becomes a run of 2 to 4 spaces (changing from cell to cell), as a chat or a terminal
// without tab stops renders it.
std::string TabsToRaggedSpaces(const std::string& text) {
  std::string out;
  int n = 0;
  for (char c : text) {
    if (c == '\t') {
      out.append(static_cast<size_t>(2 + (n++ % 3)), ' ');
    } else {
      out += c;
    }
  }
  return out;
}

const std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>>&
Manglings() {
  static const auto* kAll =
      new std::vector<std::pair<std::string, std::function<std::string(const std::string&)>>>{
          {"crlf",
           [](const std::string& t) { return Lines(t, [](std::string l) { return l + "\r"; }); }},
          {"bom", [](const std::string& t) { return "\xEF\xBB\xBF" + t; }},
          {"bom+crlf",
           [](const std::string& t) {
             return "\xEF\xBB\xBF" + Lines(t, [](std::string l) { return l + "\r"; });
           }},
          {"prompts",
           [](const std::string& t) {
             return "user@gpu-node-07:~$ nvidia-smi topo -m\n" + t + "user@gpu-node-07:~$ \n";
           }},
          {"root prompt and conda env",
           [](const std::string& t) {
             return "(base) root@dgx:/workspace# nvidia-smi topo -m\n" + t +
                    "(base) root@dgx:/workspace# exit\n";
           }},
          {"markdown fence",
           [](const std::string& t) { return "```\n$ nvidia-smi topo -m\n" + t + "```\n"; }},
          {"trailing blank lines and prose",
           [](const std::string& t) { return t + "\n\n\nThanks for any help!\n"; }},
      };
  return *kAll;
}

TEST(PastedText, EveryRealTopoSampleReadsTheSameAfterEachMangling) {
  int checked = 0;
  for (const std::string& file : testing::SampleFiles("nvidia-smi", ".txt")) {
    const std::string text =
        testing::ReadFileText(testing::SourceDir() + "/data/samples/nvidia-smi/" + file);
    StatusOr<NodeTopology> base = ParseNvidiaSmiTopo(text, file);
    if (!base.ok()) continue;  // p2p and nvlink -s outputs: other readers
    const std::string want = TopologyToJson(*base);
    for (const auto& [name, mangle] : Manglings()) {
      SCOPED_TRACE(file + " / " + name);
      StatusOr<NodeTopology> got = ParseNvidiaSmiTopo(mangle(text), file);
      ASSERT_TRUE(got.ok()) << got.status().ToString();
      EXPECT_EQ(TopologyToJson(*got), want);
      ++checked;
    }
  }
  EXPECT_GE(checked, 30 * 7);  // 30 topo -m samples, 7 manglings
}

// Spaces instead of tabs: identical where the sample has no blank cells (a blank cell can only
// be placed by its column, and ragged spaces move the columns).
TEST(PastedText, RaggedSpacesInsteadOfTabsReadTheSameWithoutBlankCells) {
  int checked = 0;
  for (const std::string& file : testing::SampleFiles("nvidia-smi", ".txt")) {
    const std::string text =
        testing::ReadFileText(testing::SourceDir() + "/data/samples/nvidia-smi/" + file);
    StatusOr<NodeTopology> base = ParseNvidiaSmiTopo(text, file);
    if (!base.ok() || text.find("\t\t") != std::string::npos) continue;
    SCOPED_TRACE(file);
    StatusOr<NodeTopology> got = ParseNvidiaSmiTopo(TabsToRaggedSpaces(text), file);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(TopologyToJson(*got), TopologyToJson(*base));
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(PastedText, SingleSpacedTableWithBackwardRangesIsRefusedAtTheRange) {
  const std::string file = "nvidia-smi-single-spaces-backward-ranges-brick-house.txt";
  const std::string text =
      testing::ReadFileText(testing::SourceDir() + "/data/samples/pasted/" + file);
  ASSERT_FALSE(text.empty());
  StatusOr<NodeTopology> t = ParseNvidiaSmiTopo(text, file);
  ASSERT_THAT(
      t,
      StatusIs(
          StatusCode::kInvalidArgument,
          HasSubstr(
              "expected CPU Affinity to be a list like 0-23,48-71 or N/A, found '48-63,266-192'")));
  const std::string msg = t.status().message();
  // Line 4 of the file (GPU1's row, after the provenance line), the field, the bad range.
  EXPECT_THAT(msg, HasSubstr(file + ":4:")) << msg;
  EXPECT_THAT(msg, HasSubstr("CPU Affinity")) << msg;
  EXPECT_THAT(msg, HasSubstr("266-192")) << msg;
}

// A single-spaced matrix row with its CPU Affinity cell (third from the end) set to N/A.
std::string WithoutCpuAffinity(std::string line) {
  if (line.size() < 4 || line.substr(0, 3) != "GPU" || line.find(" X ") == std::string::npos) {
    return line;
  }
  std::vector<std::string> cells;
  size_t at = 0;
  while (at <= line.size()) {
    const size_t sp = std::min(line.find(' ', at), line.size());
    cells.push_back(line.substr(at, sp - at));
    at = sp + 1;
  }
  cells[cells.size() - 3] = "N/A";
  std::string out;
  for (const std::string& c : cells) out += (out.empty() ? "" : " ") + c;
  return out;
}

TEST(PastedText, SingleSpacedTableReadsOnceItsRangesAreValid) {
  // The same table with its backward ranges dropped (CPU Affinity N/A) and its cut marked: the
  // single spaces alone do not stop the reader.
  const std::string text = testing::ReadFileText(
      testing::SourceDir() +
      "/data/samples/pasted/nvidia-smi-single-spaces-backward-ranges-brick-house.txt");
  std::string fixed = Lines(text, WithoutCpuAffinity);
  // The page also cut the NIC rows off: the reader asks for a '# TRUNCATED' mark for that.
  fixed.insert(fixed.find("Legend:"), "# TRUNCATED\n");
  StatusOr<NodeTopology> t = ParseNvidiaSmiTopo(fixed, "fixed");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->gpus.size(), 8u);
  EXPECT_EQ(t->nics.size(), 12u);
}

// Each tab becomes one of six runs of tabs and spaces (cycling from cell to cell), as copies
// through documents, chats and READMEs leave them: a blank cell between two tabs becomes a cell
// that holds only a space, and the X on the diagonal gains stray spaces around it.
std::string TabsToIrregularRuns(const std::string& text) {
  static const char* kRuns[] = {"\t", " \t", "\t ", "  \t\t", "\t \t", "   "};
  std::string out;
  int n = 0;
  for (char c : text) {
    out += c == '\t' ? kRuns[n++ % 6] : std::string(1, c);
  }
  return out;
}

// Irregular whitespace everywhere in the matrix, blank cells included: every real sample whose
// affinity values are each present or all blank (every sample here) reads exactly as its clean
// output.
TEST(PastedText, IrregularRunsOfTabsAndSpacesReadTheSameIncludingBlankCells) {
  int checked = 0, with_blank_cells = 0;
  for (const std::string& file : testing::SampleFiles("nvidia-smi", ".txt")) {
    const std::string text =
        testing::ReadFileText(testing::SourceDir() + "/data/samples/nvidia-smi/" + file);
    StatusOr<NodeTopology> base = ParseNvidiaSmiTopo(text, file);
    if (!base.ok() || text.find('\t') == std::string::npos) continue;
    SCOPED_TRACE(file);
    StatusOr<NodeTopology> got = ParseNvidiaSmiTopo(TabsToIrregularRuns(text), file);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(TopologyToJson(*got), TopologyToJson(*base));
    ++checked;
    if (text.find("\t\t") != std::string::npos) ++with_blank_cells;
  }
  EXPECT_GE(checked, 5);
  EXPECT_GE(with_blank_cells, 3);
}

// A row that is truly short of a device cell is still refused at its line and column, however
// irregular the whitespace around it.
TEST(PastedText, IrregularRunsStillRefuseARowWithTooFewCells) {
  const std::string file = "12-rtx4090-8gpu-2nic-all-sys-go-gpuallocator17.txt";
  std::string text =
      testing::ReadFileText(testing::SourceDir() + "/data/samples/nvidia-smi/" + file);
  const size_t row = text.find("\nGPU1\t");
  ASSERT_NE(row, std::string::npos);
  text.erase(row + 6, 4);  // GPU1's first cell, "SYS\t"
  StatusOr<NodeTopology> t = ParseNvidiaSmiTopo(TabsToIrregularRuns(text), file);
  ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument,
                          AllOf(HasSubstr(file + ":4:"), HasSubstr("row GPU1"))));
}

TEST(PastedText, GluedCellsAreRefusedNamingTheLine) {
  const std::string file = "nvidia-smi-glued-cells-ai-atlas.txt";
  const std::string text =
      testing::ReadFileText(testing::SourceDir() + "/data/samples/pasted/" + file);
  ASSERT_FALSE(text.empty());
  StatusOr<NodeTopology> t = ParseNvidiaSmiTopo(text, file);
  ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument, HasSubstr("GPU0XNODENODE0-310N/A")));
  // Read without naming the format, the text is not taken for a matrix, and refused.
  EXPECT_FALSE(LooksLikeNvidiaSmiTopo(text));
  EXPECT_THAT(
      ImportTopologyText(text, file, TopoFormat::kAuto),
      StatusIs(StatusCode::kInvalidArgument, HasSubstr(file + ": unrecognised topology format")));
}

}  // namespace
}  // namespace toposched::topo::io
