// Runs the real `toposched` binary: exit codes, stdout/stderr, files written.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli/cli_util.h"
#include "testing/status_matchers.h"

namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;

using namespace toposched::cli_testing;  // NOLINT: RunCli, WriteTemp, TempDir, Slurp

const char* kSample24 = "data/samples/nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";

TEST(Cli, TopoImportPrintsTheDocumentedJson) {
  Result r = RunCli(std::string("topo import ") + kSample24);
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["gpus"].size(), 8u);
  EXPECT_EQ(j["gpus"][0]["name"], "GPU0");
  EXPECT_EQ(j["gpus"][4]["numa"], 1);
  EXPECT_EQ(j["gpus"][0]["cpus"], "0-47,96-143");
  ASSERT_EQ(j["nics"].size(), 8u);
  EXPECT_EQ(j["nics"][3]["name"], "mlx5_3");
  EXPECT_EQ(j["nics"][5]["numa"], 1);  // inferred: NODE/PIX to the GPUs of NUMA 1
  EXPECT_EQ(j["links"].size(), 16u * 15u / 2u);
  bool found = false;
  for (const auto& l : j["links"]) {
    if (l["a"] == "GPU1" && l["b"] == "mlx5_1") {
      EXPECT_EQ(l["path"], "PIX");
      found = true;
    }
    if (l["a"] == "GPU0" && l["b"] == "GPU5") {
      EXPECT_EQ(l["path"], "NV18");
      EXPECT_EQ(l["nvlinks"], 18);
    }
  }
  EXPECT_TRUE(found);
}

TEST(Cli, JsonOutputImportsBackToTheSameJson) {
  Result a = RunCli(std::string("topo import ") + kSample24);
  ASSERT_EQ(a.code, 0);
  std::string p = WriteTemp("roundtrip.json", a.out);
  Result b = RunCli("topo import --format json " + p);
  ASSERT_EQ(b.code, 0) << b.err;
  EXPECT_EQ(b.out, a.out);
}

TEST(Cli, TopoShowSummarises) {
  Result r = RunCli(std::string("topo show ") + kSample24);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("NVLink islands"));
  EXPECT_THAT(r.out, HasSubstr("island 0: GPU0 GPU1 GPU2 GPU3 GPU4 GPU5 GPU6 GPU7"));
  EXPECT_THAT(r.out, HasSubstr("GPU5: mlx5_5 (PIX, GPUDirect RDMA)"));
  EXPECT_THAT(r.out, HasSubstr("NUMA 1"));
}

