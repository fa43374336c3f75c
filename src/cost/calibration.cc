#include "cost/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/strings.h"
#include "cost/gpu_spec.h"
#include "cost/nccl_tests_reader.h"
#include "topo/io/import.h"
#include "topo/synthetic.h"

namespace toposched::cost {

namespace {

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty()) return p;
  std::filesystem::path path(p);
  if (path.is_absolute()) return p;
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

// The published (bytes, busbw) points of a case.
StatusOr<std::vector<std::pair<int64_t, double>>> PublishedSeries(const CalibrationCase& c) {
  ASSIGN_OR_RETURN(std::string text, topo::io::ReadFileToString(c.file));
  std::vector<std::pair<int64_t, double>> points;
  auto table = ParseNcclTestsOutput(text);
  if (table.ok()) {
    const bool in_place = c.series == "in-place";
    if (!c.series.empty() && !in_place && c.series != "out-of-place") {
      return InvalidArgumentError(c.file + ": series must be out-of-place or in-place");
    }
    for (const NcclTestsRow& r : table->rows) {
      points.push_back({r.bytes, in_place ? r.ip_busbw_gbps : r.oop_busbw_gbps});
    }
    return points;
  }
  auto summary = ParseBusBwSummary(text);
  if (!summary.ok()) {
    return InvalidArgumentError(c.file + ": neither an nccl-tests table nor a busbw summary");
  }
  for (const BusBwSeries& s : *summary) {
    if (c.series.empty() || s.name.find(c.series) != std::string::npos) return s.points;
  }
  return InvalidArgumentError(c.file + ": no summary column \"" + c.series + "\"");
}

StatusOr<topo::Cluster> BuildCluster(const CalibrationCase& c, const topo::HardwareTable& hw) {
  topo::NodeTopology t;
  if (!c.topology_file.empty()) {
    ASSIGN_OR_RETURN(t, topo::io::ImportTopologyFile(c.topology_file, topo::io::TopoFormat::kAuto));
  } else {
    ASSIGN_OR_RETURN(t, topo::MakeSyntheticTopology(c.topology));
  }
  for (topo::Nic& n : t.nics) {
    if (c.nic_gbps) n.rate_gbps = *c.nic_gbps;
    if (c.link_layer) n.link_layer = *c.link_layer;
  }
  topo::Cluster cl;
  cl.name = c.name;
  topo::HardwareProfile prof;
  prof.name = "calibration";
  prof.topology = std::move(t);
  cl.profiles.push_back(std::move(prof));
  cl.levels.push_back(topo::NetworkLevel{"leaf", 0, 1.0});
  topo::NetworkDomain leaf;
  leaf.name = "leaf0";
  leaf.level = 0;
  for (int i = 0; i < c.nodes; ++i) {
    topo::ClusterNode node;
    char name[32];
    std::snprintf(name, sizeof(name), "node%03d", i + 1);
    node.name = name;
    node.profile = 0;
    node.domain = 0;
    leaf.nodes.push_back(i);
    cl.nodes.push_back(node);
  }
  cl.domains.push_back(leaf);
  if (c.nvlink_domain_nodes > 0) {
    (void)hw;
    for (int first = 0; first < c.nodes; first += c.nvlink_domain_nodes) {
      topo::NvlinkDomain d;
      d.name = "nvl" + std::to_string(first / c.nvlink_domain_nodes);
      d.gpu_bandwidth_gbps = c.nvlink_domain_gbps;
      for (int i = first; i < std::min(c.nodes, first + c.nvlink_domain_nodes); ++i) {
        d.nodes.push_back(i);
        cl.nodes[i].nvlink_domain = static_cast<int>(cl.nvlink_domains.size());
      }
      cl.nvlink_domains.push_back(d);
    }
  }
  cl.Finalize();
  return cl;
}

}  // namespace

