#include "sim/trace_generate.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <tuple>
#include <utility>

#include "core/time_units.h"
#include "sim/random.h"

namespace toposched::sim {

namespace {

// data/traces/mixes.yaml, embedded by the build as a raw string literal (CMakeLists.txt).
const char kEmbeddedMixes[] =
#include "embedded_mixes_yaml.inc"
    ;

constexpr double kSumTolerance = 1e-6;
constexpr int kMaxTp = 8;  // one NVLink node

bool PowerOfTwo(int v) { return v >= 1 && (v & (v - 1)) == 0; }

// Typed access to the YAML tree with `source:line: context: ...` in every error. yaml-cpp
// throws; ParseMixes catches at its edge.
class Reader {
 public:
  explicit Reader(const std::string& source) : source_(source) {}

  Status Error(const YAML::Node& n, const std::string& ctx, const std::string& msg) const {
    const int line = n.IsDefined() ? n.Mark().line + 1 : 0;
    return InvalidArgumentError(source_ + (line > 0 ? ":" + std::to_string(line) : "") + ": " +
                                (ctx.empty() ? "" : ctx + ": ") + msg);
  }
  Status Keys(const YAML::Node& map, std::initializer_list<const char*> known,
              const std::string& ctx) const {
    if (!map.IsMap()) return Error(map, ctx, "expected a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
        std::string list;
        for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
        return Error(kv.first, ctx, "unknown field \"" + key + "\" (fields: " + list + ")");
      }
    }
    return OkStatus();
  }
  StatusOr<YAML::Node> Field(const YAML::Node& map, const char* key, const std::string& ctx) const {
    YAML::Node v = map[key];
    if (!v.IsDefined() || v.IsNull())
      return Error(map, ctx, "missing field \"" + std::string(key) + "\"");
    return v;
  }
  StatusOr<std::string> Text(const YAML::Node& map, const char* key, const std::string& ctx) const {
    ASSIGN_OR_RETURN(YAML::Node v, Field(map, key, ctx));
    if (!v.IsScalar()) return Error(v, ctx, std::string(key) + ": expected text");
    return v.as<std::string>();
  }
  StatusOr<double> Number(const YAML::Node& map, const char* key, const std::string& ctx, double lo,
                          double hi) const {
    ASSIGN_OR_RETURN(YAML::Node v, Field(map, key, ctx));
    double d = 0;
    if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d)) {
      return Error(v, ctx, std::string(key) + ": expected a number");
    }
    if (d < lo || d > hi) {
      return Error(v, ctx,
                   std::string(key) + ": must be in [" + Fmt(lo) + ", " + Fmt(hi) + "], got " +
                       v.as<std::string>());
    }
    return d;
  }
  StatusOr<int> Int(const YAML::Node& map, const char* key, const std::string& ctx, int lo,
                    int hi) const {
    ASSIGN_OR_RETURN(double d, Number(map, key, ctx, lo, hi));
    if (d != std::floor(d)) return Error(map[key], ctx, std::string(key) + ": expected an integer");
    return static_cast<int>(d);
  }
  StatusOr<YAML::Node> List(const YAML::Node& map, const char* key, const std::string& ctx) const {
    ASSIGN_OR_RETURN(YAML::Node v, Field(map, key, ctx));
    if (!v.IsSequence() || v.size() == 0) {
      return Error(v, ctx, std::string(key) + ": expected a non-empty list");
    }
    return v;
  }

 private:
  static std::string Fmt(double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%g", v);
    return buf;
  }
  const std::string& source_;
};

