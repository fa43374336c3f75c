// Kubernetes extender verbs on a 5,000-node × 8-GPU cluster (3-tier tree: core > 25 spines >
// 250 leaves × 20 nodes, 8 rails), 70% occupied by a deterministic mix of 1–8 GPU allocations.
// One iteration = one pod's Filter + Prioritize, each with every one of the 5,000 nodes as a
// candidate (the worst case: kube-scheduler sends fewer after its own filters), request bodies
// prepared beforehand (kube-scheduler's serialization is not ours). Pods come as gangs of 16 ×
// 8 GPUs (TP 8, DP 16: the first pod of each gang runs the gang placement) mixed with lone
// 1–8 GPU pods; each pod is bound after its timing (not timed), and old pods are deleted to hold
// the occupancy. Counters: p50_ms / p99_ms / max_ms per pod (filter + prioritize), and the same
// for the first pod of a gang (gang placement included); cpu_p50_ms / cpu_p99_ms: the calling
// thread's CPU time per pod (the work, without waiting for a core on a loaded machine).
//   BM_FilterPrioritize/0  nodeCacheCapable: NodeNames (≈ 60 KB of names)
//   BM_FilterPrioritize/1  full v1.Node objects (≈ 330 bytes each, ≈ 1.7 MB per request)
//   BM_FilterPrioritizeDaemon  NodeNames through the daemon's api::Service: every gang (a lone pod
//       is a gang of one) is a pod group queued as a job (submit + a scheduling pass + stored
//       inputs in a real SQLite file, synchronous=NORMAL) on a cluster whose 70% are REST jobs of
//       1–8 GPUs placed by the scheduler (packed by the placer, not scattered at random)
#include <benchmark/benchmark.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "api/extender.h"
#include "api/service.h"
#include "bench_clusters.h"
#include "placer/gang.h"
#include "state/cluster_state.h"
#include "topo/cluster.h"
#include "topo/synthetic.h"

namespace ts = toposched;
using nlohmann::json;

namespace {

constexpr int kNodes = 5000;
constexpr int kNodesPerLeaf = 20;
constexpr int kLeavesPerSpine = 10;
constexpr int kGpus = 8;

using ts::bench::OrDie;

const ts::topo::Cluster& Cluster5k() {
  static const ts::topo::Cluster* cluster = [] {
    auto* c = new ts::topo::Cluster();
    c->name = "synthetic-5000";
    ts::topo::HardwareProfile p;
    p.name = "h100-synthetic";
    p.topology = OrDie(ts::topo::MakeSyntheticTopology("gpu:8 nvswitch:18 nics:8"));
    c->profiles.push_back(std::move(p));
    c->levels = {{"core", 0, 1}, {"spine", 256000, 1}, {"leaf", 64000, 1}};
    const int leaves = kNodes / kNodesPerLeaf;
    const int spines = leaves / kLeavesPerSpine;
    ts::bench::AddTreeSwitches(*c, "core0", spines, leaves, kLeavesPerSpine);
    ts::bench::AddTreeNodes(*c, kNodes, kNodesPerLeaf, spines, "gpu%04d");
    c->rails = {8, "core"};
    c->Finalize();
    if (!c->Validate().ok()) std::abort();
    return c;
  }();
  return *cluster;
}

// 70% of the GPUs held by 1–8 GPU allocations on random nodes (lowest free GPUs).
ts::sched::ClusterState Occupied(const ts::topo::Cluster& c) {
  ts::sched::ClusterState s = OrDie(ts::sched::ClusterState::Create(c));
  std::mt19937_64 rng(20261202);
  const int target = kNodes * kGpus * 7 / 10;
  int held = 0;
  int64_t id = 1;
  while (held < target) {
    const int node = static_cast<int>(rng() % kNodes);
    const int want = 1 + static_cast<int>(rng() % kGpus);
    ts::sched::GpuMask free = s.FreeMask(node), take;
    for (int g = 0, got = 0; g < kGpus && got < want; ++g) {
      if (free.test(g)) {
        take.set(g);
        ++got;
      }
    }
    if (take.count() != want) continue;
    if (!s.Allocate(ts::sched::AllocId::FromKey(id++), {{node, take}}).ok()) std::abort();
    held += want;
  }
  return s;
}

json PodJson(const std::string& name, int gpus, const std::string& group, int index) {
  json pod = {{"kind", "Pod"},
              {"apiVersion", "v1"},
              {"metadata", {{"name", name}, {"namespace", "bench"}, {"uid", "uid-" + name}}},
              {"spec",
               {{"containers",
                 {{{"name", "trainer"},
                   {"image", "nvcr.io/nvidia/pytorch:24.05-py3"},
                   {"resources",
                    {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}, {"cpu", "16"}}}}}}}}}}};
  if (!group.empty()) {
    pod["metadata"]["labels"] = {{"toposched.io/pod-group", group},
                                 {"toposched.io/pod-index", std::to_string(index)}};
    pod["metadata"]["annotations"] = {{"toposched.io/group-size", "16"},
                                      {"toposched.io/tp", "8"},
                                      {"toposched.io/dp", "16"},
                                      {"toposched.io/model-params", "70B"}};
  }
  return pod;
}