TEST(Cli, DiscoverWorksWithoutGpus) {
  Result r = RunCli("topo discover --to json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["gpus"].is_array());
  EXPECT_GE(j["numa_nodes"].size(), 1u);
}

// Malformed inputs: each gives a clear message on stderr and exit code 1.
TEST(Cli, MalformedInputsExitOneWithAMessage) {
  std::string header = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\n";
  std::string garbage;
  std::mt19937 rng(7);
  for (int i = 0; i < 4096; ++i) garbage += static_cast<char>(rng() & 0xff);
  struct Case {
    const char* name;
    std::string text;
    const char* want;  // substring of stderr
  } cases[] = {
      {"truncated", header + "GPU0\t X \tNV2\t0-7\t0\nGPU1\tNV2\n", ":3:"},
      {"unknown label", header + "GPU0\t X \tNV2\t0-7\t0\nGPU1\tFOO\t X \t0-7\t0\n", "FOO"},
      {"non-square", header + "GPU0\t X \tNV2\tNV2\t0-7\t0\nGPU1\tNV2\t X \t0-7\t0\n", ":2:"},
      {"wrong counts",
       header + "GPU0\t X \tNV2\t0-7\t0\nGPU1\tNV2\t X \t0-7\t0\nGPU2\tNV2\tNV2\t0-7\t0\n", ":4:"},
      {"binary", garbage, "bad4.txt"},
      {"10 MB line", std::string(10 << 20, 'A'), ":1:"},
  };
  int i = 0;
  for (const auto& c : cases) {
    std::string p = WriteTemp("bad" + std::to_string(i++) + ".txt", c.text);
    Result r = RunCli("topo import --format nvidia-smi " + p);
    EXPECT_EQ(r.code, 1) << c.name << ": " << r.err;
    EXPECT_THAT(r.err, HasSubstr("toposched: ")) << c.name;
    EXPECT_THAT(r.err, HasSubstr(c.want)) << c.name << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.name;
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCli("topo import").code, 2);
  EXPECT_EQ(RunCli("topo import --format nope x").code, 2);
  EXPECT_EQ(RunCli("frobnicate").code, 2);
  EXPECT_EQ(RunCli("").code, 2);
}

// An unknown first word is named as such, with or without --help after it.
TEST(Cli, UnknownCommandIsNamed) {
  for (const char* args : {"frobnicate", "frobnicate --help", "plcae --cluster x"}) {
    Result r = RunCli(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_THAT(r.err, HasSubstr("unknown command \"")) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
  }
  EXPECT_THAT(RunCli("plcae").err, HasSubstr("\"plcae\""));
}

TEST(Cli, MissingFileExitsOne) {
  Result r = RunCli("topo import /nonexistent/file.txt");
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/file.txt"));
}

TEST(Cli, ClusterCheckAndSlurmExport) {
  Result c = RunCli("cluster check data/clusters/h100-2rack.yaml");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_THAT(c.out, HasSubstr("GPUs"));
  std::string dir = TempDir() + "/slurm-h100";
  Result e = RunCli("export slurm data/clusters/h100-2rack.yaml --dir " + dir);
  ASSERT_EQ(e.code, 0) << e.err;
  std::string gres = Slurp(dir + "/gres.conf");
  std::string topo = Slurp(dir + "/topology.conf");
  EXPECT_THAT(gres, HasSubstr("Name=gpu"));
  EXPECT_THAT(gres, HasSubstr("Links="));
  EXPECT_THAT(topo, HasSubstr("SwitchName="));
  Result g = RunCli("export slurm data/clusters/gb200-nvl72.yaml");
  ASSERT_EQ(g.code, 0) << g.err;
  EXPECT_THAT(g.out, HasSubstr("BlockName="));
  Result bad = RunCli("cluster check " + WriteTemp("bad.yaml", "name: x\nprofiles: 3\n"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("bad.yaml:2")) << bad.err;
}

TEST(Cli, DemoRunsOnTheExamples) {
  Result r = RunCli("demo");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("== cluster"));
  EXPECT_THAT(r.out, HasSubstr("NVLink islands"));
}

}  // namespace

namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;

const char* kSample09 = "data/samples/nvidia-smi/09-8gpu-pcie-all-sys-2numa-mlsys-tutorial.txt";

// The seed example of the cost model, through the binary: 1 GiB AllReduce over 8 GPUs on full
// NVLink, over PCIe, and across two nodes over 200 Gb/s IB.
TEST(CliCost, SeedExampleAndJsonContract) {
  struct Case {
    std::string args;
    double min_ms, max_ms;
    const char* transport;  // of the bottleneck hop
  } cases[] = {
      {std::string("--topo ") + kSample24 + " --gpus 0-7", 3.0, 6.0, "NVLink"},
      {std::string("--topo ") + kSample09 + " --gpus 0-7", 60.0, 250.0, "SHM"},
      {"--cluster data/calibration/seed-2x-dgx-a100-hdr.yaml --gpus 'gpu[001-002]' --algorithm "
       "ring",
       8.0, 16.0, "NET/IB"},
  };
  for (const auto& c : cases) {
    Result r = RunCli("cost " + c.args + " --collective allreduce --bytes 1GiB --json");
    ASSERT_EQ(r.code, 0) << c.args << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    for (const char* k : {"time_ms", "algbw_gbps", "busbw_gbps", "algorithm", "bottleneck"}) {
      EXPECT_TRUE(j.contains(k)) << k;
    }
    for (const char* k : {"from", "to", "path", "transport", "bandwidth_gbps"}) {
      EXPECT_TRUE(j["bottleneck"].contains(k)) << k;
    }
    double ms = j["time_ms"];
    EXPECT_GE(ms, c.min_ms) << c.args;
    EXPECT_LE(ms, c.max_ms) << c.args;
    EXPECT_EQ(j["bottleneck"]["transport"], c.transport) << c.args;
    // busbw = algbw x 2(n-1)/n for AllReduce.
    int n = j["ranks"];
    EXPECT_NEAR(double(j["busbw_gbps"]), double(j["algbw_gbps"]) * 2.0 * (n - 1) / n, 1e-6);
  }
}

TEST(CliCost, BadInputExitsOneUsageTwo) {
  EXPECT_EQ(RunCli(std::string("cost --topo ") + kSample24 + " --gpus 0-9").code, 1);
  EXPECT_EQ(RunCli(std::string("cost --topo ") + kSample24 + " --gpus 0-7 --bytes 1XB").code, 1);
  EXPECT_EQ(RunCli(std::string("cost --topo ") + kSample24 + " --collective nope").code, 1);
  EXPECT_EQ(RunCli(std::string("cost --topo ") + kSample24 + " --cluster x.yaml").code, 2);
}

TEST(CliPlaceNode, JsonContractAndEnvironment) {
  Result r = RunCli(std::string("place-node --topo ") + kSample24 + " --gpus 4 --free 2-7 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  // One socket: GPU4-7 (NUMA 1), each with its own PIX NIC.
  EXPECT_EQ(j["gpus"], nlohmann::json({4, 5, 6, 7}));
  ASSERT_EQ(j["ranks"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const auto& rk = j["ranks"][i];
    EXPECT_EQ(rk["rank"], i);
    EXPECT_EQ(rk["gpu"], j["gpus"][i]);
    EXPECT_EQ(rk["nic"], "mlx5_" + std::to_string(int(rk["gpu"])));
    EXPECT_EQ(rk["numa"], 1);
    EXPECT_EQ(rk["cpus"], "48-95,144-191");
  }
  EXPECT_EQ(j["env"]["CUDA_VISIBLE_DEVICES"], "4,5,6,7");
  EXPECT_THAT(std::string(j["env"]["NCCL_IB_HCA"]), HasSubstr("mlx5_4"));
  EXPECT_GT(double(j["predicted_ms"]), 0.0);
  EXPECT_TRUE(j["warnings"].empty());
}

TEST(CliPlaceNode, WarnsAboutSlowPathsAndRefusesWhatCannotFit) {
  // 8x RTX 4090, all pairs SYS; the two NICs are PHB to GPU6 only: no GPUDirect for most ranks.
  Result r = RunCli(
      "place-node --topo data/samples/nvidia-smi/12-rtx4090-8gpu-2nic-all-sys-go-gpuallocator17.txt"
      " --gpus 4 --tp 2 --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["warnings"].empty());
  Result no = RunCli(std::string("place-node --topo ") + kSample24 + " --gpus 4 --free 0-2");
  EXPECT_EQ(no.code, 1);
  EXPECT_EQ(RunCli(std::string("place-node --topo ") + kSample24 + " --gpus 4 --free 0-").code, 1);
  EXPECT_EQ(RunCli(std::string("place-node --topo ") + kSample24 + " --gpus 4 --tp 3").code, 1);
}

}  // namespace

namespace {

using ::testing::Not;
using ::toposched::testing::HasSubstr;

TEST(CliPlace, OnePassOverTheExampleJobs) {
  Result r = RunCli(
      "place --cluster data/clusters/h100-2rack.yaml --jobs data/jobs/example-jobs.yaml --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["jobs"].size(), 5u);
  std::set<std::pair<std::string, int>> used;
  for (const auto& job : j["jobs"]) {
    for (const char* k : {"name", "state", "nodes", "ranks", "predicted_ms", "best_possible_ms",
                          "explanation", "decision_us"}) {
      EXPECT_TRUE(job.contains(k)) << k;
    }
    EXPECT_EQ(job["state"], "RUNNING") << job["name"];
    for (size_t i = 0; i < job["ranks"].size(); ++i) {
      const auto& rk = job["ranks"][i];
      EXPECT_EQ(rk["rank"], static_cast<int>(i));
      // No GPU is given twice within the pass.
      EXPECT_TRUE(used.insert({std::string(rk["node"]), int(rk["gpu"])}).second)
          << rk["node"] << "/" << rk["gpu"];
    }
  }
  // The 128-GPU TP8 job sits in one leaf, each TP group (8 consecutive ranks) on one node.
  const auto& big = j["jobs"][0];
  ASSERT_EQ(big["ranks"].size(), 128u);
  // Its predicted NCCL transports: TP on NVLink (NVSwitch), DP across nodes on NET/IB with
  // GPUDirect RDMA (a NIC per GPU at PIX), and NCCL_IB_HCA naming the ranks' NICs.
  std::map<std::string, std::string> by_dim;
  for (const auto& h : big["transports"]) {
    by_dim[h["dimension"]] += std::string(h["transport"]) + ";";
  }
  EXPECT_EQ(by_dim["TP"], "NVLink;");
  EXPECT_EQ(by_dim["DP"], "NET/IB;");
  EXPECT_EQ(by_dim["PP"], "NET/IB;");
  EXPECT_TRUE(big["transport_warnings"].empty());
  EXPECT_EQ(big["nccl_env"]["NCCL_IB_HCA"],
            "mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7");
  for (int g = 0; g < 16; ++g) {
    for (int i = 1; i < 8; ++i) {
      EXPECT_EQ(big["ranks"][g * 8 + i]["node"], big["ranks"][g * 8]["node"]);
    }
  }
}

// Text output: one line per node (its ranks and GPUs as ranges, its NICs) unless --ranks asks
// for every rank; the 128-GPU job of the example is 16 node lines, or 128 rank lines.
TEST(CliPlace, RanksAreSummarisedByNodeUnlessAskedFor) {
  const std::string args =
      "place --cluster data/clusters/h100-2rack.yaml --jobs data/jobs/example-jobs.yaml";
  Result sum = RunCli(args);
  ASSERT_EQ(sum.code, 0) << sum.err;
  const std::string first = sum.out.substr(0, sum.out.find("\njob ", 1));
  EXPECT_THAT(first, HasSubstr("(--ranks: every rank)")) << first;
  EXPECT_THAT(first, HasSubstr("\n  gpu001       0-7              0-7")) << first;
  EXPECT_THAT(first, HasSubstr("mlx5_0,mlx5_1,mlx5_2,mlx5_3,mlx5_4,mlx5_5,mlx5_6,mlx5_7")) << first;
  EXPECT_THAT(first, Not(HasSubstr("\n  rank "))) << first;
  Result all = RunCli(args + " --ranks");
  ASSERT_EQ(all.code, 0) << all.err;
  const std::string big = all.out.substr(0, all.out.find("\njob ", 1));
  const std::regex rank_row(R"(^  \d+ +gpu\d+ +\d+ +mlx5_\d+$)");
  size_t rows = 0;
  std::istringstream lines(big);
  for (std::string l; std::getline(lines, l);) rows += std::regex_match(l, rank_row) ? 1 : 0;
  EXPECT_EQ(rows, 128u) << big;
}

// A file of one spec is placed like a jobs: list of one.
TEST(CliPlace, OneSpecFileIsAJobFileToo) {
  const std::string one = WriteTemp("one.yaml",
                                    "name: solo\nreplicas: 1\ngpus_per_replica: 8\n"
                                    "layout: {tp: 8}\n");
  Result r = RunCli("place --cluster data/clusters/h100-2rack.yaml --jobs " + one + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["name"], "solo");
  EXPECT_EQ(j["jobs"][0]["state"], "RUNNING");
}

TEST(CliPlace, PendingJobsAreExplainedAndBadInputExitsOne) {
  std::string jobs = WriteTemp("too-big.yaml", R"(jobs:
  - name: two-leaves
    replicas: 24
    gpus_per_replica: 8
    layout: {tp: 8, pp: 1, dp: 24}
    priority: 10
    queue: default
    constraints:
      tp: {required: node}
      job: {required: leaf}
)");
  Result r = RunCli("place --cluster data/clusters/h100-2rack.yaml --jobs " + jobs + " --json");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["jobs"].size(), 1u);
  EXPECT_EQ(j["jobs"][0]["state"], "PENDING");
  std::string why = j["jobs"][0]["explanation"];
  EXPECT_THAT(why, HasSubstr("leaf")) << why;
  EXPECT_THAT(why, HasSubstr("128")) << why;  // the most one leaf can hold
  Result bad = RunCli("place --cluster data/clusters/h100-2rack.yaml --jobs " +
                      WriteTemp("bad-jobs.yaml", "jobs:\n  - name: x\n    replicas: -1\n"));
  EXPECT_EQ(bad.code, 1);
  EXPECT_THAT(bad.err, HasSubstr("bad-jobs.yaml:3")) << bad.err;
}

// Reads are bounded by the bytes actually read, not by the size a file claims: a device or a
// pipe that never ends (/dev/zero: size 0) is refused at the limit, with the limit named, instead
// of growing without bound (topo import reached 8 GB) or aborting on std::bad_alloc (submit).
TEST(Cli, EndlessInputsAreRefusedAtTheLimit) {
  for (const char* args :
       {"topo import /dev/zero", "submit /dev/zero --server http://127.0.0.1:1",
        "trace generate --mix llm --jobs 10 --mix-file /dev/zero --out /dev/null",
        "replay --cluster /dev/zero /dev/zero"}) {
    SCOPED_TRACE(args);
    Result r = RunCli(args);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_THAT(r.err, HasSubstr("/dev/zero: more than")) << r.err;
    EXPECT_THAT(r.err, HasSubstr("bytes")) << r.err;
  }
}

}  // namespace
