#include "sim/report.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/time_units.h"

namespace toposched::sim {

namespace {

double NearestRank(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  k = std::clamp<size_t>(k, 1, sorted.size());
  return sorted[k - 1];
}

// Fixed-point text with `digits` decimals ("12.500"); the same bytes on every platform.
std::string Fixed(double v, int digits) {
  if (!std::isfinite(v)) v = 0;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  std::string s = buf;
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    if (s.find_first_not_of("-0.") == std::string::npos) s = s.substr(1);
  }
  return s;
}

std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        o += "\\\"";
        break;
      case '\\':
        o += "\\\\";
        break;
      case '\n':
        o += "\\n";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          o += buf;
        } else {
          o += static_cast<char>(c);
        }
    }
  }
  return o + "\"";
}

std::string XmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') {
      o += "&lt;";
    } else if (c == '>') {
      o += "&gt;";
    } else if (c == '&') {
      o += "&amp;";
    } else if (c == '"') {
      o += "&quot;";
    } else {
      o += c;
    }
  }
  return o;
}

// Distinguishable on white, colour-blind safe (Okabe–Ito).
const char* const kColors[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                               "#E69F00", "#56B4E9", "#000000", "#F0E442"};
const char* Color(size_t i) { return kColors[i % std::size(kColors)]; }

// A plot frame: data coordinates → SVG pixels.
struct Frame {
  double w = 760, h = 440;
  double left = 70, right = 170, top = 40, bottom = 60;
  double x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  bool log_x = false;
  double X(double x) const {
    double a = log_x ? std::log10(std::max(x, x0)) : x;
    double lo = log_x ? std::log10(x0) : x0, hi = log_x ? std::log10(x1) : x1;
    if (hi <= lo) hi = lo + 1;
    return left + (a - lo) / (hi - lo) * (w - left - right);
  }
  double Y(double y) const {
    double hi = y1 <= y0 ? y0 + 1 : y1;
    return h - bottom - (y - y0) / (hi - y0) * (h - top - bottom);
  }
};

std::string SvgOpen(const Frame& f, const std::string& title) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f.w << "\" height=\"" << f.h
    << "\" viewBox=\"0 0 " << f.w << " " << f.h
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << f.w / 2 - f.right / 2 + f.left / 2 << "\" y=\"22\" text-anchor=\"middle\" "
    << "font-size=\"15\">" << XmlEscape(title) << "</text>\n";
  return o.str();
}

std::string Axes(const Frame& f, const std::vector<std::pair<double, std::string>>& xticks,
                 const std::vector<std::pair<double, std::string>>& yticks,
                 const std::string& xlabel, const std::string& ylabel) {
  std::ostringstream o;
  const double bx = f.h - f.bottom, lx = f.left, rx = f.w - f.right;
  o << "<g stroke=\"#ccc\" stroke-width=\"1\">\n";
  for (const auto& [y, _] : yticks) {
    o << "<line x1=\"" << Fixed(lx, 1) << "\" y1=\"" << Fixed(f.Y(y), 1) << "\" x2=\""
      << Fixed(rx, 1) << "\" y2=\"" << Fixed(f.Y(y), 1) << "\"/>\n";
  }
  o << "</g>\n<g stroke=\"black\" stroke-width=\"1\">\n"
    << "<line x1=\"" << lx << "\" y1=\"" << bx << "\" x2=\"" << rx << "\" y2=\"" << bx << "\"/>\n"
    << "<line x1=\"" << lx << "\" y1=\"" << f.top << "\" x2=\"" << lx << "\" y2=\"" << bx
    << "\"/>\n</g>\n";
  for (const auto& [x, label] : xticks) {
    o << "<text x=\"" << Fixed(f.X(x), 1) << "\" y=\"" << bx + 16 << "\" text-anchor=\"middle\">"
      << XmlEscape(label) << "</text>\n";
  }
  for (const auto& [y, label] : yticks) {
    o << "<text x=\"" << lx - 6 << "\" y=\"" << Fixed(f.Y(y) + 4, 1) << "\" text-anchor=\"end\">"
      << XmlEscape(label) << "</text>\n";
  }
  o << "<text x=\"" << (lx + rx) / 2 << "\" y=\"" << f.h - 18 << "\" text-anchor=\"middle\">"
    << XmlEscape(xlabel) << "</text>\n"
    << "<text transform=\"translate(18," << (f.top + bx) / 2
    << ") rotate(-90)\" text-anchor=\"middle\">" << XmlEscape(ylabel) << "</text>\n";
  return o.str();
}

