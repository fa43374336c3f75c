// The NCCL and network rule families: transport fallback, degraded transport, IB/socket errors,
// collective timeouts and rendezvous failures. Thresholds and wording: docs/diagnose.md.
#include <algorithm>
#include <cstdio>
#include <string>

#include "diag/rules_internal.h"

namespace toposched::diag::internal {

namespace {

std::string Fmt(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, a, b, c);
  return buf;
}

// Whether NCCL's data path (not its bootstrap) runs over TCP sockets. NCCL prints
// "NET/Socket : Using ..." for its bootstrap interface on every run; only "Using network Socket",
// a channel "via NET/Socket", or a NET/Socket selection with no NET/IB one mean the data path.
bool SocketDataPath(const EvidenceSet& ev) {
  // One node (or one rank): NCCL's NET transport connects ranks of different nodes only, so its
  // selection carries no data (NCCL's docs, "NCCL_P2P_LEVEL"/"NCCL_SHM_DISABLE": intra-node
  // paths are P2P and SHM).
  // A net plugin the job named and could not load is a fallback however many ranks there are.
  if (ev.has(Kind::kNcclSingleNode) && !ev.has(Kind::kNcclPluginMissing)) return false;
  if (ev.has(Kind::kNcclNetworkSocket) || ev.has(Kind::kNcclChannelSocket)) return true;
  return ev.has(Kind::kNcclNetSocket) && !ev.has(Kind::kNcclNetIb) &&
         !ev.has(Kind::kNcclNetworkIb) && !ev.has(Kind::kNcclChannelIb) &&
         (ev.has(Kind::kNcclIbDisabled) || ev.has(Kind::kNcclIbverbsMissing) ||
          ev.has(Kind::kNcclIbNoDevice) || ev.has(Kind::kNcclPluginMissing) ||
          ev.has(Kind::kRdmaProviderFailed));
}

std::string SocketInterfaces(const EvidenceSet& ev) {
  const Evidence* e = ev.first(Kind::kNcclNetSocket);
  return e ? std::string(e->Field("interfaces")) : "";
}

void FallbackRule(const EvidenceSet& ev, const NodeContext* node, std::vector<Cause>& out) {
  if (!SocketDataPath(ev)) return;
  double conf = 0.75;
  std::string why = "NCCL moves data over TCP sockets (NET/Socket)";
  const std::string ifs = SocketInterfaces(ev);
  if (!ifs.empty()) why += " on " + ifs;
  std::string fix;
  if (ev.has(Kind::kNcclPluginMissing)) {
    why += ": the net plugin the job named (NCCL_NET_PLUGIN) could not be loaded or started";
    fix = "install the net plugin the job names (or fix NCCL_NET_PLUGIN / LD_LIBRARY_PATH); ";
    conf += 0.1;
  } else if (ev.has(Kind::kRdmaProviderFailed)) {
    why +=
        ": the node's RDMA device is there but could not be opened (its libibverbs provider "
        "is missing or does not match the kernel driver)";
    fix =
        "install the RDMA user-space provider that matches the host's kernel driver in the "
        "job's image and expose /dev/infiniband to it; ";
    conf += 0.1;
  } else if (ev.has(Kind::kNcclIbverbsMissing)) {
    why += ": libibverbs could not be loaded, so NET/IB was never tried";
    fix =
        "install the RDMA user space (rdma-core/libibverbs) in the job's image and expose "
        "/dev/infiniband to it; ";
    conf += 0.1;
  } else if (ev.has(Kind::kNcclIbDisabled)) {
    why += ": NCCL_IB_DISABLE=1 was set";
    fix = "unset NCCL_IB_DISABLE; ";
    conf += 0.1;
  } else if (ev.has(Kind::kNcclIbNoDevice)) {
    why += ": NCCL found no IB/RoCE device";
    fix = "make the HCAs visible to the job (device plugin, /dev/infiniband, NCCL_IB_HCA); ";
    conf += 0.1;
  }
  Cause c = MakeCause(Category::kNcclTransportFallback, conf, why, "", ev,
                      {Kind::kNcclNetworkSocket, Kind::kNcclChannelSocket, Kind::kNcclPluginMissing,
                       Kind::kRdmaProviderFailed, Kind::kNcclIbverbsMissing, Kind::kNcclIbDisabled,
                       Kind::kNcclIbNoDevice, Kind::kNcclNetSocket});
  if (node != nullptr) {
    const NetworkAdvice a = AdviseNetwork(*node);
    if (a.rdma_nics.empty()) {
      c.topology = "node " + node->node_name +
                   " has no IB/RoCE NIC in its topology: NET/Socket is its only network path";
      c.confidence = std::min(c.confidence, 0.6);
    } else {
      c.topology = "node " + node->node_name + "'s RDMA NICs are " + a.rdma_description;
      if (a.ib_ms && a.socket_ms && *a.ib_ms > 0) {
        c.topology +=
            Fmt(": a 1 GiB AllReduce over two such nodes is predicted %.1f ms on "
                "NET/IB and %.1f ms on NET/Socket (%.1fx slower)",
                *a.ib_ms, *a.socket_ms, *a.socket_ms / *a.ib_ms);
      }
      fix += "set NCCL_IB_HCA=" + a.nccl_ib_hca;
      c.confidence = std::min(0.95, c.confidence + 0.05);
    }
  }
  if (fix.empty() || fix.back() == ' ') fix += "check that NET/IB is selected (NCCL_IB_HCA)";
  if (!ifs.empty())
    fix += "; keep NCCL_SOCKET_IFNAME=" + ifs.substr(0, ifs.find(',')) + " for the bootstrap only";
  c.fix = fix;
  out.push_back(std::move(c));
}

void DegradedRule(const EvidenceSet& ev, const NodeContext* node, std::vector<Cause>& out) {
  if (ev.has(Kind::kNcclGdrDisabled)) {
    const Evidence* e = ev.first(Kind::kNcclGdrDisabled);
    Cause c = MakeCause(Category::kNcclDegraded, 0.75,
                        "NCCL uses the RDMA NICs but GPUDirect RDMA is disabled for HCA " +
                            std::string(e->Field("device")) +
                            ": every transfer is staged through host memory",
                        "load nvidia_peermem (or use DMA-BUF) and check that the GPU and the NIC "
                        "share a PCIe switch; NCCL_NET_GDR_LEVEL=PHB if they sit under one CPU",
                        ev, {Kind::kNcclGdrDisabled, Kind::kNcclNetIb});
    if (node != nullptr) {
      const NetworkAdvice a = AdviseNetwork(*node);
      if (!a.rdma_nics.empty()) c.topology = "node " + node->node_name + ": " + a.rdma_description;
    }
    out.push_back(std::move(c));
  }
  if (ev.has(Kind::kNcclFeatureIgnored)) {
    out.push_back(MakeCause(Category::kNcclDegraded, 0.65,
                            "NCCL ignored a feature the job asked for (it is not supported or "
                            "failed to initialize here): the collectives run on another algorithm",
                            "check the feature's requirements on these nodes (CollNet/SHARP: the "
                            "plugin and the switch; NVLS: NVSwitch and the fabric manager) or stop "
                            "asking for it",
                            ev, {Kind::kNcclFeatureIgnored}));
  }
  // NCCL's topology search settled for less than the hardware offers: no path for a pattern (a
  // simple ring order instead), or NVLink-connected GPUs without P2P.
  if (ev.has(Kind::kNcclTopoFallback)) {
    out.push_back(MakeCause(Category::kNcclDegraded, 0.6,
                            "NCCL's topology search fell back (no path for a graph pattern, or "
                            "NVLink-connected GPUs without P2P): the collectives run on fewer or "
                            "slower paths than the hardware has",
                            "dump NCCL's view (NCCL_TOPO_DUMP_FILE) and compare it with the node's "
                            "topology; check P2P (nvidia-smi topo -p2p r), ACS/IOMMU settings and "
                            "the NIC-GPU PCIe placement",
                            ev, {Kind::kNcclTopoFallback}));
  }
  // A PCI tree NCCL cannot read (a VM's): it assumes slow links and may build fewer channels.
  // Weak: many VMs run at full speed with it; a healthy set-up of two kinds outranks it.
  if (ev.has(Kind::kNcclTopoUnreadable)) {
    out.push_back(MakeCause(Category::kNcclDegraded, 0.45,
                            "NCCL could not read the PCIe link speed or width (a virtualised PCI "
                            "tree): it assumes slow links, which can cut its channels and "
                            "bandwidth",
                            "give NCCL the real topology (NCCL_TOPO_FILE, the cloud's topology "
                            "XML) and compare the bus bandwidth with the NICs' rate",
                            ev, {Kind::kNcclTopoUnreadable}));
  }
  // NVLS unavailable: NCCL reports a feature it will run without. On GPUs without NVSwitch
  // multicast (before Hopper, PCIe cards) that is their normal state, but the job still runs
  // without it: a degraded set-up, ranked above a healthy verdict (rules.cc) and below any fault.
  if (ev.has(Kind::kNcclNvlsUnavailable) && !ev.has(Kind::kNcclNvlsAvailable)) {
    out.push_back(MakeCause(Category::kNcclDegraded, 0.55,
                            "NCCL reports NVLink SHARP (NVLS) multicast unavailable: on an "
                            "NVSwitch system the collectives run without it, slower",
                            "on NVSwitch (Hopper or later) nodes check that the fabric manager "
                            "runs and that the driver and fabric manager versions match; on other "
                            "GPUs nothing is wrong",
                            ev, {Kind::kNcclNvlsUnavailable}));
  }
  if (ev.has(Kind::kPcieLinkLimited)) {
    out.push_back(MakeCause(Category::kNcclDegraded, 0.7,
                            "PCIe links trained below the GPU's capability (the kernel reports "
                            "\"limited by\" a slower link): host<->GPU and GPU<->NIC traffic runs "
                            "at a fraction of the rate",
                            "check the PCIe switch/riser generation and BIOS link speed settings; "
                            "NVLink traffic is unaffected",
                            ev, {Kind::kPcieLinkLimited}));
  }
  // IB selected but no line shows GPUDirect RDMA on: weak evidence, ranked under a healthy
  // set-up with more positive signs.
  const bool gdr_seen = [&] {
    for (const Evidence& e : ev.examples(Kind::kNcclChannelIb)) {
      if (e.Field("gdr") == "1") return true;
    }
    return false;
  }();
  if (ev.has(Kind::kNcclNetIb) && !gdr_seen && !ev.has(Kind::kNcclGdrDisabled) &&
      !SocketDataPath(ev)) {
    out.push_back(MakeCause(Category::kNcclDegraded, 0.45,
                            "NCCL selected NET/IB but no line shows GPUDirect RDMA (/GDRDMA) in "
                            "use: transfers may be staged through host memory",
                            "check that nvidia_peermem is loaded (lsmod) and rerun with "
                            "NCCL_DEBUG=INFO to see the per-channel transports",
                            ev, {Kind::kNcclNetIb, Kind::kNcclChannelIb}));
  }
}

// Evidence from the fabric itself: a failed IB/RoCE work completion, an HCA's asynchronous
// error event, a verbs call that failed, a NIC whose link went down. Without any of it, a closed
// or reset connection is a peer that ended, not the network.
bool FabricEvidence(const EvidenceSet& ev) {
  return ev.has(Kind::kNcclIbCompletionError) || ev.has(Kind::kIbAsyncEvent) ||
         ev.has(Kind::kIbVerbsFailed) || ev.has(Kind::kNicLinkDown);
}

void FabricRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (ev.has(Kind::kNcclIbCompletionError)) {
    const Evidence* e = ev.first(Kind::kNcclIbCompletionError);
    out.push_back(MakeCause(
        Category::kNetworkError, 0.9,
        "IB/RoCE work completions failed (status " + std::string(e->Field("status")) +
            "; 12 = transport retry counter exceeded: the peer or the link stopped answering; "
            "4 = local protection error: memory registration/GPUDirect): the job's network path "
            "broke",
        "check the link and port counters of both ends (ibstat, perfquery), requeue the job "
        "avoiding the node that logged the first error; for status 4 check GPUDirect RDMA",
        ev, {Kind::kNcclIbCompletionError, Kind::kNcclConnectionClosed}));
  }
  // A verbs call that failed while NCCL looked for its devices (ibv_open_device in a container
  // without /dev/infiniband) is why it fell back to sockets, not a fabric that broke under the
  // job: with a socket data path it is the fallback's reason alone.
  const bool verbs_only_at_start =
      SocketDataPath(ev) && !ev.has(Kind::kIbAsyncEvent) && !ev.has(Kind::kNicLinkDown);
  if (CountOf(ev, {Kind::kIbAsyncEvent, Kind::kIbVerbsFailed, Kind::kNicLinkDown}) > 0 &&
      !verbs_only_at_start) {
    out.push_back(MakeCause(
        Category::kNetworkError, 0.85,
        "the fabric failed under the job: an HCA reported an error event, a verbs call on it "
        "failed or a NIC's link went down",
        "check the HCA and its port on this node (ibstat, ibv_devinfo, dmesg for mlx5_core), "
        "its cable and switch port; requeue the job avoiding the node",
        ev,
        {Kind::kIbAsyncEvent, Kind::kIbVerbsFailed, Kind::kNicLinkDown,
         Kind::kNcclConnectionClosed}));
  }
}