json NodeJson(const std::string& name) {
  return {{"kind", "Node"},
          {"apiVersion", "v1"},
          {"metadata",
           {{"name", name},
            {"labels", {{"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"}}}}},
          {"status",
           {{"allocatable", {{"cpu", "220"}, {"memory", "2100000000Ki"}, {"nvidia.com/gpu", "8"}}},
            {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}};
}

struct PodReq {
  std::string name, uid, body;
  bool gang_head = false;
};

// CPU time of the calling thread: the work of one call, whatever else runs on the machine.
double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// The first node a filter answer passes ("" when none), without parsing the whole (≈ 400 KB)
// answer.
std::string FirstPassedNode(const std::string& answer) {
  const std::string key = "\"NodeNames\":[\"";
  const size_t k = answer.find(key);
  if (k == std::string::npos) return "";
  const size_t from = k + key.size();
  return answer.substr(from, answer.find('"', from) - from);
}

void SetLatencyCounters(benchmark::State& state, const std::vector<double>& all_ms,
                        const std::vector<double>& cpu_ms, const std::vector<double>& head_ms) {
  state.counters["p50_ms"] = Percentile(all_ms, 0.50);
  state.counters["p99_ms"] = Percentile(all_ms, 0.99);
  state.counters["max_ms"] = Percentile(all_ms, 1.0);
  state.counters["cpu_p50_ms"] = Percentile(cpu_ms, 0.50);
  state.counters["cpu_p99_ms"] = Percentile(cpu_ms, 0.99);
  state.counters["gang_head_p50_ms"] = Percentile(head_ms, 0.50);
  state.counters["gang_head_max_ms"] = Percentile(head_ms, 1.0);
  state.counters["pods"] = static_cast<double>(all_ms.size());
}

void BM_FilterPrioritize(benchmark::State& state) {
  const bool full_nodes = state.range(0) == 1;
  const ts::topo::Cluster& c = Cluster5k();
  static std::unique_ptr<ts::sched::GangPlacer> placer =
      OrDie(ts::sched::GangPlacer::Create(Cluster5k()));
  auto ext = OrDie(ts::api::Extender::Create(*placer, Occupied(c)));

  json candidates = json::array();
  json node_list = {{"kind", "NodeList"}, {"apiVersion", "v1"}, {"items", json::array()}};
  for (const auto& n : c.nodes) {
    if (full_nodes) {
      node_list["items"].push_back(NodeJson(n.name));
    } else {
      candidates.push_back(n.name);
    }
  }
  // The pod stream: gangs of 16 interleaved with lone pods, 4 lone pods per gang pod.
  std::mt19937_64 rng(7);
  int gang_no = 0, lone_no = 0;
  std::deque<std::string> pod_queue;
  auto next_pods = [&]() {
    std::vector<PodReq> out;
    const std::string group = "g" + std::to_string(gang_no++);
    for (int i = 0; i < 16; ++i) {
      PodReq r;
      r.name = group + "-" + std::to_string(i);
      r.uid = "uid-" + r.name;
      json pod = PodJson(r.name, 8, group, i);
      json args = full_nodes ? json{{"Pod", pod}, {"Nodes", node_list}}
                             : json{{"Pod", pod}, {"NodeNames", candidates}};
      r.body = args.dump();
      r.gang_head = i == 0;
      out.push_back(std::move(r));
      for (int k = 0; k < 4; ++k) {
        PodReq l;
        l.name = "lone" + std::to_string(lone_no++);
        l.uid = "uid-" + l.name;
        json lp = PodJson(l.name, 1 + static_cast<int>(rng() % 8), "", 0);
        json la = full_nodes ? json{{"Pod", lp}, {"Nodes", node_list}}
                             : json{{"Pod", lp}, {"NodeNames", candidates}};
        l.body = la.dump();
        out.push_back(std::move(l));
      }
    }
    return out;
  };

  std::vector<double> all_ms, head_ms, cpu_ms;
  std::vector<PodReq> batch;
  size_t at = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    if (at == batch.size()) {
      state.PauseTiming();
      batch = next_pods();
      at = 0;
      state.ResumeTiming();
    }
    const PodReq& r = batch[at++];
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuMs();
    auto f = ext->Filter(r.body);
    auto p = ext->Prioritize(r.body);
    const double c1 = ThreadCpuMs();
    const auto t1 = std::chrono::steady_clock::now();
    cpu_ms.push_back(c1 - c0);
    if (!f.ok() || !p.ok()) std::abort();
    benchmark::DoNotOptimize(f->data());
    benchmark::DoNotOptimize(p->data());
    bytes += r.body.size() * 2;
    const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    all_ms.push_back(ms);
    if (r.gang_head) head_ms.push_back(ms);

    state.PauseTiming();
    // Bind where the filter said (a pod that fits nowhere now is skipped), then hold the
    // occupancy: once 400 pods are bound, the oldest goes.
    std::string node;
    if (full_nodes) {
      json fr = json::parse(*f);
      if (!fr["Nodes"]["items"].empty()) node = fr["Nodes"]["items"][0]["metadata"]["name"];
    } else {
      node = FirstPassedNode(*f);
    }
    if (!node.empty()) {
      json b = {{"PodName", r.name}, {"PodNamespace", "bench"}, {"PodUID", r.uid}, {"Node", node}};
      (void)ext->Bind(b.dump());
      pod_queue.push_back(r.uid);
    }
    while (pod_queue.size() > 400) {
      (void)ext->PodDeleted(json{{"PodUID", pod_queue.front()}}.dump());
      pod_queue.pop_front();
    }
    state.ResumeTiming();
  }
  SetLatencyCounters(state, all_ms, cpu_ms, head_ms);
  state.counters["request_kb"] = all_ms.empty() ? 0
                                                : static_cast<double>(bytes) / 2.0 /
                                                      static_cast<double>(all_ms.size()) / 1024.0;
}

// The daemon's path: pod groups are jobs in the one queue (src/api/extender_queue.cc).
void BM_FilterPrioritizeDaemon(benchmark::State& state) {
  const ts::topo::Cluster& c = Cluster5k();
  char dir[] = "/tmp/toposched-ext-bench-XXXXXX";
  if (mkdtemp(dir) == nullptr) std::abort();
  ts::api::ServiceOptions o;
  o.db_path = std::string(dir) + "/state.db";
  o.store.sync_full = false;
  o.background_passes = false;
  o.extender = true;
  auto svc = OrDie(ts::api::Service::Open(c, o));
  // 70% of the GPUs held by REST jobs of 1–8 GPUs, started by one pass.
  std::mt19937_64 rng(20261202);
  const int target = kNodes * kGpus * 7 / 10;
  for (int held = 0, n = 0; held < target; ++n) {
    const int want = 1 + static_cast<int>(rng() % kGpus);
    json spec = {{"name", "rest-" + std::to_string(n)},
                 {"user", "u" + std::to_string(n % 7)},
                 {"replicas", 1},
                 {"gpus_per_replica", want}};
    OrDie(svc->Submit(spec.dump(), ""));
    held += want;
  }
  OrDie(svc->RunPass());
  json candidates = json::array();
  for (const auto& n : c.nodes) candidates.push_back(n.name);
  std::mt19937_64 prng(7);
  int gang_no = 0, lone_no = 0;
  std::deque<std::string> pod_queue;
  std::vector<double> all_ms, head_ms, cpu_ms;
  std::vector<PodReq> batch;
  size_t at = 0;
  for (auto _ : state) {
    if (at == batch.size()) {
      state.PauseTiming();
      batch.clear();
      const std::string group = "g" + std::to_string(gang_no++);
      for (int i = 0; i < 16; ++i) {
        PodReq r;
        r.name = group + "-" + std::to_string(i);
        r.uid = "uid-" + r.name;
        r.body = json{{"Pod", PodJson(r.name, 8, group, i)}, {"NodeNames", candidates}}.dump();
        r.gang_head = i == 0;
        batch.push_back(std::move(r));
        for (int k = 0; k < 4; ++k) {
          PodReq l;
          l.name = "lone" + std::to_string(lone_no++);
          l.uid = "uid-" + l.name;
          l.body = json{{"Pod", PodJson(l.name, 1 + static_cast<int>(prng() % 8), "", 0)},
                        {"NodeNames", candidates}}
                       .dump();
          batch.push_back(std::move(l));
        }
      }
      at = 0;
      state.ResumeTiming();
    }
    const PodReq& r = batch[at++];
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = ThreadCpuMs();
    auto f = svc->ExtenderCall("filter", r.body);
    auto p = svc->ExtenderCall("prioritize", r.body);
    const double c1 = ThreadCpuMs();
    const auto t1 = std::chrono::steady_clock::now();
    if (!f.ok() || !p.ok()) std::abort();
    cpu_ms.push_back(c1 - c0);
    const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    all_ms.push_back(ms);
    if (r.gang_head) head_ms.push_back(ms);
    state.PauseTiming();
    const std::string node = FirstPassedNode(*f);
    if (!node.empty()) {
      json b = {{"PodName", r.name}, {"PodNamespace", "bench"}, {"PodUID", r.uid}, {"Node", node}};
      (void)svc->ExtenderCall("bind", b.dump());
      pod_queue.push_back(r.uid);
    }
    while (pod_queue.size() > 400) {
      (void)svc->ExtenderCall("pod-deleted", json{{"PodUID", pod_queue.front()}}.dump());
      pod_queue.pop_front();
    }
    state.ResumeTiming();
  }
  SetLatencyCounters(state, all_ms, cpu_ms, head_ms);
  svc.reset();
  for (const char* f : {"/state.db", "/state.db-wal", "/state.db-shm"}) {
    (void)unlink((std::string(dir) + f).c_str());
  }
  (void)rmdir(dir);
}

BENCHMARK(BM_FilterPrioritize)->Arg(0)->Unit(benchmark::kMillisecond)->Iterations(2000);
BENCHMARK(BM_FilterPrioritizeDaemon)->Unit(benchmark::kMillisecond)->Iterations(2000);
BENCHMARK(BM_FilterPrioritize)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(400);

}  // namespace

BENCHMARK_MAIN();