std::string Legend(const Frame& f, const std::vector<SimResult>& results) {
  std::ostringstream o;
  for (size_t i = 0; i < results.size(); ++i) {
    const double y = f.top + 10 + 20 * static_cast<double>(i);
    const double x = f.w - f.right + 14;
    o << "<rect x=\"" << x << "\" y=\"" << y - 8 << "\" width=\"14\" height=\"10\" fill=\""
      << Color(i) << "\"/>\n<text x=\"" << x + 20 << "\" y=\"" << y + 1 << "\">"
      << XmlEscape(results[i].policy) << "</text>\n";
  }
  return o.str();
}

std::string Polyline(const std::vector<std::pair<double, double>>& pts, const char* color) {
  std::ostringstream o;
  o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.6\" points=\"";
  for (size_t i = 0; i < pts.size(); ++i) {
    o << (i ? " " : "") << Fixed(pts[i].first, 1) << "," << Fixed(pts[i].second, 1);
  }
  o << "\"/>\n";
  return o.str();
}

std::vector<double> SortedJctS(const SimResult& r) {
  std::vector<double> v;
  for (const JobOutcome& j : r.jobs) {
    if (j.end_us >= 0) v.push_back(static_cast<double>(j.end_us - j.submit_us) / kUsPerS);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// The empirical CDF of `sorted` (ascending) at its `quantiles` (≥ 2) nearest-rank quantiles
// 0, 1/(quantiles − 1), …, 1: per distinct value x reached, [x, share of the values ≤ x]. So at
// most `quantiles` points, both coordinates strictly increasing, the last [max, 1]; none for no
// values. A share counts every value tied with x, so that a point lies on the CDF's step.
std::vector<std::pair<double, double>> CdfPoints(const std::vector<double>& sorted, int quantiles) {
  std::vector<std::pair<double, double>> pts;
  const size_t n = sorted.size(), q = static_cast<size_t>(std::max(2, quantiles)) - 1;
  for (size_t i = 0; i <= q && n > 0; ++i) {
    // Rank ⌈i · n / q⌉ in integers (no rounding at the quantiles), at least 1.
    const size_t k = std::clamp<size_t>((i * n + q - 1) / q, 1, n);
    const double x = sorted[k - 1];
    if (!pts.empty() && pts.back().first == x) continue;
    const auto le = std::upper_bound(sorted.begin(), sorted.end(), x) - sorted.begin();
    pts.emplace_back(x, static_cast<double>(le) / static_cast<double>(n));
  }
  return pts;
}

// The series utilization.svg draws: [midpoint of the bin, busy fraction] per bin of
// r.utilization_series, in seconds since the first submission, bins whose midpoint lies past the
// makespan left out.
std::vector<std::pair<double, double>> UtilizationPoints(const SimResult& r) {
  std::vector<std::pair<double, double>> pts;
  for (size_t b = 0; b < r.utilization_series.size(); ++b) {
    const double mid = (static_cast<double>(b) + 0.5) * static_cast<double>(r.bin_us) / kUsPerS;
    if (mid > static_cast<double>(r.makespan_us) / kUsPerS) break;
    pts.emplace_back(mid, r.utilization_series[b]);
  }
  return pts;
}

// At most `max_points` (≥ 3) of `pts`, in order. More are bucketed: the first and the last point
// stay as they are; the ones between are split, in order, into max_points − 2 contiguous buckets
// of near-equal count (bucket j holds interior points [j · m / B, (j + 1) · m / B) of m, B
// buckets), each replaced by the mean of its times and the mean of its values — over bins of
// equal width, the busy fraction averaged over the bucket's time.
std::vector<std::pair<double, double>> Downsample(const std::vector<std::pair<double, double>>& pts,
                                                  size_t max_points) {
  if (pts.size() <= max_points) return pts;
  const size_t m = pts.size() - 2, buckets = max_points - 2;
  std::vector<std::pair<double, double>> out = {pts.front()};
  for (size_t j = 0; j < buckets; ++j) {
    const size_t lo = 1 + j * m / buckets, hi = 1 + (j + 1) * m / buckets;
    double t = 0, v = 0;
    for (size_t k = lo; k < hi; ++k) {
      t += pts[k].first;
      v += pts[k].second;
    }
    const double n = static_cast<double>(hi - lo);
    out.emplace_back(t / n, v / n);
  }
  out.push_back(pts.back());
  return out;
}

std::string DurationLabel(double s) {
  if (s < 60) return Fixed(s, 0) + " s";
  if (s < 3600) return Fixed(s / 60, 0) + " min";
  if (s < 86400) return Fixed(s / 3600, 0) + " h";
  return Fixed(s / 86400, 0) + " d";
}

}  // namespace

const std::vector<SeededFigure>& SeededFigures() {
  static const std::vector<SeededFigure> kFigures = {
      {"mean_jct", &PolicySummary::mean_jct_s, true},
      {"p50_jct", &PolicySummary::p50_jct_s, true},
      {"p99_jct", &PolicySummary::p99_jct_s, true},
      {"mean_queue", &PolicySummary::mean_queue_s, true},
      {"makespan", &PolicySummary::makespan_s, true},
      {"gpu_time_weighted_jct", &PolicySummary::gpu_time_weighted_jct_s, true},
      {"multi_gpu_mean_jct", &PolicySummary::multi_gpu_mean_jct_s, true},
      {"multi_node_mean_jct", &PolicySummary::multi_node_mean_jct_s, true},
      {"gpu_utilization", &PolicySummary::gpu_utilization, false},
      {"useful_utilization", &PolicySummary::useful_utilization, false},
      {"window_utilization", &PolicySummary::window_utilization, false},
      {"mean_comm_slowdown", &PolicySummary::mean_comm_slowdown, false},
      {"contention_slowdown", &PolicySummary::contention_slowdown, false},
      {"mean_fragmentation", &PolicySummary::mean_fragmentation, false},
  };
  return kFigures;
}

namespace {

int BucketOf(int gpus) {
  return gpus <= 1 ? 0 : gpus <= 8 ? 1 : gpus <= 64 ? 2 : gpus <= 256 ? 3 : 4;
}

// The job-level figures beyond the classic ones: weighted JCT, multi-GPU and multi-node means,
// contention, and the per-size buckets.
void SummarizeJobs(const SimResult& r, PolicySummary& s) {
  static const char* const kNames[] = {"1", "2-8", "9-64", "65-256", "257+"};
  std::vector<PolicySummary::Bucket> b(5);
  std::vector<double> slow(5, 0.0);
  for (int k = 0; k < 5; ++k) b[k].name = kNames[k];
  double w_sum = 0, wjct = 0, mg_sum = 0, mn_sum = 0, c_area = 0, c_time = 0;
  int mg = 0, mn = 0;
  for (const JobOutcome& j : r.jobs) {
    if (j.end_us < 0) continue;
    const double jct = static_cast<double>(j.end_us - j.submit_us) / kUsPerS;
    const double w = j.gpus * (j.gpu_milli / 1000.0) * static_cast<double>(j.ideal_us);
    w_sum += w;
    wjct += w * jct;
    if (j.gpus >= 2) {
      mg_sum += jct;
      ++mg;
    }
    if (j.nodes > 1) {
      mn_sum += jct;
      ++mn;
      const double run = static_cast<double>(j.ideal_us) * j.comm_slowdown;
      c_area += run * j.contention_slowdown;
      c_time += run;
    }
    PolicySummary::Bucket& k = b[BucketOf(j.gpus)];
    ++k.jobs;
    k.mean_jct_s += jct;
    k.mean_queue_s += static_cast<double>(j.first_start_us - j.submit_us) / kUsPerS;
    slow[BucketOf(j.gpus)] += j.comm_slowdown;
  }
  for (int k = 0; k < 5; ++k) {
    if (b[k].jobs == 0) continue;
    b[k].mean_jct_s /= b[k].jobs;
    b[k].mean_queue_s /= b[k].jobs;
    b[k].mean_comm_slowdown = slow[k] / b[k].jobs;
  }
  s.by_size = std::move(b);
  s.gpu_time_weighted_jct_s = w_sum > 0 ? wjct / w_sum : 0;
  s.multi_gpu_mean_jct_s = mg > 0 ? mg_sum / mg : 0;
  s.multi_node_mean_jct_s = mn > 0 ? mn_sum / mn : 0;
  s.contention_slowdown = c_time > 0 ? c_area / c_time : 1.0;
}

// Two-sided 95% Student t quantile for n − 1 degrees of freedom (n ≥ 2); the normal 1.96
// beyond 30 (standard tables).
double T975(int n) {
  static const double kT[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                              2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                              2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                              2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  const int df = n - 1;
  return df >= 1 && df <= 30 ? kT[df] : 1.96;
}

}  // namespace

PolicySummary Summarize(const SimResult& r);

namespace {

// Results in first-appearance order of their policy; several per policy when run with seeds.
std::vector<std::pair<std::string, std::vector<PolicySummary>>> GroupByPolicy(
    const std::vector<SimResult>& results) {
  std::vector<std::pair<std::string, std::vector<PolicySummary>>> g;
  for (const SimResult& r : results) {
    auto it = std::find_if(g.begin(), g.end(), [&](const auto& e) { return e.first == r.policy; });
    if (it == g.end()) {
      g.emplace_back(r.policy, std::vector<PolicySummary>{});
      it = g.end() - 1;
    }
    it->second.push_back(Summarize(r));
  }
  return g;
}

// Mean and 95% half-width of one figure over the seeds (half-width 0 for one seed).
std::pair<double, double> MeanCi(const std::vector<PolicySummary>& runs,
                                 double PolicySummary::*field) {
  const int n = static_cast<int>(runs.size());
  double mean = 0, var = 0;
  for (const PolicySummary& r : runs) mean += r.*field;
  mean /= n;
  for (const PolicySummary& r : runs) var += (r.*field - mean) * (r.*field - mean);
  return {mean, n >= 2 ? T975(n) * std::sqrt(var / (n - 1)) / std::sqrt(n) : 0.0};
}

// The first seed's summary with every SeededFigures figure replaced by its mean over the seeds.
PolicySummary MeanOverSeeds(const std::vector<PolicySummary>& runs) {
  PolicySummary m = runs.front();
  for (const SeededFigure& f : SeededFigures()) m.*f.member = MeanCi(runs, f.member).first;
  return m;
}

// Points a dashboard draws jct_cdf.svg and utilization.svg from: report.json's `"jct_cdf"` (the
// CDF at the quantiles 0%, 1%, …, 100%) and `"utilization_series"` (at most 200 points), each
// on a line of its own. `r`: the policy's first run (its first seed), the run whose summary
// MeanOverSeeds keeps.
void WritePlotSeries(std::ostringstream& o, const SimResult& r) {
  auto write = [&o](const char* key, const std::vector<std::pair<double, double>>& pts,
                    int x_digits) {
    o << ",\n      \"" << key << "\": [";
    for (size_t i = 0; i < pts.size(); ++i) {
      o << (i ? ", " : "") << "[" << Fixed(pts[i].first, x_digits) << ", "
        << Fixed(pts[i].second, 6) << "]";
    }
    o << "]";
  };
  write("jct_cdf", CdfPoints(SortedJctS(r), 101), 3);
  write("utilization_series", Downsample(UtilizationPoints(r), 200), 6);
}

// `"<name>_ci95[_s]": half-width` per SeededFigures figure.
void WriteCi(std::ostringstream& o, const std::vector<PolicySummary>& runs) {
  for (const SeededFigure& f : SeededFigures()) {
    o << ", \"" << f.name << "_ci95" << (f.seconds ? "_s" : "")
      << "\": " << Fixed(MeanCi(runs, f.member).second, 6);
  }
}

}  // namespace

PolicySummary Summarize(const SimResult& r) {
  PolicySummary s;
  s.policy = r.policy;
  std::vector<double> jct, queue;
  double slow_sum = 0, useful_gpu_us = 0;
  int slow_n = 0;
  for (const JobOutcome& j : r.jobs) {
    if (j.end_us < 0) continue;
    jct.push_back(static_cast<double>(j.end_us - j.submit_us) / kUsPerS);
    queue.push_back(static_cast<double>(j.first_start_us - j.submit_us) / kUsPerS);
    useful_gpu_us +=
        static_cast<double>(j.gpus) * (j.gpu_milli / 1000.0) * static_cast<double>(j.ideal_us);
    if (j.gpus >= 2) {
      slow_sum += j.comm_slowdown;
      ++slow_n;
    }
  }
  s.jobs = static_cast<int>(jct.size());
  s.unfinished = r.unfinished;
  auto mean = [](const std::vector<double>& v) {
    double t = 0;
    for (double x : v) t += x;
    return v.empty() ? 0.0 : t / static_cast<double>(v.size());
  };
  s.mean_jct_s = mean(jct);
  s.mean_queue_s = mean(queue);
  std::sort(jct.begin(), jct.end());
  std::sort(queue.begin(), queue.end());
  s.p50_jct_s = NearestRank(jct, 0.5);
  s.p99_jct_s = NearestRank(jct, 0.99);
  s.p50_queue_s = NearestRank(queue, 0.5);
  s.makespan_s = static_cast<double>(r.makespan_us) / kUsPerS;
  s.gpu_utilization = r.gpu_utilization;
  s.window_utilization = r.window_utilization;
  s.gpu_allocation_milli = r.gpu_allocation_milli;
  s.final_gpu_allocation_milli = r.final_gpu_allocation_milli;
  s.refused = r.refused;
  if (r.makespan_us > 0 && r.total_gpus > 0) {
    s.useful_utilization =
        useful_gpu_us / (static_cast<double>(r.total_gpus) * static_cast<double>(r.makespan_us));
  }
  s.mean_comm_slowdown = slow_n > 0 ? slow_sum / slow_n : 1.0;
  s.mean_fragmentation = r.mean_fragmentation;
  SummarizeJobs(r, s);
  s.failures = r.failures;
  s.failures_survived = r.failures_survived;
  s.jobs_interrupted = r.jobs_interrupted;
  s.preemptions = r.preemptions;
  s.moves = r.moves;
  return s;
}

std::string ReportJson(const ReportInfo& info, const std::vector<SimResult>& results) {
  std::ostringstream o;
  o << "{\n  \"cluster\": {\"name\": " << JsonString(info.cluster)
    << ", \"nodes\": " << info.cluster_nodes << ", \"gpus\": " << info.cluster_gpus << "},\n"
    << "  \"trace\": {\"file\": " << JsonString(info.trace)
    << ", \"format\": " << JsonString(info.trace_format) << ", \"jobs\": " << info.trace_jobs
    << ", \"skipped_no_gpu\": " << info.trace_skipped
    << ", \"fractional_rounded_up\": 0, \"fractional_shared\": " << info.trace_fractional << "},\n"
    << "  \"experiment\": "
    << (info.fill_ratio > 0
            ? "{\"mode\": \"fill\", \"fill_ratio\": " + Fixed(info.fill_ratio, 3) + "}"
            : std::string("{\"mode\": \"replay\"}"))
    << ",\n"
    << "  \"seed\": " << info.seed << ",\n"
    << "  \"comm_fraction\": " << Fixed(info.comm_fraction, 4) << ",\n"
    << "  \"runtime_model\": " << JsonString(info.runtime_model) << ",\n"
    << "  \"locality_wait_s\": " << Fixed(info.locality_wait_s, 3) << ",\n"
    << "  \"wait_or_spread\": " << (info.wait_or_spread ? "true" : "false") << ",\n"
    << "  \"estimated_backfill\": " << JsonString(info.estimated_backfill) << ",\n"
    << "  \"contention_score\": " << (info.contention_score ? "true" : "false") << ",\n"
    << "  \"rail_alignment\": " << (info.rail_alignment ? "true" : "false") << ",\n"
    << "  \"consolidation\": {\"on\": " << (info.consolidation ? "true" : "false")
    << ", \"checkpoint_interval_s\": " << info.checkpoint_interval_s
    << ", \"restart_cost_s\": " << info.restart_cost_s << "},\n"
    << "  \"policies_distinct\": " << (info.policies_distinct ? "true" : "false") << ",\n"
    << "  \"failures_simulated\": " << (info.failures ? "true" : "false") << ",\n"
    << "  \"policies\": {";
  const auto groups = GroupByPolicy(results);
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::vector<PolicySummary>& runs = groups[i].second;
    const PolicySummary s = MeanOverSeeds(runs);
    o << (i ? "," : "") << "\n    " << JsonString(s.policy) << ": {"
      << "\"jobs\": " << s.jobs << ", \"mean_jct_s\": " << Fixed(s.mean_jct_s, 3)
      << ", \"p50_jct_s\": " << Fixed(s.p50_jct_s, 3)
      << ", \"p99_jct_s\": " << Fixed(s.p99_jct_s, 3)
      << ", \"mean_queue_s\": " << Fixed(s.mean_queue_s, 3)
      << ", \"makespan_s\": " << Fixed(s.makespan_s, 3)
      << ", \"gpu_utilization\": " << Fixed(s.gpu_utilization, 6)
      << ", \"mean_comm_slowdown\": " << Fixed(s.mean_comm_slowdown, 6)
      << ", \"failures\": " << s.failures << ", \"preemptions\": " << s.preemptions
      << ", \"consolidation_moves\": " << s.moves
      << ", \"jobs_interrupted\": " << s.jobs_interrupted
      << ", \"failures_survived\": " << s.failures_survived << ", \"unfinished\": " << s.unfinished
      << ", \"p50_queue_s\": " << Fixed(s.p50_queue_s, 3)
      << ", \"mean_fragmentation\": " << Fixed(s.mean_fragmentation, 6)
      << ", \"useful_utilization\": " << Fixed(s.useful_utilization, 6)
      << ", \"gpu_allocation_milli\": " << Fixed(s.gpu_allocation_milli, 6)
      << ", \"final_gpu_allocation_milli\": " << Fixed(s.final_gpu_allocation_milli, 6)
      << ", \"refused\": " << s.refused
      << ", \"gpu_time_weighted_jct_s\": " << Fixed(s.gpu_time_weighted_jct_s, 3)
      << ", \"multi_gpu_mean_jct_s\": " << Fixed(s.multi_gpu_mean_jct_s, 3)
      << ", \"multi_node_mean_jct_s\": " << Fixed(s.multi_node_mean_jct_s, 3)
      << ", \"contention_slowdown\": " << Fixed(s.contention_slowdown, 6)
      << ", \"window_utilization\": " << Fixed(s.window_utilization, 6)
      << ", \"seeds\": " << runs.size();
    WriteCi(o, runs);
    o << ", \"by_size\": {";
    for (size_t k = 0; k < s.by_size.size(); ++k) {
      const PolicySummary::Bucket& b = s.by_size[k];
      o << (k ? ", " : "") << JsonString(b.name) << ": {\"jobs\": " << b.jobs
        << ", \"mean_jct_s\": " << Fixed(b.mean_jct_s, 3)
        << ", \"mean_queue_s\": " << Fixed(b.mean_queue_s, 3)
        << ", \"mean_comm_slowdown\": " << Fixed(b.mean_comm_slowdown, 6) << "}";
    }
    o << "}";
    WritePlotSeries(o, *std::find_if(results.begin(), results.end(),
                                     [&](const SimResult& r) { return r.policy == s.policy; }));
    o << "}";
  }
  o << "\n  }\n}\n";
  return o.str();
}

std::string ReportMarkdown(const ReportInfo& info, const std::vector<SimResult>& results) {
  std::ostringstream o;
  o << "# Simulation report\n\n"
    << "- Cluster: " << info.cluster << " (" << info.cluster_nodes << " nodes, "
    << info.cluster_gpus << " GPUs)\n"
    << "- Trace: `" << info.trace << "` (" << info.trace_format << "), " << info.trace_jobs
    << " jobs simulated";
  if (info.trace_skipped > 0) o << "; " << info.trace_skipped << " rows without GPUs skipped";
  o << "\n";
  if (info.trace_fractional > 0) {
    o << "- " << info.trace_fractional
      << " requests for a fraction of a GPU share GPUs (up to 1000 milli per GPU; whole-GPU "
         "jobs never share)\n";
  }
  if (info.fill_ratio > 0) {
    o << "- Experiment: FGD's fill — trace jobs plus draws with replacement up to "
      << Fixed(info.fill_ratio, 2)
      << " × the cluster's GPUs of demand, shuffled, placed on arrival or refused, never "
         "ending; final GPU allocation = allocated milli / (1000 · GPUs) after the last "
         "arrival\n";
  }
  if (info.runtime_model == "comm-fraction") {
    o << "- Seed " << info.seed << "; communication fraction of a step on the ideal placement f = "
      << Fixed(info.comm_fraction, 3)
      << " (run time = duration · ((1 − f) + f · predicted / best))\n";
  } else {
    o << "- Seed " << info.seed
      << "; each job runs at ideal step / current step: compute of its model plus the "
         "communication of its layout on its placement, network links shared with the jobs "
         "around it (docs/simulator.md, \"Step time\")\n";
  }
  if (!info.policies_distinct) {
    o << "- **Note:** this build has no per-policy placer options yet; every policy name ran the "
         "default gang placer, so the rows differ only if the runs do.\n";
  }
  o << "- Failures: " << (info.failures ? "simulated" : "not simulated") << "\n\n";
  o << "| policy | jobs | unfinished | mean JCT (s) | p50 JCT (s) | p99 JCT (s) | mean queue (s) "
       "| makespan (s) | GPU util | useful util | mean comm slowdown | fragmentation | preemptions "
       "| failures | GPU alloc (milli) | final GPU alloc "
       "|\n"
    << "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
       "| ---: | ---: | ---: |\n";
  // One row per policy: with several seeds, the means over them (report.json has the CIs).
  for (const auto& [policy, runs] : GroupByPolicy(results)) {
    const PolicySummary s = MeanOverSeeds(runs);
    o << "| " << s.policy << " | " << s.jobs << " | " << s.unfinished << " | "
      << Fixed(s.mean_jct_s, 1) << " | " << Fixed(s.p50_jct_s, 1) << " | " << Fixed(s.p99_jct_s, 1)
      << " | " << Fixed(s.mean_queue_s, 1) << " | " << Fixed(s.makespan_s, 0) << " | "
      << Fixed(100 * s.gpu_utilization, 2) << "% | " << Fixed(100 * s.useful_utilization, 2)
      << "% | " << Fixed(s.mean_comm_slowdown, 4) << " | " << Fixed(100 * s.mean_fragmentation, 2)
      << "% | " << s.preemptions << " | " << s.failures << " | "
      << Fixed(100 * s.gpu_allocation_milli, 2) << "% | "
      << Fixed(100 * s.final_gpu_allocation_milli, 2) << "% |\n";
  }
  o << "\nPlots: [JCT CDF](jct_cdf.svg), [GPU utilisation over time](utilization.svg), "
       "[communication slowdown by job size](slowdown_by_size.svg).\n";
  return o.str();
}

std::string JctCdfSvg(const std::vector<SimResult>& results) {
  Frame f;
  f.log_x = true;
  f.x0 = 1;
  double hi = 10;
  for (const SimResult& r : results) {
    auto v = SortedJctS(r);
    if (!v.empty()) hi = std::max(hi, v.back());
  }
  f.x1 = std::pow(10.0, std::ceil(std::log10(hi)));
  std::vector<std::pair<double, std::string>> xt, yt;
  for (double x = 1; x <= f.x1 * 1.0001; x *= 10) xt.emplace_back(x, DurationLabel(x));
  for (int p = 0; p <= 100; p += 20) yt.emplace_back(p / 100.0, std::to_string(p) + "%");
  std::string s = SvgOpen(f, "Job completion time (CDF)") +
                  Axes(f, xt, yt, "job completion time (log scale)", "jobs completed");
  for (size_t i = 0; i < results.size(); ++i) {
    // At most 401 points: the CDF at the quantiles 0, 0.25%, …, 100% (report.json: 101).
    std::vector<std::pair<double, double>> pts;
    for (const auto& [x, y] : CdfPoints(SortedJctS(results[i]), 401)) {
      pts.emplace_back(f.X(x), f.Y(y));
    }
    s += Polyline(pts, Color(i));
  }
  return s + Legend(f, results) + "</svg>\n";
}

std::string UtilizationSvg(const std::vector<SimResult>& results) {
  Frame f;
  double span_s = 1;
  for (const SimResult& r : results) {
    span_s = std::max(span_s, static_cast<double>(r.makespan_us) / kUsPerS);
  }
  const bool days = span_s > 3 * 86400;
  const double unit = days ? 86400 : 3600;
  f.x1 = span_s / unit;
  std::vector<std::pair<double, std::string>> xt, yt;
  const double raw = f.x1 / 8;
  const double mag = std::pow(10.0, std::floor(std::log10(std::max(raw, 1e-9))));
  double tick = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (mag * m >= raw) {
      tick = mag * m;
      break;
    }
  }
  for (double x = 0; x <= f.x1 + 1e-9; x += tick) xt.emplace_back(x, Fixed(x, tick < 1 ? 1 : 0));
  for (int p = 0; p <= 100; p += 20) yt.emplace_back(p / 100.0, std::to_string(p) + "%");
  std::string s = SvgOpen(f, "GPU utilisation over time") +
                  Axes(f, xt, yt, days ? "time (days)" : "time (hours)", "GPUs busy");
  for (size_t i = 0; i < results.size(); ++i) {
    std::vector<std::pair<double, double>> pts;
    for (const auto& [t, busy] : UtilizationPoints(results[i])) {
      pts.emplace_back(f.X(t / unit), f.Y(busy));
    }
    s += Polyline(pts, Color(i));
  }
  return s + Legend(f, results) + "</svg>\n";
}

