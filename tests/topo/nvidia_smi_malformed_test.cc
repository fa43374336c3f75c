// Broken input for the nvidia-smi readers: every case must come back as InvalidArgument naming
// "<source>:<line>:<column>:" and what was expected, never crash. A mutation loop over the real
// samples checks that arbitrary damage gives an error or a valid topology.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/strings.h"
#include "testing/samples.h"
#include "testing/status_matchers.h"
#include "topo/io/nvidia_smi.h"

namespace toposched::topo::io {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

// A well-formed base that the cases break one way each.
const char kGood[] =
    "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
    "GPU0\t X \tNV12\tPIX\t0-23\t0\t\tN/A\n"
    "GPU1\tNV12\t X \tSYS\t24-47\t1\t\tN/A\n"
    "NIC0\tPIX\tSYS\t X \n"
    "\n"
    "NIC Legend:\n"
    "\n"
    "  NIC0: mlx5_0\n";

std::string ReplaceFirst(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  if (at == std::string::npos) ADD_FAILURE() << "no '" << from << "' in the base";
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  s[n / 2] = '\0';  // at least one NUL whatever the seed gives
  return s;
}

struct MalformedCase {
  std::string name;
  std::string text;
  int line;              // expected line in "t.txt:<line>:"
  std::string expected;  // a piece of the message naming what was expected
};

std::vector<MalformedCase> Cases() {
  const std::string good = kGood;
  return {
      {"TruncatedRowMissingCells",
       ReplaceFirst(good, "GPU1\tNV12\t X \tSYS\t", "GPU1\tNV12\t X \t"), 3,
       "expected 3 device cells in row GPU1"},
      {"RowEndsEarly", ReplaceFirst(good, "NIC0\tPIX\tSYS\t X \n", "NIC0\tPIX\tSYS\n"), 4,
       "expected 3 device cells in row NIC0"},
      {"UnknownCellLabel", ReplaceFirst(good, "\tSYS\t24-47", "\tFOO\t24-47"), 3,
       "expected a path (X, NV<n>, PIX, PXB, PHB, NODE, SYS or SOC)"},
      {"UnknownRowLabel", ReplaceFirst(good, "NIC0\tPIX\tSYS\t X", "FOO\tPIX\tSYS\t X"), 4,
       "expected a row label from the header"},
      {"NonSquareExtraColumn", ReplaceFirst(good, "\tPIX\t0-23", "\tPIX\tSYS\t0-23"), 2,
       "expected 3 device cells in row GPU0 (one per header device), found more"},
      {"MoreGpuRowsThanHeaderGpus",
       ReplaceFirst(good, "NIC0\tPIX", "GPU2\tNV12\tNV12\t X \t0-1\t0\t\tN/A\nNIC0\tPIX"), 4,
       "expected a row label from the header (GPU0 GPU1 NIC0), found 'GPU2'"},
      {"AsymmetricPair", ReplaceFirst(good, "NIC0\tPIX\tSYS", "NIC0\tPIX\tPXB"), 4,
       "expected a symmetric matrix, found GPU1-NIC0 = PXB here but SYS at line 3"},
      {"EmptyInput", "", 1, "found empty input"},
      {"HeaderOnly", "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n", 1,
       "expected matrix rows (GPU0  X  NV...) after the header"},
      {"HeaderThenLegend", "\tGPU0\tGPU1\n\nLegend:\n  X = Self\n", 1, "expected matrix rows"},
      {"NoHeader", "GPU0\t X \tNV2\nGPU1\tNV2\t X \n", 1,
       "expected a header row of device names (GPU0 GPU1 ...)"},
      {"ProseOnly", "nothing to see here\n", 1, "expected an nvidia-smi topo -m matrix"},
      {"BinaryGarbage", RandomBytes(4096, 12345), 0, "expected printable UTF-8 text"},
      {"BinaryAfterMatrix", good + std::string("\x7f\x45\x4c\x46\x02\x01", 6), 9,
       "expected printable UTF-8 text, found byte 0x7f"},
      {"InvalidUtf8", ReplaceFirst(good, "NIC Legend:", "NIC Legend:\xff\xfe"), 6,
       "expected printable UTF-8 text, found byte 0xff"},
      {"StrayEscape", ReplaceFirst(good, "GPU1\tNV12", "GPU1\x1b(B\tNV12"), 3,
       "found an ESC byte that starts no colour code"},
      {"TenMegabyteLine", std::string(10u << 20, 'A'), 1, "expected lines of at most 65536 bytes"},
      {"TenMegabyteLineAfterHeader", "\tGPU0\n" + std::string(10u << 20, ' ') + "\nGPU0\t X\n", 2,
       "expected lines of at most 65536 bytes, found one of 10485760 bytes"},
      {"NvOnNicPair",
       ReplaceFirst(ReplaceFirst(good, "\tPIX\t0-23", "\tNV2\t0-23"), "NIC0\tPIX", "NIC0\tNV2"), 2,
       "expected a PCIe path between GPU0 and NIC0 (NVLink joins GPUs only)"},
      {"DuplicateRow",
       ReplaceFirst(good, "NIC0\tPIX", "GPU1\tNV12\t X \tSYS\t24-47\t1\t\tN/A\nNIC0\tPIX"), 4,
       "expected one row per device, found a second row for GPU1 (first at line 3)"},
      {"XOffDiagonal", ReplaceFirst(good, "GPU0\t X \tNV12", "GPU0\t X \tX"), 2,
       "expected X only on the diagonal"},
      {"MissingXOnDiagonal", ReplaceFirst(good, "GPU0\t X \tNV12", "GPU0\tSYS\tNV12"), 2,
       "expected X on the diagonal (GPU0 to itself)"},
      {"MissingRowWithoutTruncatedMarker", ReplaceFirst(good, "NIC0\tPIX\tSYS\t X \n", ""), 4,
       "expected a row for NIC0"},
      {"BadCpuAffinity", ReplaceFirst(good, "0-23", "0-23x"), 2,
       "expected CPU Affinity to be a list like 0-23,48-71 or N/A, found '0-23x'"},
      {"BadNumaAffinity", ReplaceFirst(good, "\t24-47\t1\t", "\t24-47\tone\t"), 3,
       "expected NUMA Affinity to be a list"},
      {"BadGpuNumaId", ReplaceFirst(good, "\t0\t\tN/A", "\t0\t\tmaybe"), 2,
       "expected GPU NUMA ID to be a number or N/A"},
      {"TooManyAffinityValues", ReplaceFirst(good, "\t0\t\tN/A", "\t0\t\tN/A\t7"), 2,
       "expected at most 3 affinity values, found an extra '7'"},
      {"AffinityWithoutColumns", "\tGPU0\tGPU1\nGPU0\t X \tNV2\t0-7\nGPU1\tNV2\t X \n", 2,
       "expected nothing after the device cells"},
      {"DuplicateHeaderDevice", ReplaceFirst(good, "\tGPU1\tNIC0", "\tGPU0\tNIC0"), 1,
       "expected each device once in the header, found 'GPU0' again"},
      {"DeviceAfterAffinityColumn", ReplaceFirst(good, "\tGPU NUMA ID", "\tGPU NUMA ID\tNIC9"), 1,
       "expected device columns before the affinity columns"},
      {"GarbageHeaderToken", ReplaceFirst(good, "\tNIC0\tCPU", "\tNIC0\t%%\tCPU"), 1,
       "expected a header column"},
      {"DuplicateLegendName",
       "\tGPU0\tNIC0\tNIC1\n"
       "GPU0\t X \tPIX\tPIX\n"
       "NIC0\tPIX\t X \tPIX\n"
       "NIC1\tPIX\tPIX\t X \n"
       "\n"
       "NIC Legend:\n"
       "\n"
       "  NIC0: mlx5_0\n"
       "  NIC1: mlx5_0\n",
       9, "expected distinct NIC names in the NIC legend, found 'mlx5_0' again (first at line 8)"},
      {"HugeDeviceIndex", ReplaceFirst(good, "\tGPU1\tNIC0", "\tGPU12345678\tNIC0"), 1,
       "expected a device number of at most 7 digits"},
  };
}

// "<source>:<line>:<column>: " at the start of the message.
bool HasLocation(const std::string& m, const std::string& source) {
  if (!StartsWith(m, source + ":")) return false;
  size_t p = source.size() + 1;
  for (int field = 0; field < 2; ++field) {
    size_t digits = 0;
    while (p < m.size() && m[p] >= '0' && m[p] <= '9') ++p, ++digits;
    if (digits == 0 || p >= m.size() || m[p] != ':') return false;
    ++p;
  }
  return p < m.size() && m[p] == ' ';
}

class NvidiaSmiMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(NvidiaSmiMalformed, ReturnsInvalidArgumentWithLineAndExpectation) {
  const MalformedCase& c = GetParam();
  auto t = ParseNvidiaSmiTopo(c.text, "t.txt");
  ASSERT_THAT(t, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith("t.txt:")));
  const std::string m = t.status().message();
  EXPECT_TRUE(HasLocation(m, "t.txt")) << m;
  if (c.line > 0) {
    EXPECT_TRUE(StartsWith(m, "t.txt:" + std::to_string(c.line) + ":")) << m;
  }
  EXPECT_THAT(m, HasSubstr(c.expected)) << m;
  EXPECT_LT(m.size(), 1000u) << "messages quote input, they do not dump it";
}

