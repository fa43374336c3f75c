// Reader for published nccl-tests results: the raw stdout tables of all_reduce_perf and friends
// (any of the column layouts nccl-tests has had, with MPI/srun line prefixes, interleaved NCCL
// log lines, collapsed whitespace, stripped '#') and markdown summary tables of bus bandwidth by
// message size. Used by the calibration of the cost model. Pure text processing, no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace toposched::cost {

// One size row of an nccl-tests table. Times in µs, bandwidths in GB/s (1e9 B/s).
struct NcclTestsRow {
  int64_t bytes = 0;
  int64_t count = 0;
  std::string type;   // "float"
  std::string redop;  // "sum", "none"; empty in layouts without the column
  int root = -1;
  double oop_time_us = 0, oop_algbw_gbps = 0, oop_busbw_gbps = 0;
  double ip_time_us = 0, ip_algbw_gbps = 0, ip_busbw_gbps = 0;
  std::string oop_wrong, ip_wrong;  // "0", "N/A", "2e-07" (old 'error' column)
  int line = 0;                     // 1-based line in the text
};

struct NcclTestsTable {
  std::string collective;  // "all_reduce", "all_gather", ... when the text names it, else ""
  int ranks = 0;           // highest "# Rank N" + 1; 0 when no rank line is shown
  std::vector<NcclTestsRow> rows;  // in text order
  std::optional<double> avg_busbw_gbps;
};

// Accepted row layouts (tokens after prefixes are removed):
//   size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong   (13, current)
//   size count type redop       time algbw busbw error   time algbw busbw error    (12, old)
//   size count type             time algbw busbw error   time algbw busbw error    (11, oldest)
// Prefixes removed: "[1,0]<stdout>:", "0: " (srun -l / torchrun), leading '#'. Lines with
// "NCCL INFO"/"NCCL WARN" and rows cut short are skipped. InvalidArgument when no row is found.
StatusOr<NcclTestsTable> ParseNcclTestsOutput(std::string_view text);

// One bandwidth column of a markdown summary table: (bytes, GB/s) points in table order.
struct BusBwSeries {
  std::string name;  // the column header ("ND H100 V5 (GB/s)", "1 node")
  std::vector<std::pair<int64_t, double>> points;
};

// Markdown tables "| size | value | ... |". Size labels as published ("1K", "132K", "1G",
// "32KiB", "16GiB"); values with optional "GBps"/"GB/s" suffix. Columns whose cells are not
// bandwidths (e.g. "2.0x") are dropped. InvalidArgument when no series is found.
StatusOr<std::vector<BusBwSeries>> ParseBusBwSummary(std::string_view text);

// A loose size label from a summary table -> bytes. nccl-tests sweeps powers of two and the
// summaries round them ("65K" = 65536, "132K" = 131072, "1G" = 2^30), so the value (K/M/G/T as
// 1000^k, KiB/MiB/GiB/TiB as 1024^k) is rounded to the nearest power of two.
StatusOr<int64_t> ParseSummarySize(std::string_view label);

// Ranks implied by busbw/algbw for a collective whose bus factor is 2(n-1)/n (allreduce) or
// (n-1)/n (allgather, reducescatter, alltoall): the nearest integer n ≥ 2; 0 if not determined.
int InferRanksFromBusFactor(double busbw, double algbw, bool allreduce);

}  // namespace toposched::cost
