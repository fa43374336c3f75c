// Placement quality against the exact ILP oracle (tests/sched/ilp_oracle.h) and the oracle's
// solve time. `ilp_quality_bench --table [N]` runs N random cases (default 2,000) and prints
// the quality table of BENCHMARKS.md (`--shapes a,b` over other shapes of
// tests/sched/testdata/ilp; `--worst N` prints N of the cases over 5%, 12 unless told; `--only I`
// case I alone, with both placements' ranks); without --table it runs the Google Benchmark
// timings.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "placer/gang.h"
#include "sched/ilp_cases.h"
#include "sched/ilp_oracle.h"

namespace toposched::sched::ilp {
namespace {

Shape& GetShape(const std::string& name) {
  auto s = LoadShapeTools(name);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
    std::exit(1);
  }
  return **s;
}

struct Case {
  std::string shape;
  std::unique_ptr<ClusterState> state;
  job::JobSpec job;
};

Case MakeCase(const std::string& shape, std::mt19937_64& rng) {
  Shape& s = GetShape(shape);
  Case c;
  c.shape = shape;
  c.state = std::make_unique<ClusterState>(std::move(ClusterState::Create(*s.cluster)).value());
  if (Status st = RandomOccupancy(*c.state, rng); !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    std::exit(1);
  }
  c.job = RandomJob(rng);
  return c;
}

std::string PartsOf(const topo::Cluster& c, const Placement& p) {
  std::string s;
  for (const NodeGpus& g : p.parts) {
    s += (s.empty() ? "" : " ") + c.nodes[g.node].name + ":" + g.gpus.ToString();
  }
  return s;
}

// Rank -> node:GPU/NIC, for looking at one case (--only).
std::string RanksOf(const topo::Cluster& c, const Placement& p) {
  std::string s;
  for (const RankSlot& r : p.ranks) {
    s += (r.rank % 8 == 0 ? "\n     " : "") + std::string(" ") + std::to_string(r.rank) + "=" +
         c.nodes[r.node].name + ":" + std::to_string(r.gpu) + "/" + std::to_string(r.nic);
  }
  return s;
}

struct Row {
  int cases = 0, fit = 0, nofit = 0, unsupported = 0, unproven = 0, within1 = 0, within5 = 0;
  // Cases whose optimum the oracle proved (an unproven case is measured against the best
  // placement the oracle found in its time, which can flatter the placer).
  int proven = 0, proven_within5 = 0;
  double proven_worst = 0;
  int iterations_max = 0;
  double iterations_sum = 0;
  std::vector<double> ratios;
};

int PrintTable(int n_cases, const std::vector<std::string>& shapes, size_t worst, int only) {
  std::mt19937_64 rng(2026);
  std::map<std::string, Row> rows;  // size class → row; "all" too
  struct Bad {
    double ratio;
    std::string text;
  };
  std::vector<Bad> bad;
  int errors = 0;
  for (int i = 0; i < n_cases; ++i) {
    const std::string& shape = shapes[i % shapes.size()];
    Shape& s = GetShape(shape);
    Case c = MakeCase(shape, rng);
    if (only >= 0 && i != only) continue;
    const int gpus = c.job.layout.WorldSize();
    const auto t0 = std::chrono::steady_clock::now();
    OracleOptions opt;
    opt.max_search_nodes = 50000000;
    opt.search_time_limit_s = 2;
    OracleResult r = s.oracle->SolveByBranchAndBound(*c.state, c.job, opt);
    const double solve_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (std::getenv("ILP_VERBOSE")) {
      std::fprintf(stderr, "case %d %s %s: %s, %d scored, %.3f s\n", i, shape.c_str(),
                   DescribeJob(c.job).c_str(), OracleStatusName(r.status), r.iterations, solve_s);
    }
    Verdict v = s.placer->Place(*c.state, c.job);
    if (only >= 0 && v.fit() && r.placement) {
      std::printf("placer ranks:%s\n  %s\noracle ranks:%s\n",
                  RanksOf(*s.cluster, *v.placement).c_str(), v.placement->explanation.c_str(),
                  RanksOf(*s.cluster, *r.placement).c_str());
    }
    if (r.status == OracleStatus::kError) {
      ++errors;
      std::printf("oracle error on %s %s: %s\n", shape.c_str(), DescribeJob(c.job).c_str(),
                  r.reason.c_str());
    }
    for (Row* row : {&rows[SizeClass(gpus)], &rows["all"], &rows[shape]}) {
      ++row->cases;
      if (r.status == OracleStatus::kError) continue;
      if (r.status == OracleStatus::kUnsupported) {
        ++row->unsupported;
        continue;
      }
      if (r.status == OracleStatus::kNoFit || !r.placement) {
        ++row->nofit;
        continue;
      }
      if (r.status == OracleStatus::kUnproven) ++row->unproven;
      if (!v.fit()) {
        if (row == &rows["all"]) ++errors;
        std::printf("placer found nothing where the oracle fits: %s %s\n", shape.c_str(),
                    DescribeJob(c.job).c_str());
        continue;
      }
      ++row->fit;
      row->iterations_sum += r.iterations;
      row->iterations_max = std::max(row->iterations_max, r.iterations);
      const double opt = r.placement->predicted_ms;
      const double got = v.placement->predicted_ms;
      const double ratio = opt > 0 ? got / opt : 1.0;
      row->ratios.push_back(ratio);
      if (ratio <= 1.01 + 1e-12) ++row->within1;
      if (ratio <= 1.05 + 1e-12) ++row->within5;
      if (r.status == OracleStatus::kOptimal) {
        ++row->proven;
        if (ratio <= 1.05 + 1e-12) ++row->proven_within5;
        row->proven_worst = std::max(row->proven_worst, ratio);
      }
      if (row == &rows["all"] && ratio > 1.05 + 1e-12) {
        bad.push_back(
            {ratio,
             "case " + std::to_string(i) + " " + shape +
                 (r.status == OracleStatus::kUnproven ? " (oracle unproven)" : "") + " | " +
                 DescribeJob(c.job) + " | free " + DescribeFree(*c.state) + "\n    placer " +
                 std::to_string(got) + " ms (dp " + std::to_string(v.placement->dp_ms) + " tp " +
                 std::to_string(v.placement->tp_ms) + " pp " + std::to_string(v.placement->pp_ms) +
                 ") on " + PartsOf(*s.cluster, *v.placement) + "\n    oracle " +
                 std::to_string(opt) + " ms (dp " + std::to_string(r.placement->dp_ms) + " tp " +
                 std::to_string(r.placement->tp_ms) + " pp " + std::to_string(r.placement->pp_ms) +
                 ") on " + PartsOf(*s.cluster, *r.placement)});
      }
    }
  }
  std::printf(
      "| job GPUs | cases | fit | no fit | TP spans nodes (skipped) | oracle unproven | within 1%% "
      "| within 5%% | median ratio | worst ratio | oracle placements scored (mean / max) |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  std::vector<std::string> keys = {"1-8", "9-16", "17-32", "33-64", "all"};
  for (const std::string& shape : shapes) keys.push_back(shape);
  for (const std::string& key : keys) {
    Row& row = rows[key];
    std::sort(row.ratios.begin(), row.ratios.end());
    const double median = row.ratios.empty() ? 0 : row.ratios[row.ratios.size() / 2];
    const double worst = row.ratios.empty() ? 0 : row.ratios.back();
    auto pct = [&](int v) { return row.fit ? 100.0 * v / row.fit : 0.0; };
    std::printf(
        "| %s | %d | %d | %d | %d | %d | %d (%.1f%%) | %d (%.1f%%) | %.4f | %.4f | %.1f / %d |\n",
        key.c_str(), row.cases, row.fit, row.nofit, row.unsupported, row.unproven, row.within1,
        pct(row.within1), row.within5, pct(row.within5), median, worst,
        row.fit ? row.iterations_sum / row.fit : 0.0, row.iterations_max);
  }
  const Row& all = rows["all"];
  std::printf("\nproven optima only: %d of %d (%.1f%%) within 5%%, worst ratio %.4f\n",
              all.proven_within5, all.proven,
              all.proven ? 100.0 * all.proven_within5 / all.proven : 0.0, all.proven_worst);
  // A placement outside the oracle's family (GPUs other than the selector's, ranks not filled
  // node by node) can come out below its figure: how many, and the lowest ratio.
  int below1 = 0, below5 = 0;
  for (double r : all.ratios) {
    below1 += r < 0.99 - 1e-12 ? 1 : 0;
    below5 += r < 0.95 - 1e-12 ? 1 : 0;
  }
  std::printf(
      "placer below the oracle's figure (outside its family): %d by more than 1%%, %d by "
      "more than 5%%; lowest ratio %.4f\n",
      below1, below5, all.ratios.empty() ? 0.0 : all.ratios.front());
  std::sort(bad.begin(), bad.end(), [](const Bad& a, const Bad& b) { return a.ratio > b.ratio; });
  std::printf("\n%zu cases worse than 5%%; errors %d\n", bad.size(), errors);
  for (size_t i = 0; i < bad.size() && i < worst; ++i) {
    std::printf("%.4f  %s\n", bad[i].ratio, bad[i].text.c_str());
  }
  return errors == 0 ? 0 : 1;
}

// Solve time over a fixed set of 60 cases per shape (seed 99), cycled.
std::vector<Case>& BenchCases(const std::string& shape) {
  static auto* cache = new std::map<std::string, std::vector<Case>>();
  auto it = cache->find(shape);
  if (it != cache->end()) return it->second;
  std::mt19937_64 rng(99);
  std::vector<Case> cases;
  while (cases.size() < 60) {
    Case c = MakeCase(shape, rng);
    OracleOptions opt;
    opt.max_search_nodes = 20000;
    OracleResult r = GetShape(shape).oracle->SolveByBranchAndBound(*c.state, c.job, opt);
    if (r.status == OracleStatus::kOptimal) cases.push_back(std::move(c));
  }
  return cache->emplace(shape, std::move(cases)).first->second;
}

// One solver of the oracle over cases it proves within 20,000 search nodes: branch and bound
// (the harness's solver) or the GLPK program (branch and check).
void SolveEach(benchmark::State& st, const std::string& shape, bool glpk) {
  Shape& s = GetShape(shape);
  std::vector<Case>& cases = BenchCases(shape);
  size_t i = 0;
  int64_t scored = 0;
  for (auto _ : st) {
    const Case& c = cases[i++ % cases.size()];
    OracleResult r =
        glpk ? s.oracle->Solve(*c.state, c.job) : s.oracle->SolveByBranchAndBound(*c.state, c.job);
    scored += r.iterations;
    benchmark::DoNotOptimize(r);
  }
  st.counters["scored_per_solve"] =
      benchmark::Counter(static_cast<double>(scored) / static_cast<double>(st.iterations()));
}

void BM_OracleSolve(benchmark::State& st, std::string shape) { SolveEach(st, shape, false); }
void BM_OracleSolveGlpk(benchmark::State& st, std::string shape) { SolveEach(st, shape, true); }

void BM_PlacerPlace(benchmark::State& st, std::string shape) {
  Shape& s = GetShape(shape);
  std::vector<Case>& cases = BenchCases(shape);
  size_t i = 0;
  for (auto _ : st) {
    const Case& c = cases[i++ % cases.size()];
    benchmark::DoNotOptimize(s.placer->Place(*c.state, c.job));
  }
}

void RegisterAll() {
  for (const std::string& shape : BruteForceShapes()) {
    benchmark::RegisterBenchmark(("BM_OracleSolve/" + shape).c_str(), BM_OracleSolve, shape)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_OracleSolveGlpk/" + shape).c_str(), BM_OracleSolveGlpk, shape)
        ->Unit(benchmark::kMillisecond);
  }
  for (const std::string& shape : QualityShapes()) {
    benchmark::RegisterBenchmark(("BM_OracleSolve/" + shape).c_str(), BM_OracleSolve, shape)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_PlacerPlace/" + shape).c_str(), BM_PlacerPlace, shape)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace toposched::sched::ilp

int main(int argc, char** argv) {
  // --shapes a,b: the table over these shapes (tests/sched/testdata/ilp), not the quality ones.
  std::vector<std::string> shapes = toposched::sched::ilp::QualityShapes();
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--shapes") != 0) continue;
    shapes.clear();
    std::string list = argv[i + 1];
    for (size_t at = 0; at <= list.size();) {
      const size_t comma = std::min(list.find(',', at), list.size());
      if (comma > at) shapes.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  // --worst N: how many of the cases over 5% to print (the worst first; 12 unless told).
  // --only I: case I alone (the others are drawn, not solved), to look at one case.
  size_t worst = 12;
  int only = -1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--worst") == 0) worst = static_cast<size_t>(std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--only") == 0) only = std::atoi(argv[i + 1]);
  }
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--table") == 0) {
      int n = i + 1 < argc ? std::atoi(argv[i + 1]) : 2000;
      if (shapes.empty()) return 2;
      return toposched::sched::ilp::PrintTable(n > 0 ? n : 2000, shapes, worst, only);
    }
  }
  toposched::sched::ilp::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
