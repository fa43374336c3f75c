#include "cli/place_node_command.h"

#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "core/strings.h"
#include "select/node_select.h"
#include "topo/io/import.h"

namespace toposched::cli {

namespace {

struct PlaceNodeArgs {
  std::string topo;
  std::string format = "auto";
  int gpus = 0;
  int tp = 1;
  std::string free;
  double dp_bytes = sched::NodeRequest{}.dp_bytes;
  double tp_bytes = sched::NodeRequest{}.tp_bytes;
  bool json = false;
};

nlohmann::json ChoiceJson(const topo::NodeTopology& t, const sched::NodeChoice& c) {
  nlohmann::json j;
  j["fit"] = sched::FitName(c.fit);
  nlohmann::json gpus = nlohmann::json::array();
  nlohmann::json ranks = nlohmann::json::array();
  for (const sched::RankPlacement& r : c.layout.ranks) {
    gpus.push_back(r.gpu_index);
    nlohmann::json rj;
    rj["rank"] = r.rank;
    rj["gpu"] = r.gpu_index;
    rj["nic"] = r.nic >= 0 ? nlohmann::json(t.nics[r.nic].name) : nlohmann::json(nullptr);
    rj["numa"] = r.numa ? nlohmann::json(*r.numa) : nlohmann::json(nullptr);
    rj["cpus"] = FormatIntList(r.cpus);
    ranks.push_back(rj);
  }
  j["gpus"] = gpus;
  j["ranks"] = ranks;
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : c.layout.env) env[k] = v;
  j["env"] = env;
  j["predicted_ms"] = c.fit == sched::Fit::kFit ? nlohmann::json(c.predicted_ms) : nullptr;
  j["warnings"] = c.layout.warnings;
  if (c.fit == sched::Fit::kFit) {
    j["dp_ms"] = c.dp_ms;
    j["tp_ms"] = c.tp_ms;
    j["method"] = c.method;
  } else {
    j["reason"] = c.reason;
  }
  return j;
}

void PrintNodeChoice(const topo::NodeTopology& t, const sched::NodeRequest& req,
                     const sched::NodeChoice& c) {
  std::printf("node: %s (%zu GPUs)\n", t.source.c_str(), t.gpus.size());
  if (c.fit != sched::Fit::kFit) {
    std::printf("no placement (%s): %s\n", sched::FitName(c.fit), c.reason.c_str());
    return;
  }
  std::string order;
  for (const sched::RankPlacement& r : c.layout.ranks) {
    order += (order.empty() ? "" : ",") + std::to_string(r.gpu_index);
  }
  std::printf("GPUs in rank order: %s\n", order.c_str());
  std::printf("predicted: %.3f ms (AllReduce %.0f B over all %d: %.3f ms", c.predicted_ms,
              req.dp_bytes, req.gpus, c.dp_ms);
  if (req.has_tp()) {
    std::printf("; AllReduce %.0f B in each TP=%d group: %.3f ms", req.tp_bytes, req.tp, c.tp_ms);
  }
  std::printf("; ring bottleneck %.1f GB/s; method %s)\n",
              std::isfinite(c.ring_bottleneck_gbps) ? c.ring_bottleneck_gbps : 0.0,
              c.method.c_str());
  std::printf("%-5s %-6s %-4s %-14s %-5s %-5s %s\n", "rank", "gpu", "tp", "nic", "path", "numa",
              "cpus");
  for (const sched::RankPlacement& r : c.layout.ranks) {
    std::string nic = r.nic >= 0 ? t.nics[r.nic].name : "-";
    std::string path = r.nic_path ? topo::PathName(*r.nic_path) : "-";
    std::string numa = r.numa ? std::to_string(*r.numa) : "-";
    std::string cpus = r.cpus.empty() ? "-" : FormatIntList(r.cpus);
    std::printf("%-5d %-6d %-4d %-14s %-5s %-5s %s\n", r.rank, r.gpu_index, r.tp_group, nic.c_str(),
                path.c_str(), numa.c_str(), cpus.c_str());
  }
  std::printf("environment:\n");
  for (const auto& [k, v] : c.layout.env) std::printf("  export %s=%s\n", k.c_str(), v.c_str());
  if (!c.layout.warnings.empty()) {
    std::printf("warnings:\n");
    for (const std::string& w : c.layout.warnings) std::printf("  - %s\n", w.c_str());
  }
}

int RunPlaceNode(const PlaceNodeArgs& a) {
  auto fail = [&](const Status& s) {
    if (a.json) {
      nlohmann::json j;
      j["error"] = s.ToString();
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      std::fprintf(stderr, "place-node: %s\n", s.ToString().c_str());
    }
    return 1;
  };
  auto format = topo::io::ParseTopoFormat(a.format);
  if (!format.ok()) return fail(format.status());
  auto t = topo::io::ImportTopologyFile(a.topo, *format);
  if (!t.ok()) return fail(t.status());
  sched::NodeRequest req;
  req.gpus = a.gpus;
  req.tp = a.tp;
  req.dp_bytes = a.dp_bytes;
  req.tp_bytes = a.tp_bytes;
  if (Status s = req.Validate(); !s.ok()) return fail(s);
  sched::GpuMask free = sched::GpuMask::FirstN(static_cast<int>(t->gpus.size()));
  if (!a.free.empty()) {
    auto list = ParseIntList(a.free, sched::GpuMask::kMaxGpus);
    if (!list.ok()) return fail(list.status().WithPrefix("--free"));
    free = sched::GpuMask();
    for (int index : *list) {
      int pos = t->gpu_pos(index);
      if (pos < 0) {
        return fail(InvalidArgumentError("--free: the node has no GPU " + std::to_string(index)));
      }
      free.set(pos);
    }
  }
  auto selector = sched::NodeSelector::Create(*t, sched::CostModelObjective(*t));
  if (!selector.ok()) return fail(selector.status());
  auto choice = (*selector)->SelectUncached(free, req);
  if (!choice.ok()) return fail(choice.status());
  if (a.json) {
    std::printf("%s\n", ChoiceJson(*t, *choice).dump(2).c_str());
  } else {
    PrintNodeChoice(*t, req, *choice);
  }
  return choice->fit == sched::Fit::kFit ? 0 : 1;
}

}  // namespace

void AddPlaceNodeCommand(CLI::App& app, int& rc) {
  auto args = std::make_shared<PlaceNodeArgs>();
  CLI::App* cmd =
      app.add_subcommand("place-node", "Choose the best GPUs on one node for a job, in rank order");
  cmd->add_option("--topo", args->topo, "node topology file (nvidia-smi topo -m, hwloc, ...)")
      ->required();
  cmd->add_option("--format", args->format, "topology format: auto|nvidia-smi|hwloc|nccl-xml|json");
  cmd->add_option("--gpus", args->gpus, "GPUs to place (k)")->required();
  cmd->add_option("--tp", args->tp, "tensor-parallel group size (divides --gpus)");
  cmd->add_option("--free", args->free, "free GPU indices, e.g. 0,2-5 (default: all)");
  cmd->add_option("--dp-bytes", args->dp_bytes, "bytes of the AllReduce over all GPUs");
  cmd->add_option("--tp-bytes", args->tp_bytes, "bytes of the AllReduce inside each TP group");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->callback([args, &rc]() { rc = RunPlaceNode(*args); });
}

}  // namespace toposched::cli