StatusOr<MixModel> ReadModel(const Reader& r, const YAML::Node& n) {
  RETURN_IF_ERROR(r.Keys(n, {"name", "params", "train", "eval", "source"}, "models"));
  MixModel m;
  ASSIGN_OR_RETURN(m.name, r.Text(n, "name", "models"));
  const std::string ctx = "model \"" + m.name + "\"";
  RETURN_IF_ERROR(r.Text(n, "source", ctx).status());
  ASSIGN_OR_RETURN(m.params, r.Number(n, "params", ctx, 1, 1e15));
  for (auto [key, tp, pp] : {std::tuple{"train", &m.train_tp, &m.train_pp},
                             std::tuple{"eval", &m.eval_tp, &m.eval_pp}}) {
    ASSIGN_OR_RETURN(YAML::Node l, r.Field(n, key, ctx));
    const std::string lctx = ctx + ": " + key;
    RETURN_IF_ERROR(r.Keys(l, {"tp", "pp"}, lctx));
    ASSIGN_OR_RETURN(*tp, r.Int(l, "tp", lctx, 1, kMaxTp));
    ASSIGN_OR_RETURN(*pp, r.Int(l, "pp", lctx, 1, 1024));
    if (!PowerOfTwo(*tp) || !PowerOfTwo(*pp)) {
      return r.Error(l, lctx, "tp and pp must be powers of two");
    }
  }
  return m;
}

