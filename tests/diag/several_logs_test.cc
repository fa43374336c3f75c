// Several logs of one job, each read alone too (docs/diagnose.md, "Several logs of one job"):
// on real multi-node logs of data/diagnosis-corpus/dev, the first failure and its consequences;
// a directory of logs; line times; the order of faults.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "diag/diagnose.h"
#include "testing/samples.h"

namespace toposched::diag {
namespace {

const std::string kDev = testing::SourceDir() + "/data/diagnosis-corpus/dev/";

const LogPart* PartOf(const Diagnosis& d, const std::string& file_end) {
  for (const LogPart& p : d.logs) {
    if (p.file.ends_with(file_end)) return &p;
  }
  return nullptr;
}

// A 2-node torchrun job (pytorch/pytorch#150916): node B's agent was stopped (SIGTERM), node A
// then saw its rendezvous closed. Node B failed first; node A only echoes it.
TEST(SeveralLogs, TheStoppedNodeFailedFirstAndItsPeerEchoesIt) {
  const std::string a =
      kDev + "elastic-agent-killed-sigterm-15-death-signal-2node-g4dn-pytorch-150916.nodeA.log";
  const std::string b =
      kDev + "elastic-agent-killed-sigterm-15-death-signal-2node-g4dn-pytorch-150916.nodeB.log";
  auto d = DiagnoseFiles({a, b}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->logs.size(), 2u);
  EXPECT_EQ(LogRoleName(d->logs[0].role), std::string("consequence"));
  EXPECT_EQ(CategoryName(d->logs[0].top->category), std::string("peer_failure"));
  EXPECT_EQ(LogRoleName(d->logs[1].role), std::string("first_failure"));
  ASSERT_FALSE(d->causes.empty());
  EXPECT_EQ(CategoryName(d->causes.front().category), std::string("cancelled"));
  EXPECT_TRUE(d->causes.front().summary.starts_with("first failure, in " + b))
      << d->causes.front().summary;
}

// nccl-tests across two nodes (NVIDIA/nccl#629): one node's process crashed on an illegal
// memory access, the other saw its connection reset. Given in either order, the crash is first.
TEST(SeveralLogs, TheCrashIsFirstWhateverTheOrderOfTheLogs) {
  const std::string crash =
      kDev + "illegal-memory-access-crash-and-peer-reset-2-nodes-nccl-629.node2-6000166.log";
  const std::string reset =
      kDev + "illegal-memory-access-crash-and-peer-reset-2-nodes-nccl-629.node3-9000018.log";
  for (const auto& order :
       {std::vector<std::string>{crash, reset}, std::vector<std::string>{reset, crash}}) {
    auto d = DiagnoseFiles(order, nullptr);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    const LogPart* c = PartOf(*d, "node2-6000166.log");
    const LogPart* r = PartOf(*d, "node3-9000018.log");
    ASSERT_TRUE(c != nullptr && r != nullptr);
    EXPECT_EQ(c->role, LogRole::kFirstFailure);
    EXPECT_EQ(r->role, LogRole::kConsequence);
    EXPECT_EQ(CategoryName(d->causes.front().category), std::string("application_error"));
  }
}

TEST(SeveralLogs, ADirectoryStandsForItsFilesAndAnEmptyOneForNoCause) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ts-diag-dir-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "empty");
  for (const char* f :
       {"illegal-memory-access-crash-and-peer-reset-2-nodes-nccl-629.node2-6000166.log",
        "illegal-memory-access-crash-and-peer-reset-2-nodes-nccl-629.node3-9000018.log"}) {
    std::filesystem::copy_file(kDev + f, dir / f);
  }
  std::ofstream(dir / ".hidden") << "NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus\n";
  auto d = DiagnoseFiles({dir.string()}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->logs.size(), 2u);
  EXPECT_EQ(CategoryName(d->causes.front().category), std::string("application_error"));
  auto empty = DiagnoseFiles({(dir / "empty").string()}, nullptr);
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->causes.empty());
  std::filesystem::remove_all(dir);
}

TEST(SeveralLogs, LineTimesSortWithinOneFormat) {
  const auto iso = TimeOfLine("[2023-12-22 06:45:43,273] torch.distributed.elastic: [ERROR] x");
  ASSERT_TRUE(iso.has_value());
  EXPECT_EQ(iso->family, 1);
  EXPECT_EQ(iso->key, "20231222064543.273000");
  const auto glog = TimeOfLine("[rank3]:E0409 07:28:49.530000 1359 api.py:719] Received 15");
  ASSERT_TRUE(glog.has_value());
  EXPECT_EQ(glog->family, 2);
  EXPECT_EQ(glog->key, "0409072849.530000");
  EXPECT_FALSE(TimeOfLine("NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC").has_value());
}

