// The diagnosis over every real log sample in data/interruption-logs: the top cause is the one
// EXPECTED.tsv names, and the key evidence line is cited.
#include "diag/diagnose.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace toposched::diag {
namespace {

const std::string kDir = std::string(TS_SOURCE_DIR) + "/data/interruption-logs/";

// A substring of the line the top cause must cite, per file: the line the thread's conclusion
// (or the log itself) rests on.
const std::map<std::string, std::string> kKeyLine = {
    {"1-socket-fallback-libibverbs-missing-detectron2-4730.log", "Using network Socket"},
    {"1-ib-normal-path-socket-line-is-bootstrap-only-nvpeermem-56.log", "NET/IB : Using"},
    {"1-ib-disabled-socket-on-loopback-bgp-nccl-1053.log", "Using network Socket"},
    {"1-docker-eth0-socket-rings-shm-nccl-367.log", "via NET/Socket"},
    {"1-channels-net-ib-gdrdma-plus-p2p-ipc-read-nccl-687.log", "via NET/IB/0/GDRDMA"},
    {"1-roce-gdr-disabled-for-hca-nccl-1537.log", "GPU Direct RDMA Disabled for HCA"},
    {"1-nvls-multicast-available-8x-ib-sharp-h100-nccl-1584.log", "NVLS multicast support"},
    {"1-ring-order-channels-00-08-aws-32rank-nccl-514.log", "Channel 00/08"},
    {"1-ib-disabled-socket-over-ipoib-nccltests-188.log", "Using network Socket"},
    {"2-ib-completion-status12-vendor129-k8s-ddp-nccl-1405.log", "status=12"},
    {"2-ib-error4-local-protection-then-connection-closed-nccltests-252.log", "with error 4"},
    {"2-ib-completion-status12-then-status5-vendor249-nccl-1814.log", "status=12"},
    {"2-remote-process-exited-connection-reset-ib-node-issue-nccl-2076.log",
     "remote process exited or there was a network error"},
    {"2-connection-closed-by-remote-peer-masking-gpu-oom-narval-nccl-1235.log",
     "Cuda failure 'out of memory'"},
    {"2-system-error-bootstrap-connect-ipv6-linklocal-ib1-abort-nccl-975.log",
     "socketStartConnect: Connect to"},
    {"2-watchdog-allreduce-1800s-terminate-accelerate-2174.log", "Watchdog caught collective"},
    {"2-watchdog-allgather-base-600s-stack-llama-cookbook-567.log", "Watchdog caught collective"},
    {"2-watchdog-allreduce-single-node-after-hours-ofa-271.log", "Watchdog caught collective"},
    {"3-xid119-gsp-rpc-timeout-xe9680-gpud-fixture.log", "Xid (PCI:0000:9b:00): 119"},
    {"3-sram-uncorrectable-ecc-nvidia-smi-q-stas00.log", "uncorrectable ECC error"},
    {"3-gpu-lost-unknown-error-pcie-aer-corrected-returnn-1486.log",
     "Unable to determine the device handle"},
    {"3-xid63-row-remap-pending-nvidia-smi-q-a100-stas00.log", "Xid (PCI:0000:10:1c): 63"},
    {"3-dcgmi-diag-row-remap-pending-gpu-memory-fail-stas00.log", "uncorrectable memory errors"},
    {"3-pcie-link-limited-gen4-switch-half-bandwidth-h100-stas00.log", "limited by 16.0 GT/s"},
    {"3-nvlink-e-error-counters-all-zero-healthy-h100-stas00.log", "Replay Errors: 0"},
    {"4-pending-insufficient-gpu-leftover-test-pods-kubeflow-794.log",
     "Insufficient nvidia.com/gpu"},
    {"4-volcano-gang-partial-20-minavailable-8-running-notenoughresources-2462.log",
     "tasks in gang unschedulable"},
    {"4-volcano-mpijob-podgroup-unschedulable-3-minmember-452.log", "tasks in gang unschedulable"},
    {"4-evicted-node-low-on-memory-memorypressure-during-training-kubefate-64.log",
     "The node was low on resource: memory"},
    {"4-pytorchjob-restarting-master-exited-code-1-kubeflow-trainer-2044.log",
     "exited with code 1"},
    {"5-timeout-training-eta-exceeds-2h-limit-polymergnn.log", "DUE TO TIME LIMIT"},
    {"5-cgroup-oom-kill-gpu-training-step-knet-30.log", "oom-kill event"},
    {"5-sinfo-gpu-partition-draining-maint-fail-nodes-arjuna-69.log", "drng@"},
    {"5-squeue-gpu-job-pending-reqnodenotavail-parallelcluster-178.log", "ReqNodeNotAvail"},
    {"6-childfailederror-exitcode-minus9-sigkill-k8s-worker-cppo-6.log", "exitcode  : -9"},
    {"6-rendezvous-connection-error-c10d-store-unreachable-pytorch-79388.log",
     "RendezvousConnectionError"},
    {"6-rendezvous-store-wait-timed-out-900s-7plus8-gpus-ms-swift-3343.log", "timed out after"},
    {"6-cuda-oom-a100-deepspeed-launcher-kills-subprocess-happy-transformer-333.log",
     "CUDA out of memory"},
};

struct Expected {
  std::string file;
  std::string category;
};

std::vector<Expected> ReadExpected() {
  std::vector<Expected> out;
  std::ifstream in(kDir + "EXPECTED.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    out.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return out;
}

TEST(DiagnoseLogs, EveryFileHasAKeyLine) {
  const auto expected = ReadExpected();
  ASSERT_EQ(expected.size(), 38u);
  for (const auto& e : expected) EXPECT_TRUE(kKeyLine.count(e.file)) << e.file;
}

class DiagnoseLogFile : public ::testing::TestWithParam<Expected> {};

TEST_P(DiagnoseLogFile, TopCauseIsExpectedAndCitesTheKeyLine) {
  const Expected& e = GetParam();
  auto d = DiagnoseFiles({kDir + e.file}, nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_FALSE(d->causes.empty()) << e.file << ": no known cause";
  const Cause& top = d->causes.front();
  EXPECT_EQ(CategoryName(top.category), e.category) << e.file << ": " << top.summary;
  const auto key = kKeyLine.find(e.file);
  ASSERT_NE(key, kKeyLine.end());
  bool cited = false;
  for (const Evidence& ev : top.evidence) {
    cited |= ev.text.find(key->second) != std::string::npos;
    EXPECT_GT(ev.line, 1) << "line 1 is the provenance line";
    EXPECT_EQ(ev.file, kDir + e.file);
  }
  EXPECT_TRUE(cited) << e.file << ": top cause does not cite \"" << key->second << "\"";
}

INSTANTIATE_TEST_SUITE_P(AllSamples, DiagnoseLogFile, ::testing::ValuesIn(ReadExpected()),
                         [](const ::testing::TestParamInfo<Expected>& info) {
                           std::string name = info.param.file.substr(0, 40);
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name + "_" + std::to_string(info.index);
                         });

}  // namespace
}  // namespace toposched::diag

namespace toposched::diag {
namespace {

// Our own capture on the lent H200 VM (data/samples/measured): NCCL 2.28.9 finds no IB device
// and selects NET/Socket on eth0, for a one-rank communicator ("nRanks 1 nNodes 1") on a VM whose
// only NIC is eth0. NCCL's NET transport joins ranks of different nodes only, so nothing crossed
// the network: no fallback, a correct single-GPU start.
TEST(DiagnoseMeasured, NcclWithoutIbDeviceInAOneGpuVmIsNoFallback) {
  const Diagnosis d = DiagnoseText(
      [] {
        std::ifstream f(std::string(TS_SOURCE_DIR) +
                        "/data/samples/measured/h200-1gpu-vm-nccl-2.28.9-socket.log");
        return std::string(std::istreambuf_iterator<char>(f), {});
      }(),
      "h200-1gpu-vm-nccl-2.28.9-socket.log", nullptr);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(d.causes[0].category, Category::kHealthy);
  for (const Cause& c : d.causes) {
    EXPECT_NE(c.category, Category::kNcclTransportFallback) << c.summary;
  }
}

}  // namespace
}  // namespace toposched::diag
