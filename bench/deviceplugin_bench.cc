// The device plugin's GetPreferredAllocation: the answer the kubelet waits for at pod admission.
// Measured three ways: the plugin's own computation without a result cache (the selector's
// tables warm) and answered from its cache, and the whole gRPC round trip over the plugin's
// Unix socket, as a kubelet on the node makes it. Questions: random available sets
// of every size on an 8-GPU H100 node (sample 24) and a 16-GPU DGX-2 (hwloc sample).
#include <benchmark/benchmark.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "deviceplugin/allocation.h"
#include "deviceplugin/device_state.h"
#include "deviceplugin/plugin.h"
#include "deviceplugin/v1beta1.grpc.pb.h"
#include "topo/io/import.h"

namespace ts = toposched;
namespace dp = toposched::deviceplugin;

namespace {

const std::string kSamples = std::string(TS_SOURCE_DIR) + "/data/samples/";
const char* const kH100 = "nvidia-smi/24-h100-sxm-8gpu-nv18-8nic-pix-sglang30401.txt";
const char* const kDgx2 = "hwloc-xml/hwloc-nvidiaDGX2.xml";
// Distinct questions per benchmark: enough that a cold-cache run does not repeat one.
constexpr int kQuestions = 512;

struct Question {
  std::vector<std::string> available;
  int size = 0;
};

ts::topo::NodeTopology Load(const char* name) {
  auto t = ts::topo::io::ImportTopologyFile(kSamples + name, ts::topo::io::TopoFormat::kAuto);
  if (!t.ok()) {
    std::fprintf(stderr, "%s\n", t.status().ToString().c_str());
    std::abort();
  }
  return *t;
}

// Random available sets (each GPU available with probability 3/4) and a size in 1..|set|.
std::vector<Question> Questions(const ts::topo::NodeTopology& t, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Question> out;
  while (out.size() < kQuestions) {
    Question q;
    for (const ts::topo::Gpu& g : t.gpus) {
      if (rng() % 4 != 0) q.available.push_back(std::to_string(g.index));
    }
    if (q.available.empty()) continue;
    q.size = 1 + static_cast<int>(rng() % q.available.size());
    out.push_back(std::move(q));
  }
  return out;
}

std::shared_ptr<dp::DeviceState> State(const ts::topo::NodeTopology& t) {
  auto table = dp::DeviceTable::Create(t, {});
  auto state = dp::DeviceState::Create(t, std::move(table).value(), dp::PluginOptions{});
  if (!state.ok()) std::abort();
  return *state;
}

// The plugin's computation (ids to positions, the node selector, positions to ids) answered
// from its result cache, as DeviceState does after a first question.
void BM_PreferredCached(benchmark::State& st, const char* sample) {
  const ts::topo::NodeTopology t = Load(sample);
  const std::vector<Question> qs = Questions(t, 44);
  std::shared_ptr<dp::DeviceState> state = State(t);
  for (const Question& q : qs) benchmark::DoNotOptimize(state->Preferred(q.available, {}, q.size));
  size_t i = 0;
  for (auto _ : st) {
    const Question& q = qs[i++ % qs.size()];
    benchmark::DoNotOptimize(state->Preferred(q.available, {}, q.size));
  }
}

// The same with no result cache (every question computed; the selector's per-subset tables
// warmed by one round of the questions first): a kubelet's first question of a kind.
void BM_PreferredUncached(benchmark::State& st, const char* sample) {
  const ts::topo::NodeTopology t = Load(sample);
  const std::vector<Question> qs = Questions(t, 44);
  auto table = dp::DeviceTable::Create(t, {});
  auto selector = ts::sched::NodeSelector::Create(t, ts::sched::CostModelObjective(t));
  if (!table.ok() || !selector.ok()) std::abort();
  for (const Question& q : qs) {
    benchmark::DoNotOptimize(dp::PreferredDevices(**selector, *table, q.available, {}, q.size));
  }
  size_t i = 0;
  for (auto _ : st) {
    const Question& q = qs[i++ % qs.size()];
    benchmark::DoNotOptimize(dp::PreferredDevices(**selector, *table, q.available, {}, q.size));
  }
}

// The kubelet's view: GetPreferredAllocation over the plugin's socket, cache warm.
void BM_PreferredGrpc(benchmark::State& st, const char* sample) {
  const ts::topo::NodeTopology t = Load(sample);
  const std::vector<Question> qs = Questions(t, 44);
  std::string tmpl = "/tmp/tsdpb.XXXXXX";
  const std::string dir = mkdtemp(tmpl.data());
  dp::PluginOptions o;
  o.kubelet_dir = dir;
  auto plugin = dp::DevicePlugin::Create(t, {}, o);
  if (!plugin.ok() || !(*plugin)->Start().ok()) std::abort();
  auto stub = v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix://" + o.socket_path(), grpc::InsecureChannelCredentials()));
  size_t i = 0;
  for (auto _ : st) {
    const Question& q = qs[i++ % qs.size()];
    v1beta1::PreferredAllocationRequest req;
    auto* c = req.add_container_requests();
    for (const std::string& id : q.available) c->add_available_deviceids(id);
    c->set_allocation_size(q.size);
    v1beta1::PreferredAllocationResponse resp;
    grpc::ClientContext ctx;
    if (!stub->GetPreferredAllocation(&ctx, req, &resp).ok()) st.SkipWithError("rpc failed");
  }
  (*plugin)->Stop();
  std::filesystem::remove_all(dir);
}

}  // namespace

BENCHMARK_CAPTURE(BM_PreferredUncached, h100_8gpu, kH100);
BENCHMARK_CAPTURE(BM_PreferredUncached, dgx2_16gpu, kDgx2);
BENCHMARK_CAPTURE(BM_PreferredCached, h100_8gpu, kH100);
BENCHMARK_CAPTURE(BM_PreferredCached, dgx2_16gpu, kDgx2);
BENCHMARK_CAPTURE(BM_PreferredGrpc, h100_8gpu, kH100);
BENCHMARK_CAPTURE(BM_PreferredGrpc, dgx2_16gpu, kDgx2);

BENCHMARK_MAIN();
