// Calibration of the cost model against published nccl-tests results: a manifest
// (data/calibration/cases.json) maps each published table to a topology, node count and
// network; the model predicts the bus bandwidth at the published size and the report compares.
// Reads the manifest and the sample files it names; no other I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "cost/cost_model.h"

namespace toposched::cost {

struct CalibrationCase {
  std::string name;
  std::string file;    // nccl-tests output or markdown summary (resolved path)
  std::string series;  // "out-of-place" (default), "in-place", or a summary column
  Collective collective = Collective::kAllReduce;
  std::string topology;                       // synthetic description (topo::MakeSyntheticTopology)
  std::string topology_file;                  // or a topology file (resolved path)
  std::optional<double> nic_gbps;             // override every NIC's rate (Gb/s)
  std::optional<topo::LinkLayer> link_layer;  // override every NIC's link layer
  int nodes = 1;
  int gpus_per_node = 0;          // 0 = every GPU of the topology
  int nvlink_domain_nodes = 0;    // > 0: consecutive nodes form NVLink domains of this size
  double nvlink_domain_gbps = 0;  // per-GPU NVLink rate in such a domain (0 = the node's)
  std::optional<int64_t> bytes;   // compare at this size (default: the largest published)
  // The algorithm the published run's library version chose, when it is not what the model's
  // auto would pick (kAuto: the model's choice). Each use says why in the case's note.
  Algorithm algorithm = Algorithm::kAuto;
  // Constants of data/hardware/cost.json derived from this case ("efficiency.net_ib"); empty:
  // the case is held out (no constant was set from it).
  std::vector<std::string> derives;
  std::string network;  // short label for the table ("8x HDR IB")
  std::string note;
};

struct ExcludedSample {
  std::string file;
  std::string reason;
};

struct CalibrationManifest {
  std::vector<CalibrationCase> cases;
  std::vector<ExcludedSample> excluded;
};

struct CalibrationResult {
  CalibrationCase c;
  int64_t bytes = 0;
  double published_busbw_gbps = 0;
  Estimate predicted;
  double ring_busbw_gbps = 0;  // the ring algorithm alone, for reference
  double error = 0;            // predicted / published - 1
  double ratio = 1;            // max(predicted/published, published/predicted)
};

// Median and worst of a set of cases.
struct CalibrationSummary {
  int cases = 0;
  double median_abs_error = 0;  // median of |error|
  double worst_abs_error = 0;   // largest |error|
  double worst_ratio = 1;       // max(predicted/published, published/predicted)
  std::string worst_case;
};

struct CalibrationReport {
  std::vector<CalibrationResult> results;
  std::vector<ExcludedSample> excluded;
  double median_abs_error = 0;  // median of |error| over every case
  double worst_ratio = 1;
  std::string worst_case;
  CalibrationSummary all, in_sample, held_out;  // held out: cases with no `derives`
};

// Paths in the manifest are relative to its directory. InvalidArgument/NotFound with the path.
StatusOr<CalibrationManifest> LoadCalibrationManifest(const std::string& path);
StatusOr<CalibrationResult> RunCalibrationCase(
    const CalibrationCase& c, const CostTables& tables = CostTables::Default(),
    const topo::HardwareTable& hw = topo::HardwareTable::Default());
StatusOr<CalibrationReport> RunCalibration(
    const std::string& manifest_path, const CostTables& tables = CostTables::Default(),
    const topo::HardwareTable& hw = topo::HardwareTable::Default());
// The table docs/calibration.md shows (markdown, deterministic).
std::string FormatCalibrationMarkdown(const CalibrationReport& report);

}  // namespace toposched::cost