// A peer's connection that closed, reset or broke, with no fabric evidence: the peer process
// ended. NCCL's own verdict "remote process exited or there was a network error" with nothing
// but a reset under it does not decide between the two: it stays a network error, weakly.
void PeerRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (FabricEvidence(ev)) return;
  // "[Service thread] Connection closed by localRank 2": a process on this node ended (its
  // proxy connection closed), not the network.
  const auto& closed = ev.examples(Kind::kNcclConnectionClosed);
  const bool local = std::any_of(closed.begin(), closed.end(), [](const Evidence& e) {
    return e.text.find("by localRank") != std::string::npos;
  });
  if (local) {
    out.push_back(MakeCause(
        Category::kPeerFailure, 0.72,
        "a process of the job on this node ended first (NCCL's service thread saw local ranks' "
        "connections close): these errors are its echo",
        "find the rank that ended first and read its own log for the cause", ev,
        {Kind::kNcclConnectionClosed, Kind::kNcclRemoteError}));
  }
  const bool peer_named = ev.has(Kind::kPeerGone) || ev.has(Kind::kNcclConnectionClosed);
  if (ev.has(Kind::kNcclRemoteError) && !peer_named) {
    out.push_back(MakeCause(
        Category::kNetworkError, 0.55,
        "NCCL reports a remote error (a remote process exited or the network failed) and no "
        "line says which: no peer is named as ended and the fabric shows no error",
        "find the first rank that failed (its own log shows the cause); if none did, check the "
        "network of the node the reset came from and requeue avoiding it",
        ev, {Kind::kNcclRemoteError, Kind::kNcclConnectionReset}));
    return;
  }
  if (CountOf(ev, {Kind::kNcclConnectionReset, Kind::kNcclConnectionClosed, Kind::kPeerGone,
                   Kind::kNcclRemoteError}) > 0) {
    out.push_back(MakeCause(
        Category::kPeerFailure, 0.7,
        "a peer closed or reset its connection (or was named as crashed) and the fabric shows no "
        "error: a remote process of the job ended first",
        "find the rank that ended first (its own log shows the cause) and fix that failure; "
        "these errors follow from it",
        ev,
        {Kind::kPeerGone, Kind::kNcclConnectionClosed, Kind::kNcclConnectionReset,
         Kind::kNcclRemoteError}));
  }
}