int FindModel(const std::vector<MixModel>& models, const std::string& name) {
  for (size_t i = 0; i < models.size(); ++i) {
    if (models[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

int ReplicaGpus(const MixModel& m, bool training) {
  return training ? m.train_tp * m.train_pp : m.eval_tp * m.eval_pp;
}

Status CheckSum(const Reader& r, const YAML::Node& n, const std::string& ctx, double sum) {
  if (std::abs(sum - 1) > kSumTolerance) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "probabilities sum to %.6g, not 1", sum);
    return r.Error(n, ctx, buf);
  }
  return OkStatus();
}

Status ReadDistributions(const Reader& r, const YAML::Node& n, const std::string& ctx,
                         const std::vector<MixModel>& models, MixClass& c) {
  ASSIGN_OR_RETURN(YAML::Node buckets, r.List(n, "gpus", ctx));
  double sum = 0;
  for (const YAML::Node& b : buckets) {
    RETURN_IF_ERROR(r.Keys(b, {"gpus", "p"}, ctx + ": gpus"));
    MixBucket mb;
    ASSIGN_OR_RETURN(mb.gpus, r.Int(b, "gpus", ctx + ": gpus", 1, 1 << 16));
    ASSIGN_OR_RETURN(mb.p, r.Number(b, "p", ctx + ": gpus", 0, 1));
    sum += mb.p;
    c.gpus.push_back(mb);
  }
  RETURN_IF_ERROR(CheckSum(r, buckets, ctx + ": gpus", sum));

  ASSIGN_OR_RETURN(YAML::Node d, r.Field(n, "duration", ctx));
  RETURN_IF_ERROR(r.Keys(d, {"median_s", "sigma", "max_s"}, ctx + ": duration"));
  ASSIGN_OR_RETURN(c.median_s, r.Number(d, "median_s", ctx + ": duration", 1, 1e9));
  ASSIGN_OR_RETURN(c.sigma, r.Number(d, "sigma", ctx + ": duration", 0, 10));
  ASSIGN_OR_RETURN(c.max_s, r.Number(d, "max_s", ctx + ": duration", c.median_s, 1e9));

  ASSIGN_OR_RETURN(YAML::Node ms, r.List(n, "models", ctx));
  sum = 0;
  for (const YAML::Node& m : ms) {
    RETURN_IF_ERROR(r.Keys(m, {"model", "p"}, ctx + ": models"));
    ASSIGN_OR_RETURN(std::string name, r.Text(m, "model", ctx + ": models"));
    const int idx = FindModel(models, name);
    if (idx < 0) return r.Error(m, ctx + ": models", "unknown model \"" + name + "\"");
    ASSIGN_OR_RETURN(double p, r.Number(m, "p", ctx + ": models", 0, 1));
    sum += p;
    c.models.emplace_back(idx, p);
  }
  RETURN_IF_ERROR(CheckSum(r, ms, ctx + ": models", sum));

  // A bucket draws only among models whose replica divides its GPUs (DP = the rest).
  for (size_t b = 0; b < c.gpus.size(); ++b) {
    std::vector<std::pair<int, double>> fit;
    double total = 0;
    for (auto [idx, p] : c.models) {
      if (p > 0 && c.gpus[b].gpus % ReplicaGpus(models[idx], c.training) == 0) {
        fit.emplace_back(idx, p);
        total += p;
      }
    }
    if (fit.empty() && c.gpus[b].p > 0) {
      return r.Error(buckets[b], ctx + ": gpus",
                     "no model of the class fits " + std::to_string(c.gpus[b].gpus) +
                         " GPUs (a replica's tp x pp must divide the GPU count)");
    }
    double cum = 0;
    for (auto& [idx, p] : fit) p = (cum += p / total);
    c.fitting.push_back(std::move(fit));
  }
  return OkStatus();
}

StatusOr<MixClass> ReadClass(const Reader& r, const YAML::Node& n, const std::string& mix_ctx,
                             const std::vector<MixModel>& models) {
  RETURN_IF_ERROR(r.Keys(n,
                         {"name", "kind", "share", "share_source", "priority", "gpus",
                          "gpus_source", "duration", "duration_source", "models", "models_source"},
                         mix_ctx));
  MixClass c;
  ASSIGN_OR_RETURN(c.name, r.Text(n, "name", mix_ctx));
  const std::string ctx = mix_ctx + ": class \"" + c.name + "\"";
  for (const char* key : {"share_source", "gpus_source", "duration_source", "models_source"}) {
    RETURN_IF_ERROR(r.Text(n, key, ctx).status());
  }
  ASSIGN_OR_RETURN(std::string kind, r.Text(n, "kind", ctx));
  if (kind != "train" && kind != "eval") {
    return r.Error(n["kind"], ctx, "kind: expected train or eval, got \"" + kind + "\"");
  }
  c.training = kind == "train";
  ASSIGN_OR_RETURN(c.share, r.Number(n, "share", ctx, 0, 1));
  ASSIGN_OR_RETURN(c.priority, r.Int(n, "priority", ctx, -1000000, 1000000));
  RETURN_IF_ERROR(ReadDistributions(r, n, ctx, models, c));
  return c;
}

StatusOr<TraceMix> ReadMix(const Reader& r, const YAML::Node& n,
                           const std::vector<MixModel>& models) {
  RETURN_IF_ERROR(
      r.Keys(n, {"name", "description", "mean_interarrival_s", "interarrival_source", "classes"},
             "mixes"));
  TraceMix m;
  m.models = models;
  ASSIGN_OR_RETURN(m.name, r.Text(n, "name", "mixes"));
  const std::string ctx = "mix \"" + m.name + "\"";
  ASSIGN_OR_RETURN(m.description, r.Text(n, "description", ctx));
  RETURN_IF_ERROR(r.Text(n, "interarrival_source", ctx).status());
  ASSIGN_OR_RETURN(m.mean_interarrival_s, r.Number(n, "mean_interarrival_s", ctx, 1e-3, 1e9));
  ASSIGN_OR_RETURN(YAML::Node classes, r.List(n, "classes", ctx));
  double sum = 0;
  for (const YAML::Node& cn : classes) {
    ASSIGN_OR_RETURN(MixClass c, ReadClass(r, cn, ctx, models));
    for (const MixClass& other : m.classes) {
      if (other.name == c.name) return r.Error(cn, ctx, "class \"" + c.name + "\" given twice");
    }
    sum += c.share;
    m.classes.push_back(std::move(c));
  }
  RETURN_IF_ERROR(CheckSum(r, classes, ctx + ": class shares", sum));
  return m;
}

StatusOr<std::vector<TraceMix>> ParseMixesOrThrow(const std::string& yaml,
                                                  const std::string& source) {
  const Reader r(source);
  const YAML::Node root = YAML::Load(yaml);
  RETURN_IF_ERROR(r.Keys(root, {"version", "models", "mixes"}, ""));
  ASSIGN_OR_RETURN(int version, r.Int(root, "version", "", 1, 1000));
  if (version != 1) return r.Error(root["version"], "", "version: only 1 is known");
  std::vector<MixModel> models;
  ASSIGN_OR_RETURN(YAML::Node mn, r.List(root, "models", ""));
  for (const YAML::Node& n : mn) {
    ASSIGN_OR_RETURN(MixModel m, ReadModel(r, n));
    if (FindModel(models, m.name) >= 0) {
      return r.Error(n, "models", "model \"" + m.name + "\" given twice");
    }
    models.push_back(std::move(m));
  }
  std::vector<TraceMix> mixes;
  ASSIGN_OR_RETURN(YAML::Node xs, r.List(root, "mixes", ""));
  for (const YAML::Node& n : xs) {
    ASSIGN_OR_RETURN(TraceMix m, ReadMix(r, n, models));
    if (FindMix(mixes, m.name).ok())
      return r.Error(n, "mixes", "mix \"" + m.name + "\" given twice");
    mixes.push_back(std::move(m));
  }
  return mixes;
}

// A standard normal by Marsaglia's polar method: only log and sqrt, both portable enough that
// a seed gives the same trace everywhere (sqrt is exact in IEEE 754).
double StandardNormal(std::mt19937_64& rng) {
  while (true) {
    const double a = 2 * Uniform01(rng) - 1;
    const double b = 2 * Uniform01(rng) - 1;
    const double s = a * a + b * b;
    if (s > 0 && s < 1) return a * std::sqrt(-2 * std::log(s) / s);
  }
}

// The first index whose cumulative weight reaches u; the last one when rounding leaves u above.
template <typename Cum>
size_t PickCumulative(double u, size_t n, Cum cum) {
  for (size_t i = 0; i < n; ++i) {
    if (u <= cum(i)) return i;
  }
  return n - 1;
}

std::string Padded(int64_t v, int width) {
  std::string s = std::to_string(v);
  return std::string(static_cast<size_t>(std::max(0, width - static_cast<int>(s.size()))), '0') + s;
}

}  // namespace

StatusOr<std::vector<TraceMix>> ParseMixes(const std::string& yaml, const std::string& source) {
  try {
    return ParseMixesOrThrow(yaml, source);
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(source + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

const std::string& BuiltinMixesYaml() {
  static const std::string text(kEmbeddedMixes);
  return text;
}

StatusOr<TraceMix> FindMix(const std::vector<TraceMix>& mixes, const std::string& name) {
  std::string names;
  for (const TraceMix& m : mixes) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  return NotFoundError("--mix: unknown mix \"" + name + "\" (mixes: " + names + ")");
}

Status TraceGenOptions::Validate() const {
  if (mix.empty()) return InvalidArgumentError("--mix: must not be empty");
  if (jobs < 1 || jobs > kMaxJobs) {
    return InvalidArgumentError("--jobs: must be in [1, " + std::to_string(kMaxJobs) + "], got " +
                                std::to_string(jobs));
  }
  if (seed < 0) return InvalidArgumentError("--seed: must be >= 0, got " + std::to_string(seed));
  return OkStatus();
}

StatusOr<GeneratedTrace> GenerateTrace(const TraceMix& mix, const TraceGenOptions& o) {
  RETURN_IF_ERROR(o.Validate());
  if (mix.classes.empty()) return InvalidArgumentError("mix \"" + mix.name + "\": no classes");
  std::vector<double> class_cum;
  double cum = 0;
  for (const MixClass& c : mix.classes) class_cum.push_back(cum += c.share);
  std::vector<std::vector<double>> bucket_cum;
  for (const MixClass& c : mix.classes) {
    std::vector<double> b;
    double s = 0;
    for (const MixBucket& mb : c.gpus) b.push_back(s += mb.p);
    bucket_cum.push_back(std::move(b));
  }

  GeneratedTrace t;
  t.jobs.reserve(static_cast<size_t>(o.jobs));
  t.job_class.reserve(static_cast<size_t>(o.jobs));
  const int width = std::max<int>(6, static_cast<int>(std::to_string(o.jobs).size()));
  std::mt19937_64 rng(static_cast<uint64_t>(o.seed));
  double now_s = 0;
  for (int64_t n = 1; n <= o.jobs; ++n) {
    // The first job arrives at 0 (the readers shift traces so), later ones after a gap.
    const double gap = -mix.mean_interarrival_s * std::log(Uniform01(rng));
    if (n > 1) now_s += gap;
    const size_t ci =
        PickCumulative(Uniform01(rng), class_cum.size(), [&](size_t i) { return class_cum[i]; });
    const MixClass& c = mix.classes[ci];
    const size_t bi =
        PickCumulative(Uniform01(rng), c.gpus.size(), [&](size_t i) { return bucket_cum[ci][i]; });
    const auto& fit = c.fitting[bi];
    const size_t mi =
        PickCumulative(Uniform01(rng), fit.size(), [&](size_t i) { return fit[i].second; });
    const MixModel& model = mix.models[fit[mi].first];
    const double z = StandardNormal(rng);
    const double dur =
        std::min(c.max_s, std::max(1.0, std::round(c.median_s * std::exp(c.sigma * z))));

    TraceJob j;
    j.name = c.name + "-" + Padded(n, width);
    j.line = static_cast<int>(std::min<int64_t>(n, INT32_MAX));
    j.submit_us = static_cast<int64_t>(std::llround(now_s * kUsPerS));
    j.duration_us = static_cast<int64_t>(dur) * kUsPerS;
    j.gpus = c.gpus[bi].gpus;
    j.user = c.name;
    j.tp = c.training ? model.train_tp : model.eval_tp;
    j.pp = c.training ? model.train_pp : model.eval_pp;
    j.dp = j.gpus / (j.tp * j.pp);
    j.model_params = model.params;
    j.priority = c.priority;
    t.jobs.push_back(std::move(j));
    t.job_class.push_back(static_cast<int>(ci));
  }
  return t;
}

std::string WriteGenericCsv(const std::vector<TraceJob>& jobs, const std::string& comment) {
  std::string out;
  out.reserve(jobs.size() * 72 + comment.size() + 128);
  size_t start = 0;
  while (start < comment.size()) {
    size_t end = comment.find('\n', start);
    if (end == std::string::npos) end = comment.size();
    out += "# " + comment.substr(start, end - start) + "\n";
    start = end + 1;
  }
  out += "name,submit_s,duration_s,gpus,user,tp,pp,dp,model_params,priority\n";
  char buf[256];
  for (const TraceJob& j : jobs) {
    // Integers only, so the bytes do not depend on the C library's float formatting.
    std::snprintf(buf, sizeof(buf), ",%" PRId64 ".%06" PRId64 ",%" PRId64 ",%d,",
                  j.submit_us / kUsPerS, j.submit_us % kUsPerS, j.duration_us / kUsPerS, j.gpus);
    out += j.name;
    out += buf;
    out += j.user;
    std::snprintf(buf, sizeof(buf), ",%d,%d,%d,%" PRId64 ",%d\n", j.tp, j.pp, j.dp,
                  static_cast<int64_t>(std::llround(j.model_params)), j.priority);
    out += buf;
  }
  return out;
}

TraceSummary Summarize(const TraceMix& mix, const GeneratedTrace& t) {
  TraceSummary s;
  for (const MixClass& c : mix.classes) s.classes.push_back({c.name, 0, 0});
  std::vector<double> durations;
  durations.reserve(t.jobs.size());
  double gpus = 0, dur = 0;
  for (size_t i = 0; i < t.jobs.size(); ++i) {
    const TraceJob& j = t.jobs[i];
    const double d = SecondsOfUs(j.duration_us);
    TraceSummary::PerClass& pc = s.classes[static_cast<size_t>(t.job_class[i])];
    ++pc.jobs;
    pc.gpu_seconds += d * j.gpus;
    gpus += j.gpus;
    dur += d;
    durations.push_back(d);
    s.span_s = std::max(s.span_s, SecondsOfUs(j.submit_us));
  }
  if (!durations.empty()) {
    const double n = static_cast<double>(durations.size());
    s.mean_gpus = gpus / n;
    s.mean_duration_s = dur / n;
    // Nearest-rank median, as the simulator's percentiles.
    const size_t k = (durations.size() + 1) / 2 - 1;
    std::nth_element(durations.begin(), durations.begin() + static_cast<std::ptrdiff_t>(k),
                     durations.end());
    s.median_duration_s = durations[k];
  }
  return s;
}

}  // namespace toposched::sim