INSTANTIATE_TEST_SUITE_P(NvidiaSmiCases, NvidiaSmiMalformed, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.name; });

TEST(NvidiaSmiMalformedSanity, BaseInputParses) {
  auto t = ParseNvidiaSmiTopo(kGood, "t.txt");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->nics[0].name, "mlx5_0");
}

TEST(NvidiaSmiMalformedP2p, BrokenMatricesAreInvalidArgument) {
  struct Case {
    std::string text;
    std::string expected;
  } cases[] = {
      {"        GPU0    GPU1\n GPU0   X       OK\n GPU1   QQ      X\n",
       "t.txt:3:9: expected a p2p status (OK, CNS, GNS, TNS, NS, DR or U), found 'QQ'"},
      {"        GPU0    GPU1\n GPU0   X       OK\n GPU1   OK      OK\n",
       "t.txt:3:17: expected X on the diagonal"},
      {"        GPU0    GPU1\n GPU0   X       OK      OK\n GPU1   OK      X\n",
       "t.txt:2:25: expected 2 cells in row GPU0, found 3"},
      {"        GPU0    GPU1\n GPU0   X       OK\n", "t.txt:3:1: expected a row for GPU1"},
      {"", "t.txt:1:1: expected an nvidia-smi topo -p2p matrix, found empty input"},
      {std::string("GPU0\0GPU1", 9), "t.txt:1:5: expected printable UTF-8 text"},
  };
  for (const Case& c : cases) {
    auto m = ParseNvidiaSmiP2p(c.text, "t.txt");
    ASSERT_THAT(m, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith(c.expected)))
        << c.text;
  }
}