StatusOr<CalibrationManifest> LoadCalibrationManifest(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, topo::io::ReadFileToString(path));
  const std::string dir = std::filesystem::path(path).parent_path().string();
  CalibrationManifest m;
  std::string at = "cases";
  try {
    auto j = nlohmann::json::parse(text);
    int i = 0;
    for (const auto& e : j.at("cases")) {
      at = "cases[" + std::to_string(i++) + "]";
      CalibrationCase c;
      c.name = e.at("name").get<std::string>();
      c.file = Resolve(dir, e.at("file").get<std::string>());
      c.series = e.value("series", std::string());
      ASSIGN_OR_RETURN(c.collective,
                       ParseCollective(e.value("collective", std::string("allreduce"))));
      c.topology = e.value("topology", std::string());
      c.topology_file = Resolve(dir, e.value("topology_file", std::string()));
      if (c.topology.empty() == c.topology_file.empty()) {
        return InvalidArgumentError(path + ": " + at +
                                    ": give exactly one of topology, topology_file");
      }
      if (e.contains("nic_gbps")) c.nic_gbps = e.at("nic_gbps").get<double>();
      if (e.contains("link_layer")) {
        ASSIGN_OR_RETURN(topo::LinkLayer ll,
                         topo::ParseLinkLayer(e.at("link_layer").get<std::string>()));
        c.link_layer = ll;
      }
      c.nodes = e.value("nodes", 1);
      c.gpus_per_node = e.value("gpus_per_node", 0);
      if (e.contains("nvlink_domain")) {
        c.nvlink_domain_nodes = e.at("nvlink_domain").at("nodes").get<int>();
        c.nvlink_domain_gbps = e.at("nvlink_domain").value("gpu_bandwidth_gbps", 0.0);
      }
      if (e.contains("bytes")) c.bytes = e.at("bytes").get<int64_t>();
      if (e.contains("algorithm")) {
        ASSIGN_OR_RETURN(c.algorithm, ParseAlgorithm(e.at("algorithm").get<std::string>()));
      }
      if (e.contains("derives")) c.derives = e.at("derives").get<std::vector<std::string>>();
      c.network = e.value("network", std::string());
      c.note = e.value("note", std::string());
      if (c.nodes < 1 || c.nodes > 4096 || c.gpus_per_node < 0) {
        return InvalidArgumentError(path + ": " + at + ": nodes 1..4096, gpus_per_node >= 0");
      }
      m.cases.push_back(std::move(c));
    }
    at = "excluded";
    if (j.contains("excluded")) {
      for (const auto& e : j.at("excluded")) {
        m.excluded.push_back(
            ExcludedSample{e.at("file").get<std::string>(), e.at("reason").get<std::string>()});
      }
    }
  } catch (const std::exception& e) {
    return InvalidArgumentError(path + ": " + at + ": " + e.what());
  }
  return m;
}

StatusOr<CalibrationResult> RunCalibrationCase(const CalibrationCase& c, const CostTables& tables,
                                               const topo::HardwareTable& hw) {
  CalibrationResult r;
  r.c = c;
  auto series = PublishedSeries(c);
  if (!series.ok()) return series.status().WithPrefix(c.name);
  if (series->empty()) return InvalidArgumentError(c.name + ": no published points");
  std::pair<int64_t, double> point = series->front();
  for (const auto& pt : *series) {
    if (c.bytes ? pt.first == *c.bytes : pt.first > point.first) point = pt;
  }
  if (c.bytes && point.first != *c.bytes) {
    return InvalidArgumentError(c.name + ": no published point at " + std::to_string(*c.bytes));
  }
  r.bytes = point.first;
  r.published_busbw_gbps = point.second;
  auto cluster = BuildCluster(c, hw);
  if (!cluster.ok()) return cluster.status().WithPrefix(c.name);
  const int per_node =
      c.gpus_per_node > 0 ? c.gpus_per_node : static_cast<int>(cluster->topology(0).gpus.size());
  if (per_node > static_cast<int>(cluster->topology(0).gpus.size())) {
    return InvalidArgumentError(c.name + ": gpus_per_node exceeds the topology's GPUs");
  }
  std::vector<GpuRef> gpus;
  for (int n = 0; n < c.nodes; ++n) {
    for (int g = 0; g < per_node; ++g) gpus.push_back(GpuRef{n, g});
  }
  CostModel model(*cluster, {}, tables, hw);
  auto est = model.Evaluate(c.collective, gpus, static_cast<double>(r.bytes), c.algorithm);
  if (!est.ok()) return est.status().WithPrefix(c.name);
  r.predicted = *est;
  if (c.collective != Collective::kAllToAll && c.collective != Collective::kSendRecv) {
    auto ring = model.Evaluate(c.collective, gpus, static_cast<double>(r.bytes), Algorithm::kRing);
    if (ring.ok()) r.ring_busbw_gbps = ring->busbw_gbps;
  }
  if (r.published_busbw_gbps > 0 && r.predicted.busbw_gbps > 0) {
    r.error = r.predicted.busbw_gbps / r.published_busbw_gbps - 1;
    r.ratio = std::max(r.predicted.busbw_gbps / r.published_busbw_gbps,
                       r.published_busbw_gbps / r.predicted.busbw_gbps);
  } else {
    r.error = -1;
    r.ratio = std::numeric_limits<double>::infinity();
  }
  return r;
}