std::string SlowdownBySizeSvg(const std::vector<SimResult>& results) {
  // Size classes: GPUs rounded up to a power of two.
  std::map<int, std::vector<std::pair<double, int>>> by_size;  // class → per policy (sum, n)
  for (size_t i = 0; i < results.size(); ++i) {
    for (const JobOutcome& j : results[i].jobs) {
      if (j.end_us < 0) continue;
      int c = 1;
      while (c < j.gpus) c *= 2;
      auto& v = by_size[c];
      v.resize(results.size(), {0.0, 0});
      v[i].first += j.comm_slowdown;
      v[i].second += 1;
    }
  }
  Frame f;
  double ymax = 1.0;
  for (const auto& [c, v] : by_size) {
    for (const auto& [sum, n] : v) {
      if (n > 0) ymax = std::max(ymax, sum / n);
    }
  }
  f.y0 = std::max(0.0, 1.0 - 0.5 * (ymax - 1.0) - 0.05);
  f.y0 = std::floor(f.y0 * 20) / 20;
  f.y1 = ymax + (ymax - f.y0) * 0.1 + 0.01;
  f.x0 = 0;
  f.x1 = static_cast<double>(std::max<size_t>(1, by_size.size()));
  std::vector<std::pair<double, std::string>> xt, yt;
  size_t k = 0;
  for (const auto& [c, v] : by_size) {
    xt.emplace_back(static_cast<double>(k++) + 0.5, (c == 1 ? "1" : "≤" + std::to_string(c)));
  }
  for (int t = 0; t <= 5; ++t) {
    const double y = f.y0 + (f.y1 - f.y0) * t / 5;
    yt.emplace_back(y, Fixed(y, 3));
  }
  std::string s = SvgOpen(f, "Communication slowdown by job size (mean)") +
                  Axes(f, xt, yt, "GPUs per job", "run time / ideal run time");
  const double group = (f.X(1) - f.X(0)) * 0.8;
  const double bar = group / static_cast<double>(std::max<size_t>(1, results.size()));
  k = 0;
  std::ostringstream o;
  for (const auto& [c, v] : by_size) {
    const double gx = f.X(static_cast<double>(k)) + (f.X(1) - f.X(0)) * 0.1;
    for (size_t i = 0; i < results.size(); ++i) {
      if (i >= v.size() || v[i].second == 0) continue;
      const double val = v[i].first / v[i].second;
      const double y = f.Y(val);
      o << "<rect x=\"" << Fixed(gx + bar * static_cast<double>(i), 1) << "\" y=\"" << Fixed(y, 1)
        << "\" width=\"" << Fixed(std::max(1.0, bar - 1), 1) << "\" height=\""
        << Fixed(std::max(0.0, f.Y(f.y0) - y), 1) << "\" fill=\"" << Color(i) << "\"><title>"
        << XmlEscape(results[i].policy) << ", ≤" << c << " GPUs: " << Fixed(val, 4) << " ("
        << v[i].second << " jobs)</title></rect>\n";
    }
    ++k;
  }
  return s + o.str() + Legend(f, results) + "</svg>\n";
}