TEST(NvidiaSmiMalformedNvlink, BrokenStatusIsInvalidArgument) {
  struct Case {
    std::string text;
    std::string expected;
  } cases[] = {
      {"GPU 0: NVIDIA H100 (UUID: x)\n\t Link 0: fast\n",
       "t.txt:2:11: expected a link rate like '26.562 GB/s' or '<inactive>', found 'fast'"},
      {"GPU 0: NVIDIA H100 (UUID: x)\n\t Link 0: 25 Gb/s\n", "t.txt:2:11: expected a link rate"},
      {"\t Link 0: 25 GB/s\n", "t.txt:1:3: expected a 'GPU <n>: <name>' line"},
      {"GPU 0: A\n Link 0: 25 GB/s\n Link 0: 25 GB/s\n",
       "t.txt:3:2: expected each link once per GPU"},
      {"GPU 0: A\n Link 0: 25 GB/s\nGPU 0: A\n", "t.txt:3:1: expected each GPU once"},
      {"nothing\n", "t.txt:1:1: expected nvidia-smi nvlink -s output"},
      {"", "t.txt:1:1: expected nvidia-smi nvlink -s output, found empty input"},
  };
  for (const Case& c : cases) {
    auto s = ParseNvidiaSmiNvlinkStatus(c.text, "t.txt");
    ASSERT_THAT(s, StatusIs(StatusCode::kInvalidArgument, ::testing::StartsWith(c.expected)))
        << c.text;
  }
}

// ---------------------------------------------------------------------------------------------
// Mutation loop over every real sample.

std::vector<std::string> SampleTexts() {
  std::vector<std::string> out;
  const std::string dir = testing::SourceDir() + "/data/samples/nvidia-smi/";
  // Sorted: a deterministic order.
  for (const std::string& rel : testing::SampleFiles("nvidia-smi", ".txt")) {
    out.push_back(testing::ReadFileText(dir + rel));
  }
  return out;
}

