// A peer that ended versus a network that failed (docs/diagnose.md, "Peer or network"): on the
// dev logs of data/diagnosis-corpus, closed, reset or broken connections with no evidence from
// the fabric are a peer's end; an HCA's error event, a failed verbs call, a failed work
// completion or a NIC's link down are the network's. Then the same line by line.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "diag/dev_corpus_case.h"
#include "diag/diagnose.h"
#include "testing/samples.h"

namespace toposched::diag {
namespace {

const std::string kPeerDev = testing::SourceDir() + "/data/diagnosis-corpus/dev/";

using PeerCase = DevCorpusCase;

const std::vector<PeerCase> kPeerCases = {
    // the peer ended: a reset on the data path, on the store, a bootstrap peer that closed, the
    // rank c10d names as crashed
    {"illegal-memory-access-crash-and-peer-reset-2-nodes-nccl-629.node3-9000018.log",
     "peer_failure", "failed : Connection reset by peer"},
    {"init-process-group-connection-reset-by-peer-rank1-after-rank0-exited-nccl-pytorch-74146.log",
     "peer_failure", "RuntimeError: Connection reset by peer"},
    {"bootstrap-internal-error-then-peer-closed-4090-2-nodes-nccltests-204.node3.log",
     "peer_failure", "Connection closed by remote peer"},
    {"barrier-failure-possible-application-crash-on-rank0-rank2-rank3-llamafactory-5769.log",
     "peer_failure", "possible application crash on rank 0"},
    // the fabric failed: an HCA's async event, a verbs call that failed (under a peer's close)
    {"ib-async-local-catastrophic-error-after-830k-iters-mpirun-nccl-230.log", "network_error",
     "Got async event : local catastrophic error"},
    {"roce-ibv-modify-qp-no-such-device-init-fails-nccl278-nccl-799.log", "network_error",
     "Call to ibv_modify_qp failed with error No such device"},
    {"ibv-modify-qp-network-unreachable-dgx-h100-proxy-connect-nccltests-185.log", "network_error",
     "Call to ibv_modify_qp failed with error Network is unreachable"},
};

class PeerOrNetworkLog : public ::testing::TestWithParam<PeerCase> {};

TEST_P(PeerOrNetworkLog, TopCauseIsTheThreadsAndCitesTheLineThatSaysSo) {
  ExpectTopCauseCites(GetParam());
}

INSTANTIATE_TEST_SUITE_P(DevCorpus, PeerOrNetworkLog, ::testing::ValuesIn(kPeerCases),
                         DevCorpusCaseName);

// A verbs call that failed while NCCL looked for its devices, then sockets (NVIDIA/nccl#451):
// the fallback's reason, not a broken fabric.
TEST(PeerOrNetwork, AVerbsCallThatFailedAtTheStartIsNoNetworkError) {
  auto d = DiagnoseFiles(
      {kPeerDev + "docker-ibv-open-device-failed-unable-open-mlx5-bond-socket-slow-nccl-451.log"},
      nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  for (const Cause& c : d->causes) EXPECT_NE(c.category, Category::kNetworkError) << c.summary;
}

TEST(PeerOrNetwork, TheRankC10dNamesAsCrashedIsKept) {
  auto d = DiagnoseFiles(
      {kPeerDev +
       "barrier-failure-possible-application-crash-on-rank0-rank2-rank3-llamafactory-5769.log"},
      nullptr);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_FALSE(d->causes.empty());
  ASSERT_FALSE(d->causes.front().evidence.empty());
  EXPECT_EQ(d->causes.front().evidence.front().Field("rank"), "0");
}

// The top cause of a few lines of text, or "none".
std::string PeerTopOf(const std::string& text) {
  const Diagnosis d = DiagnoseText(text, "lines", nullptr);
  return d.causes.empty() ? "none" : CategoryName(d.causes.front().category);
}

const std::string kReset =
    "node3:46841:46987 [0] include/socket.h:428 NCCL WARN Net : Call to recv from "
    "11.127.49.2<36048> failed : Connection reset by peer\n";

TEST(PeerOrNetwork, AResetAloneIsAPeersEnd) { EXPECT_EQ(PeerTopOf(kReset), "peer_failure"); }

TEST(PeerOrNetwork, AResetBesideAnHcaErrorEventIsTheNetworks) {
  EXPECT_EQ(
      PeerTopOf(kReset +
                "node3:815:864 [0] transport/net_ib.cu:80 NCCL WARN NET/IB : Got async event : "
                "local catastrophic error\n"),
      "network_error");
}

TEST(PeerOrNetwork, ARoutinePortEventIsNoFault) {
  EXPECT_EQ(PeerTopOf("node3:815:864 [0] NCCL WARN NET/IB : Got async event : port active\n"),
            "none");
}

TEST(PeerOrNetwork, AResetBesideANicLinkDownIsTheNetworks) {
  EXPECT_EQ(PeerTopOf(kReset + "mlx5_core 0000:17:00.0 ens2f0: Link down\n"), "network_error");
}

TEST(PeerOrNetwork, NcclsUndecidedRemoteErrorStaysAWeakNetworkError) {
  const Diagnosis d = DiagnoseText(
      "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting "
      "prematurely.\n" +
          kReset,
      "lines", nullptr);
  ASSERT_FALSE(d.causes.empty());
  EXPECT_EQ(CategoryName(d.causes.front().category), std::string("network_error"));
  EXPECT_LT(d.causes.front().confidence, 0.8);
}

TEST(PeerOrNetwork, ARemoteErrorOverABrokenPipeIsAPeersEnd) {
  EXPECT_EQ(
      PeerTopOf("ncclRemoteError: A call failed possibly due to a network error or a remote "
                "process exiting prematurely.\n"
                "socketProgressOpt: Call to recv from 10.119.24.53<49901> failed : Broken pipe\n"),
      "peer_failure");
}

TEST(PeerOrNetwork, APeersResetBesideAnOomIsItsEcho) {
  const Diagnosis d = DiagnoseText(
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + kReset, "lines",
      nullptr);
  ASSERT_EQ(d.causes.size(), 2u);
  EXPECT_EQ(CategoryName(d.causes[0].category), std::string("gpu_oom"));
  EXPECT_EQ(CategoryName(d.causes[1].category), std::string("peer_failure"));
}

}  // namespace
}  // namespace toposched::diag