namespace {

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

std::string Seconds3(int64_t us) { return Fixed(static_cast<double>(us) / kUsPerS, 3); }

// An instant that may not have happened (-1): empty then.
std::string SecondsOrEmpty(int64_t us) { return us < 0 ? std::string() : Seconds3(us); }

}  // namespace

std::string JobsCsv(const std::vector<SimResult>& results) {
  std::ostringstream o;
  o << "policy,seed,job,gpus,gpu_milli,submit_s,start_s,end_s,queue_s,jct_s,ideal_s,"
       "comm_slowdown,contention_slowdown,nodes,preemptions,failures,moves\n";
  for (const SimResult& r : results) {
    for (const JobOutcome& j : r.jobs) {
      const bool started = j.first_start_us >= 0, ended = j.end_us >= 0;
      o << CsvField(r.policy) << ',' << r.seed << ',' << CsvField(j.name) << ',' << j.gpus << ','
        << j.gpu_milli << ',' << Seconds3(j.submit_us) << ',' << SecondsOrEmpty(j.first_start_us)
        << ',' << SecondsOrEmpty(j.end_us) << ','
        << (started ? Seconds3(j.first_start_us - j.submit_us) : "") << ','
        << (ended ? Seconds3(j.end_us - j.submit_us) : "") << ',' << Seconds3(j.ideal_us) << ','
        << (ended ? Fixed(j.comm_slowdown, 4) : "") << ','
        << (ended ? Fixed(j.contention_slowdown, 4) : "") << ',' << j.nodes << ',' << j.preemptions
        << ',' << j.failures << ',' << j.moves << '\n';
    }
  }
  return o.str();
}

std::vector<std::pair<std::string, std::string>> ReportFiles(
    const ReportInfo& info, const std::vector<SimResult>& results) {
  return {
      {"report.json", ReportJson(info, results)},
      {"report.md", ReportMarkdown(info, results)},
      {"jobs.csv", JobsCsv(results)},
      {"jct_cdf.svg", JctCdfSvg(results)},
      {"utilization.svg", UtilizationSvg(results)},
      {"slowdown_by_size.svg", SlowdownBySizeSvg(results)},
  };
}

}  // namespace toposched::sim
