// `toposched check pollux|crux`: the simulator's step-time model beside published measurements
// (src/sim/model_check.h; docs/evaluation.md, "Checks of the model").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/data_dir.h"
#include "cost/cost_model.h"
#include "sim/model_check.h"
#include "sim/step_model.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/import.h"

namespace toposched::cli {

namespace {

constexpr size_t kMaxProfileBytes = 16u << 20;

// The apps whose gradients can be priced: the model each Pollux app trains, by its catalog
// name (data/models/catalog.json, which gives its parameters and their source) or, for a model
// the catalog lacks, its parameter count with the source of the count.
struct PolluxApp {
  const char* name;
  const char* catalog_model;  // nullptr: `params` and `source` below
  double params;
  const char* source;
};
constexpr PolluxApp kPolluxApps[] = {
    {"imagenet", "resnet50", 0, "ResNet-50, torchvision model docs"},
    {"bert", "bert-base", 0, "BERT-base, Devlin et al. 2019"},
    {"cifar10", nullptr, 11.2e6,
     "ResNet-18 for 32x32 inputs, He et al. 2016 layout: 11.2M parameters (approximate)"},
    {"yolov3", nullptr, 61.9e6,
     "YOLOv3-416, Redmon & Farhadi 2018: 61.9M parameters (approximate)"},
};

// The app's parameter count and where it comes from.
std::pair<double, std::string> AppParams(const PolluxApp& app, const sim::StepCatalog& catalog) {
  if (app.catalog_model == nullptr) return {app.params, app.source};
  const sim::ModelEntry* m = catalog.FindModel(app.catalog_model);
  return {m->params, std::string(app.source) + " (the catalog's " + app.catalog_model + ")"};
}

StatusOr<topo::Cluster> LoadCluster(const std::string& path) {
  ASSIGN_OR_RETURN(topo::Cluster c, topo::io::ReadClusterYamlFile(path));
  c.Finalize();
  return c;
}

struct PolluxArgs {
  std::string profiles;
  std::string cluster;
  bool rows = false;
};

int RunPollux(const PolluxArgs& a) {
  StatusOr<topo::Cluster> cluster = LoadCluster(a.cluster);
  if (!cluster.ok()) return Fail(cluster.status());
  const cost::CostModel cost(*cluster);
  const sim::StepCatalog& catalog = sim::StepCatalog::Default();
  std::printf(
      "Pollux placement shapes on %s: step(shape) / step(packed), measured beside the "
      "model (DP overlap %.2f, %.0f gradient bytes per parameter)\n\n",
      cluster->name.c_str(), catalog.dp_backward_overlap, catalog.grad_bytes_per_param);
  std::printf(
      "| app | parameters | shapes | median error | worst error | measured median | "
      "predicted median |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::string details;
  int apps = 0;
  for (const PolluxApp& app : kPolluxApps) {
    const std::string path = a.profiles + "/" + app.name + "/placements.csv";
    if (!std::filesystem::exists(path)) continue;
    StatusOr<std::string> text = topo::io::ReadFileToString(path, kMaxProfileBytes);
    if (!text.ok()) return Fail(text.status());
    auto rows = sim::ParsePlacementsCsv(*text, path);
    if (!rows.ok()) return Fail(rows.status());
    const auto [params, source] = AppParams(app, catalog);
    auto checks = sim::CheckPlacementProfile(*rows, cost, params * catalog.grad_bytes_per_param,
                                             catalog.dp_backward_overlap);
    if (!checks.ok()) return Fail(checks.status().WithPrefix(path));
    ++apps;
    std::vector<double> measured, predicted, errors;
    for (const sim::ShapeCheck& s : *checks) {
      measured.push_back(s.measured_ratio);
      predicted.push_back(s.predicted_ratio);
      errors.push_back(std::abs(s.predicted_ratio - s.measured_ratio) / s.measured_ratio);
      if (a.rows) {
        char line[256];
        std::snprintf(line, sizeof line, "%s %s vs %s bsz %d: measured %.3f predicted %.3f\n",
                      app.name, s.placement.c_str(), s.packed.c_str(), s.local_bsz,
                      s.measured_ratio, s.predicted_ratio);
        details += line;
      }
    }
    const double worst = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
    std::printf("| %s | %.1fM (%s) | %zu | %.1f%% | %.1f%% | %.3f | %.3f |\n", app.name,
                params / 1e6, source.c_str(), checks->size(),
                100 * sim::MedianRelativeError(*checks), 100 * worst, sim::Median(measured),
                sim::Median(predicted));
  }
  if (apps == 0) {
    return Fail(NotFoundError(a.profiles + ": no <app>/placements.csv for imagenet, bert, "
                                           "cifar10 or yolov3"));
  }
  if (a.rows) std::printf("\n%s", details.c_str());
  return 0;
}

struct CruxArgs {
  std::vector<std::string> clusters;
  int gpt_hosts = 4;
  int bert_hosts = 1;
};

int RunCrux(const CruxArgs& a) {
  // Crux §2.2: GPT's iteration 1.53 s alone, 1.70 s beside BERT.
  constexpr double kMeasuredRatio = 1.70 / 1.53;
  std::printf(
      "Crux scenario: GPT on %d hosts and BERT on %d host(s) under each of two ToRs; "
      "measured iteration 1.53 s -> 1.70 s (x%.3f)\n\n",
      a.gpt_hosts, a.bert_hosts, kMeasuredRatio);
  std::printf(
      "| fabric | GPT link factor alone | beside BERT | iteration ratio at network share "
      "0.25 / 0.50 / 1.00 | share the measured ratio needs |\n"
      "| --- | ---: | ---: | ---: | ---: |\n");
  for (const std::string& path : a.clusters) {
    StatusOr<topo::Cluster> cluster = LoadCluster(path);
    if (!cluster.ok()) return Fail(cluster.status());
    auto r = sim::CheckCruxScenario(*cluster, a.gpt_hosts, a.bert_hosts);
    if (!r.ok()) return Fail(r.status().WithPrefix(path));
    const double stretch = r->gpt_shared_factor / r->gpt_alone_factor - 1.0;
    const std::string need = stretch > 1e-12
                                 ? std::to_string((kMeasuredRatio - 1.0) / stretch).substr(0, 5)
                                 : std::string("none reaches it");
    std::printf("| %s | %.3f | %.3f | %.3f / %.3f / %.3f | %s |\n", cluster->name.c_str(),
                r->gpt_alone_factor, r->gpt_shared_factor, r->IterationRatio(0.25),
                r->IterationRatio(0.5), r->IterationRatio(1.0), need.c_str());
  }
  return 0;
}

}  // namespace

void RegisterCheckCommands(CLI::App& app, int& rc) {
  CLI::App* check =
      app.add_subcommand("check", "The simulator's step-time model beside published measurements");
  check->require_subcommand(1);

  auto pa = std::make_shared<PolluxArgs>();
  pa->profiles = DataFile("profiles/pollux");
  pa->cluster = DataFile("traces/t4-pollux-testbed.yaml");
  CLI::App* pollux = check->add_subcommand(
      "pollux",
      "Pollux throughput profiles: step(shape)/step(packed) per app, measured and "
      "predicted, median error per app");
  pollux->add_option("--profiles", pa->profiles,
                     "folder of <app>/placements.csv (default: the copies in data/)");
  pollux->add_option("--cluster", pa->cluster,
                     "cluster spec of the testbed (default: 16 x 4 T4, 50 Gb/s Ethernet)");
  pollux->add_flag("--rows", pa->rows, "also print every shape checked");
  pollux->callback([pa, &rc] { rc = RunPollux(*pa); });

  auto ca = std::make_shared<CruxArgs>();
  ca->clusters = {DataFile("clusters/crux-testbed-1to1.yaml"),
                  DataFile("clusters/crux-testbed-2to1.yaml")};
  CLI::App* crux = check->add_subcommand(
      "crux",
      "Crux (SIGCOMM'24 §2.2): a 64-GPU GPT job beside a 16-GPU BERT job on shared ToR "
      "uplinks: the link model's slowdown");
  crux->add_option("--cluster", ca->clusters, "cluster specs (default: the testbed at 1:1, 2:1)");
  crux->add_option("--gpt-hosts", ca->gpt_hosts, "GPT hosts under each ToR (default 4)")
      ->check(CLI::Range(1, 1000));
  crux->add_option("--bert-hosts", ca->bert_hosts, "BERT hosts under each ToR (default 1)")
      ->check(CLI::Range(1, 1000));
  crux->callback([ca, &rc] { rc = RunCrux(*ca); });
}

}  // namespace toposched::cli