// NCCL's bootstrap failing with a system error (a socket call) or finding no interface: the ranks
// could not meet. Not when a peer is seen closing or resetting its connection: then the peer's
// end is what the bootstrap ran into (PeerRules).
void BootstrapRule(const EvidenceSet& ev, std::vector<Cause>& out) {
  if (!ev.has(Kind::kNcclBootstrapFailed)) return;
  if (CountOf(ev, {Kind::kNcclConnectionClosed, Kind::kNcclConnectionReset, Kind::kPeerGone}) > 0) {
    return;
  }
  out.push_back(MakeCause(
      Category::kRendezvousFailure, 0.7,
      "NCCL's bootstrap (the ranks' own rendezvous before any collective) failed: a socket call "
      "between the ranks failed or no interface could reach the others",
      "check that every node reaches the others' bootstrap addresses and ports (firewall, the "
      "interface NCCL_SOCKET_IFNAME picks, the same subnet); rerun with NCCL_DEBUG=INFO for the "
      "socket error",
      ev, {Kind::kNcclBootstrapFailed, Kind::kNcclConnectFailed}));
}

void ErrorRules(const EvidenceSet& ev, std::vector<Cause>& out) {
  FabricRules(ev, out);
  PeerRules(ev, out);
  if (ev.has(Kind::kNcclWatchdogTimeout)) {
    const Evidence* e = ev.first(Kind::kNcclWatchdogTimeout);
    std::string op(e->Field("op"));
    std::string ms(e->Field("timeout_ms"));
    out.push_back(MakeCause(
        Category::kNcclTimeout, 0.8,
        "a collective (" + (op.empty() ? std::string("?") : op) + ") did not finish within the " +
            (ms.empty() ? std::string("configured") : ms + " ms") +
            " timeout; the process-group watchdog took the process down",
        "look for the rank that stopped calling the collective (a hang, a fault or a different "
        "code path on one rank); TORCH_NCCL_ASYNC_ERROR_HANDLING and a shorter timeout surface "
        "it sooner; NCCL_DEBUG=INFO shows the transports",
        ev, {Kind::kNcclWatchdogTimeout}));
  }
  BootstrapRule(ev, out);
  const int64_t rdzv =
      CountOf(ev, {Kind::kRendezvousError, Kind::kStoreTimeout, Kind::kAddressInUse,
                   Kind::kNcclConnectFailed, Kind::kC10dSocketError});
  if (rdzv > 0) {
    out.push_back(MakeCause(
        Category::kRendezvousFailure, 0.85,
        "the ranks could not meet: the rendezvous/bootstrap endpoint was unreachable, timed out "
        "or its port was taken",
        "check that the master address and port are reachable from every node (firewall, the "
        "interface NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME picks, IPv4 vs link-local IPv6), that "
        "the port is free, and that every node starts within the rendezvous timeout",
        ev,
        {Kind::kRendezvousError, Kind::kStoreTimeout, Kind::kAddressInUse, Kind::kNcclConnectFailed,
         Kind::kC10dSocketError}));
  }
}

}  // namespace

bool CitesFabric(const Cause& c) {
  return std::any_of(c.evidence.begin(), c.evidence.end(), [](const Evidence& e) {
    return e.kind == Kind::kNcclIbCompletionError || e.kind == Kind::kIbAsyncEvent ||
           e.kind == Kind::kIbVerbsFailed || e.kind == Kind::kNicLinkDown;
  });
}

void NetworkRules(const EvidenceSet& ev, const NodeContext* node, std::vector<Cause>& out) {
  FallbackRule(ev, node, out);
  DegradedRule(ev, node, out);
  ErrorRules(ev, out);
}

}  // namespace toposched::diag::internal