namespace {

CalibrationSummary Summarize(const std::vector<const CalibrationResult*>& results) {
  CalibrationSummary out;
  out.cases = static_cast<int>(results.size());
  std::vector<double> errs;
  for (const CalibrationResult* r : results) {
    errs.push_back(std::abs(r->error));
    out.worst_abs_error = std::max(out.worst_abs_error, std::abs(r->error));
    if (r->ratio > out.worst_ratio || out.worst_case.empty()) {
      out.worst_ratio = r->ratio;
      out.worst_case = r->c.name;
    }
  }
  if (!errs.empty()) {
    std::sort(errs.begin(), errs.end());
    const size_t k = errs.size();
    out.median_abs_error = k % 2 ? errs[k / 2] : (errs[k / 2 - 1] + errs[k / 2]) / 2;
  }
  return out;
}

}  // namespace

StatusOr<CalibrationReport> RunCalibration(const std::string& manifest_path,
                                           const CostTables& tables,
                                           const topo::HardwareTable& hw) {
  ASSIGN_OR_RETURN(CalibrationManifest m, LoadCalibrationManifest(manifest_path));
  CalibrationReport rep;
  rep.excluded = m.excluded;
  for (const CalibrationCase& c : m.cases) {
    ASSIGN_OR_RETURN(CalibrationResult r, RunCalibrationCase(c, tables, hw));
    rep.results.push_back(std::move(r));
  }
  std::vector<const CalibrationResult*> all, in, out;
  for (const CalibrationResult& r : rep.results) {
    all.push_back(&r);
    (r.c.derives.empty() ? out : in).push_back(&r);
  }
  rep.all = Summarize(all);
  rep.in_sample = Summarize(in);
  rep.held_out = Summarize(out);
  rep.median_abs_error = rep.all.median_abs_error;
  rep.worst_ratio = rep.all.worst_ratio;
  rep.worst_case = rep.all.worst_case;
  return rep;
}

namespace {

double SignedError(const CalibrationReport& rep, const std::string& name) {
  for (const CalibrationResult& r : rep.results) {
    if (r.c.name == name) return r.error;
  }
  return 0;
}

}  // namespace

std::string FormatCalibrationMarkdown(const CalibrationReport& rep) {
  std::string out;
  char buf[512];
  out +=
      "| case | GPUs | network | size | published busbw (GB/s) | predicted busbw (GB/s) | "
      "algorithm | error | ring only (GB/s) | set |\n";
  out += "| --- | ---: | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |\n";
  for (const CalibrationResult& r : rep.results) {
    std::string gpus = std::to_string(r.predicted.ranks);
    if (r.predicted.nodes > 1) {
      gpus = std::to_string(r.predicted.ranks / r.predicted.nodes) + "×" +
             std::to_string(r.predicted.nodes);
    }
    std::string ring = r.ring_busbw_gbps > 0 ? [&] {
      char b[32];
      std::snprintf(b, sizeof(b), "%.1f", r.ring_busbw_gbps);
      return std::string(b);
    }() : std::string("-");
    std::string algorithm = AlgorithmName(r.predicted.algorithm);
    if (r.c.algorithm != Algorithm::kAuto) algorithm += " (pinned)";
    std::snprintf(buf, sizeof(buf),
                  "| %s | %s | %s | %s | %.1f | %.1f | %s | %+.1f%% | %s | %s |\n",
                  r.c.name.c_str(), gpus.c_str(), r.c.network.empty() ? "-" : r.c.network.c_str(),
                  FormatBytes(static_cast<double>(r.bytes)).c_str(), r.published_busbw_gbps,
                  r.predicted.busbw_gbps, algorithm.c_str(), r.error * 100, ring.c_str(),
                  r.c.derives.empty() ? "held out" : "in-sample");
    out += buf;
  }
  auto line = [&](const char* label, const CalibrationSummary& sum) {
    std::snprintf(buf, sizeof(buf), "%s: %d cases, median |error| %.1f%%, worst %+.1f%% (%s).\n",
                  label, sum.cases, sum.median_abs_error * 100,
                  sum.worst_case.empty() ? 0.0 : SignedError(rep, sum.worst_case) * 100,
                  sum.worst_case.c_str());
    out += buf;
  };
  out += "\n";
  line("All", rep.all);
  out += "\n";
  line("In-sample (a constant was derived from the case)", rep.in_sample);
  out += "\n";
  line("Held out", rep.held_out);
  return out;
}

}  // namespace toposched::cost
