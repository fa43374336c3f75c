// `toposched cost` (predicted time of a collective on a GPU set) and `toposched cost calibrate`
// (the model against published nccl-tests results). `place-node` joins RegisterCostCommands
// from src/cli/place_node_command.h.
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/data_dir.h"
#include "cli/place_command.h"
#include "cli/place_node_command.h"
#include "cli/replay_command.h"
#include "cost/calibration.h"
#include "cost/cost_model.h"
#include "cost/gpu_spec.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/import.h"

namespace toposched::cli {

namespace {

struct CostArgs {
  std::string topo_file;
  std::string cluster_file;
  std::string gpus = "all";
  std::string collective = "allreduce";
  std::string bytes = "1GiB";
  std::string algorithm = "auto";
  bool json = false;
};

struct CalibrateArgs {
  std::string cases;  // "": the data directory's calibration/cases.json
  bool markdown = false;
};

int CostUsage(const std::string& message) {
  std::fprintf(stderr, "toposched cost: %s\n", message.c_str());
  return 2;
}

nlohmann::json HopJson(const cost::Hop& h) {
  nlohmann::json j = {{"from", h.from},
                      {"to", h.to},
                      {"path", h.path},
                      {"transport", cost::TransportName(h.transport)},
                      {"bandwidth_gbps", h.bandwidth_gbps}};
  if (!h.via.empty()) j["via"] = h.via;
  return j;
}

void PrintCost(const cost::Estimate& e, cost::Collective c, double bytes) {
  std::printf("%s of %s over %d GPU%s (%d node%s), algorithm %s\n", cost::CollectiveName(c),
              cost::FormatBytes(bytes).c_str(), e.ranks, e.ranks == 1 ? "" : "s", e.nodes,
              e.nodes == 1 ? "" : "s", cost::AlgorithmName(e.algorithm));
  std::printf("  time        %.3f ms\n", e.time_ms);
  std::printf("  algbw       %.1f GB/s\n", e.algbw_gbps);
  std::printf("  busbw       %.1f GB/s\n", e.busbw_gbps);
  if (e.ranks < 2) return;
  const cost::Hop& b = e.bottleneck;
  std::printf("  bottleneck  %s -> %s  %s  %s  %.1f GB/s%s%s\n", b.from.c_str(), b.to.c_str(),
              b.path.c_str(), cost::TransportName(b.transport), b.bandwidth_gbps,
              b.via.empty() ? "" : "  via ", b.via.c_str());
  if (e.hops.size() > 32) {
    std::printf("  %zu hops (--json lists them)\n", e.hops.size());
    return;
  }
  std::printf("  hops:\n");
  for (const cost::Hop& h : e.hops) {
    std::printf("    %s -> %s  %s  %s  %.1f GB/s%s%s\n", h.from.c_str(), h.to.c_str(),
                h.path.c_str(), cost::TransportName(h.transport), h.bandwidth_gbps,
                h.via.empty() ? "" : "  via ", h.via.c_str());
  }
}

int RunCost(const CostArgs& a) {
  if (a.topo_file.empty() == a.cluster_file.empty()) {
    return CostUsage("give exactly one of --topo FILE or --cluster FILE");
  }
  auto collective = cost::ParseCollective(a.collective);
  if (!collective.ok()) return Fail(collective.status());
  auto algorithm = cost::ParseAlgorithm(a.algorithm);
  if (!algorithm.ok()) return Fail(algorithm.status());
  auto bytes = cost::ParseByteSize(a.bytes);
  if (!bytes.ok()) return Fail(bytes.status());

  std::unique_ptr<cost::CostModel> model;
  std::unique_ptr<topo::Cluster> cluster;
  std::vector<cost::GpuRef> gpus;
  if (!a.topo_file.empty()) {
    auto t = topo::io::ImportTopologyFile(a.topo_file, topo::io::TopoFormat::kAuto);
    if (!t.ok()) return Fail(t.status());
    auto pos = cost::ParseNodeGpuSpec(*t, a.gpus);
    if (!pos.ok()) return Fail(pos.status().WithPrefix("--gpus"));
    for (int p : *pos) gpus.push_back(cost::GpuRef{0, p});
    model = cost::CostModel::ForNode(*t);
  } else {
    auto c = topo::io::ReadClusterYamlFile(a.cluster_file);
    if (!c.ok()) return Fail(c.status());
    cluster = std::make_unique<topo::Cluster>(std::move(c).value());
    auto refs = cost::ParseClusterGpuSpec(*cluster, a.gpus);
    if (!refs.ok()) return Fail(refs.status().WithPrefix("--gpus"));
    gpus = std::move(refs).value();
    model = std::make_unique<cost::CostModel>(*cluster);
  }
  auto est = model->Evaluate(*collective, gpus, *bytes, *algorithm);
  if (!est.ok()) return Fail(est.status());
  if (a.json) {
    nlohmann::json j = {{"time_ms", est->time_ms},
                        {"algbw_gbps", est->algbw_gbps},
                        {"busbw_gbps", est->busbw_gbps},
                        {"algorithm", cost::AlgorithmName(est->algorithm)},
                        {"bottleneck", HopJson(est->bottleneck)},
                        {"collective", cost::CollectiveName(*collective)},
                        {"bytes", *bytes},
                        {"ranks", est->ranks},
                        {"nodes", est->nodes}};
    nlohmann::json hops = nlohmann::json::array();
    for (const cost::Hop& h : est->hops) hops.push_back(HopJson(h));
    j["hops"] = hops;
    std::cout << j.dump(2) << "\n";
  } else {
    PrintCost(*est, *collective, *bytes);
  }
  return 0;
}

int RunCalibrate(const CalibrateArgs& a) {
  auto rep = cost::RunCalibration(a.cases.empty() ? DataFile("calibration/cases.json") : a.cases);
  if (!rep.ok()) return Fail(rep.status());
  if (a.markdown) {
    std::cout << cost::FormatCalibrationMarkdown(*rep);
    return 0;
  }
  for (const cost::CalibrationResult& r : rep->results) {
    std::printf("%-40s %8s  published %7.1f  predicted %7.1f GB/s  %-12s %+6.1f%%\n",
                r.c.name.c_str(), cost::FormatBytes(static_cast<double>(r.bytes)).c_str(),
                r.published_busbw_gbps, r.predicted.busbw_gbps,
                cost::AlgorithmName(r.predicted.algorithm), r.error * 100);
  }
  std::printf("%zu cases: median |error| %.1f%%, worst %.2fx (%s)\n", rep->results.size(),
              rep->median_abs_error * 100, rep->worst_ratio, rep->worst_case.c_str());
  std::printf(
      "in-sample %d: median %.1f%%, worst %.1f%%; held out %d: median %.1f%%, worst %.1f%%\n",
      rep->in_sample.cases, rep->in_sample.median_abs_error * 100,
      rep->in_sample.worst_abs_error * 100, rep->held_out.cases,
      rep->held_out.median_abs_error * 100, rep->held_out.worst_abs_error * 100);
  return 0;
}

void AddCostCommand(CLI::App& app, int& rc) {
  auto args = std::make_shared<CostArgs>();
  CLI::App* cost = app.add_subcommand(
      "cost", "Predicted time of a collective on a GPU set (alpha-beta model of NCCL)");
  CLI::Option* topo_opt =
      cost->add_option("--topo", args->topo_file, "node topology file (any format topo reads)");
  CLI::Option* cluster_opt = cost->add_option("--cluster", args->cluster_file, "cluster YAML");
  topo_opt->excludes(cluster_opt);
  cost->add_option("--gpus", args->gpus,
                   "GPU set: with --topo \"0-7\" or \"0,2,4\"; with --cluster "
                   "\"gpu001:0-7,gpu002:0-7\" or whole nodes \"gpu[001-002]\"; \"all\" (default)");
  cost->add_option("--collective", args->collective,
                   "allreduce (default), allgather, reducescatter, alltoall, sendrecv");
  cost->add_option("--bytes", args->bytes,
                   "message size: 1GiB (default), 512MiB, 1GB, 1048576; per rank (nccl-tests)");
  cost->add_option("--algorithm", args->algorithm,
                   "auto (default), ring, tree, hierarchical, nvls, direct");
  cost->add_flag("--json", args->json, "JSON output");

  auto cal = std::make_shared<CalibrateArgs>();
  CLI::App* calibrate = cost->add_subcommand(
      "calibrate", "Compare the model with the published nccl-tests results it was calibrated on");
  calibrate->add_option("--cases", cal->cases,
                        "calibration manifest (default: the data directory's "
                        "calibration/cases.json)");
  calibrate->add_flag("--markdown", cal->markdown, "print the table of docs/calibration.md");
  calibrate->callback([cal, &rc] { rc = RunCalibrate(*cal); });

  cost->callback([args, calibrate, &rc] {
    if (calibrate->parsed()) return;
    rc = RunCost(*args);
  });
}

}  // namespace

void RegisterCostCommands(CLI::App& app, int& rc) {
  AddCostCommand(app, rc);
  AddPlaceNodeCommand(app, rc);
  AddPlaceCommand(app, rc);
  AddReplayCommand(app, rc);
}

}  // namespace toposched::cli