// Two logs with faults of their own: the one whose cited line is earlier failed first, and
// times of different formats are not compared (the first given wins).
TEST(SeveralLogs, TheEarlierFaultIsFirstAndUnorderedFaultsKeepTheirOrder) {
  auto part = [](const char* file, Category c, std::optional<LineTime> t) {
    LogPart p;
    p.file = file;
    p.top = Cause{};
    p.top->category = c;
    p.top->confidence = 0.9;
    p.time = std::move(t);
    return p;
  };
  std::vector<LogPart> parts = {
      part("a", Category::kGpuOom, LineTime{1, "20250101000010.000000"}),
      part("b", Category::kGpuFault, LineTime{1, "20250101000005.000000"}),
      part("c", Category::kNcclTimeout, std::nullopt), part("d", Category::kHealthy, std::nullopt)};
  AssignLogRoles(parts);
  EXPECT_EQ(parts[0].role, LogRole::kFailedToo);
  EXPECT_EQ(parts[1].role, LogRole::kFirstFailure);
  EXPECT_EQ(parts[2].role, LogRole::kConsequence);
  EXPECT_EQ(parts[3].role, LogRole::kHealthy);
  std::vector<LogPart> mixed = {
      part("a", Category::kGpuOom, LineTime{2, "0101000010.000000"}),
      part("b", Category::kGpuFault, LineTime{1, "20250101000005.000000"})};
  AssignLogRoles(mixed);
  EXPECT_EQ(mixed[0].role, LogRole::kFirstFailure);
  EXPECT_EQ(mixed[1].role, LogRole::kFailedToo);
}

// What a log saw first, and the job's timeline (docs/diagnose.md, "Several logs of one job").
// Node B of pytorch/pytorch#150916 was stopped first: what it saw first is the death signal.
TEST(SeveralLogs, TheFirstFailureSaysWhatItSawFirst) {
  const std::string a =
      kDev + "elastic-agent-killed-sigterm-15-death-signal-2node-g4dn-pytorch-150916.nodeA.log";
  const std::string b =
      kDev + "elastic-agent-killed-sigterm-15-death-signal-2node-g4dn-pytorch-150916.nodeB.log";
  auto d = DiagnoseFiles({a, b}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->logs.size(), 2u);
  ASSERT_TRUE(d->logs[1].first_seen.has_value());
  EXPECT_NE(d->logs[1].first_seen->text.find("Received 15 death signal"), std::string::npos);
}

TEST(SeveralLogs, ALineWithoutATimeTakesTheTimeOfTheLineAboveIt) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ts-diag-time-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "rank0.log")
      << "[2024-05-01 10:00:07,000] step 3 begins\n"
         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
  std::ofstream(dir / "rank1.log") << "[2024-05-01 10:00:09,000] step 3 begins\n"
                                      "RuntimeError: CUDA error: unknown error\n";
  auto d = DiagnoseFiles({(dir / "rank1.log").string(), (dir / "rank0.log").string()}, nullptr);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->logs.size(), 2u);
  ASSERT_TRUE(d->logs[1].time.has_value());
  EXPECT_EQ(d->logs[1].time->key, "20240501100007.000000");
  EXPECT_EQ(d->logs[1].role, LogRole::kFirstFailure);
}

LogPart TimedPart(const char* file, std::vector<std::pair<int64_t, std::string>> lines) {
  LogPart p;
  p.file = file;
  p.top = Cause{};
  p.top->category = Category::kGpuFault;
  for (const auto& [line, time] : lines) {
    Evidence e;
    e.file = file;
    e.line = line;
    if (!time.empty()) e.fields.emplace_back("line_time", time);
    p.top->evidence.push_back(e);
  }
  return p;
}

TEST(SeveralLogs, TheTimelineInterleavesLogsByTime) {
  const std::vector<TimelineEntry> t =
      MergeTimeline({TimedPart("a", {{1, "1:20250101000010.000000"}, {2, "1:20250101000030.0"}}),
                     TimedPart("b", {{5, "1:20250101000020.000000"}})});
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].line.file, "a");
  EXPECT_EQ(t[1].line.file, "b");
  EXPECT_EQ(t[2].line.file, "a");
}

TEST(SeveralLogs, ALineWithNoTimeKeepsItsLogsOrder) {
  const std::vector<TimelineEntry> t =
      MergeTimeline({TimedPart("a", {{1, "1:20250101000010.000000"}}), TimedPart("b", {{5, ""}})});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].line.file, "b");
}

TEST(SeveralLogs, ALineTimeRoundTripsThroughItsField) {
  const auto t = DecodeLineTime(EncodeLineTime(LineTime{2, "0409072849.530000"}));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->key, "0409072849.530000");
  EXPECT_FALSE(DecodeLineTime("7:x").has_value());
}

}  // namespace
}  // namespace toposched::diag