std::vector<std::string> SplitKeepingNewlines(const std::string& s) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    size_t end = nl == std::string::npos ? s.size() : nl + 1;
    lines.push_back(s.substr(start, end - start));
    start = end;
  }
  return lines;
}

// One damaging edit, chosen and placed by the generator (raw engine output only, so the
// sequence is the same on every standard library).
std::string Mutate(const std::string& in, std::mt19937& rng) {
  static const char* kTokens[] = {
      "X",    "NV18",   "NV0",         "SYS",         "SOC",     "FOO",   "GPU9",
      "NIC3", "\t",     "  ",          "N/A",         "0-",      "-1",    "",
      "GPU0", "mlx5_0", "NIC Legend:", "# TRUNCATED", "\x1b[4m", "\xc3(", "\r"};
  std::string s = in;
  if (s.empty()) return "GPU0";
  auto pick = [&](size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); };
  switch (rng() % 9) {
    case 0:  // delete a byte run
      s.erase(pick(s.size()), 1 + pick(8));
      break;
    case 1: {  // duplicate a byte run
      size_t at = pick(s.size());
      s.insert(at, s.substr(at, 1 + pick(16)));
      break;
    }
    case 2:  // replace a byte by any byte
      s[pick(s.size())] = static_cast<char>(rng() & 0xff);
      break;
    case 3: {  // insert a vocabulary token
      s.insert(pick(s.size() + 1), kTokens[pick(std::size(kTokens))]);
      break;
    }
    case 4:
    case 5:
    case 6:
    case 7: {  // line edits: delete, duplicate, swap, move
      std::vector<std::string> lines = SplitKeepingNewlines(s);
      size_t a = pick(lines.size()), b = pick(lines.size());
      int op = static_cast<int>(rng() % 4);
      if (op == 0) {
        lines.erase(lines.begin() + static_cast<long>(a));
      } else if (op == 1) {
        lines.insert(lines.begin() + static_cast<long>(a), lines[a]);
      } else if (op == 2) {
        std::swap(lines[a], lines[b]);
      } else {
        lines[a] = lines[b];
      }
      s.clear();
      for (const std::string& l : lines) s += l;
      break;
    }
    default: {  // replace a whitespace-delimited token with a vocabulary token
      size_t at = pick(s.size());
      size_t b = s.find_last_of(" \t\n", at);
      b = b == std::string::npos ? 0 : b + 1;
      size_t e = s.find_first_of(" \t\n", at);
      if (e == std::string::npos) e = s.size();
      if (b <= e) s.replace(b, e - b, kTokens[pick(std::size(kTokens))]);
      break;
    }
  }
  return s;
}

TEST(NvidiaSmiFuzz, MutatedSamplesNeverCrashAndOkMeansValid) {
  std::mt19937 rng(20240611);
  int ok = 0, errors = 0;
  std::vector<std::string> samples = SampleTexts();
  ASSERT_GE(samples.size(), 30u);
  for (const std::string& sample : samples) {
    for (int i = 0; i < 500; ++i) {
      std::string text = sample;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < edits; ++k) text = Mutate(text, rng);
      auto t = ParseNvidiaSmiTopo(text, "fuzz");
      if (t.ok()) {
        ++ok;
        ASSERT_TRUE(t->Validate().ok()) << t->Validate().ToString() << "\n" << text;
        ASSERT_GE(t->gpus.size(), 1u);
      } else {
        ++errors;
        ASSERT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status().ToString();
        ASSERT_TRUE(HasLocation(t.status().message(), "fuzz")) << t.status().message();
      }
      auto p = ParseNvidiaSmiP2p(text, "fuzz");
      if (!p.ok()) {
        ASSERT_EQ(p.status().code(), StatusCode::kInvalidArgument);
      }
      auto n = ParseNvidiaSmiNvlinkStatus(text, "fuzz");
      if (!n.ok()) {
        ASSERT_EQ(n.status().code(), StatusCode::kInvalidArgument);
      }
      (void)LooksLikeNvidiaSmiTopo(text);
      (void)LooksLikeNvidiaSmiP2p(text);
      (void)LooksLikeNvidiaSmiNvlinkStatus(text);
    }
  }
  RecordProperty("parsed_ok", ok);
  RecordProperty("rejected", errors);
  // Both outcomes occur, so the loop exercises the parser and not only its input checks.
  EXPECT_GT(ok, 1000);
  EXPECT_GT(errors, 1000);
}

}  // namespace
}  // namespace toposched::topo::io
