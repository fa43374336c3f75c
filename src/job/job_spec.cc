#include "job/job_spec.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/enum_names.h"
#include "core/strings.h"

namespace toposched::job {

namespace {

// Bounds that keep every product below int64 overflow and reject absurd input early.
constexpr int64_t kMaxGpus = 1 << 20;
constexpr int64_t kMaxDim = 1 << 20;
constexpr double kMaxParams = 1e15;
constexpr int kMaxHidden = 1 << 20;
constexpr int kMaxSeqLen = 1 << 24;
constexpr int kMaxMicroBatch = 1 << 16;
constexpr int64_t kMaxBytes = int64_t{1} << 60;

std::optional<FieldError> Err(std::string field, std::string message) {
  return FieldError{std::move(field), std::move(message)};
}

bool ValidName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

std::optional<FieldError> CheckConstraint(const LevelConstraint& c, const std::string& field) {
  if (c.mode == ConstraintMode::kNone) {
    if (!c.level.empty()) return Err(field, "a level without required/preferred");
    return std::nullopt;
  }
  const std::string f = field + "." + ConstraintModeName(c.mode);
  if (!ValidName(c.level)) {
    return Err(f, "expected a level name (letters, digits, '-', '_', '.'), got " + Quote(c.level));
  }
  return std::nullopt;
}

// hidden = cbrt(params * 128 / 12) rounded to a multiple of 128: params ~= 12 * layers * hidden^2
// with GPT-3's aspect ratio layers = hidden / 128.
int DeriveHidden(double params) {
  double h = std::cbrt(params * 128.0 / 12.0);
  double rounded = std::round(h / 128.0) * 128.0;
  return static_cast<int>(std::clamp(rounded, 128.0, static_cast<double>(kMaxHidden)));
}

}  // namespace

std::string SourceRef::Prefix() const {
  std::string out = file;
  if (!out.empty() && line > 0) out += ":" + std::to_string(line);
  if (!field.empty()) out += (out.empty() ? "" : ": ") + field;
  return out;
}

namespace {

constexpr EnumName<ConstraintMode> kConstraintModeNames[] = {
    {ConstraintMode::kRequired, "required"}, {ConstraintMode::kPreferred, "preferred"}};

}  // namespace

const char* ConstraintModeName(ConstraintMode m) { return NameOf(kConstraintModeNames, m, "none"); }

namespace {

constexpr EnumName<FailurePolicy> kFailurePolicyNames[] = {{FailurePolicy::kShrink, "shrink"},
                                                           {FailurePolicy::kFail, "fail"}};

}  // namespace

const char* FailurePolicyName(FailurePolicy p) { return NameOf(kFailurePolicyNames, p, "requeue"); }

const char* DegradedPolicyName(DegradedPolicy p) {
  return p == DegradedPolicy::kWait ? "wait" : "continue";
}

// ---- Rank helpers (Megatron order: TP fastest, then DP, then PP). ----

int Layout::RankOf(int tp_index, int dp_index, int pp_index) const {
  if (tp < 1 || pp < 1 || dp < 1) return -1;
  if (tp_index < 0 || tp_index >= tp || dp_index < 0 || dp_index >= dp || pp_index < 0 ||
      pp_index >= pp) {
    return -1;
  }
  return tp_index + tp * (dp_index + dp * pp_index);
}

Layout::Coord Layout::CoordOf(int rank) const {
  if (tp < 1 || pp < 1 || dp < 1 || rank < 0 || rank >= WorldSize()) return Coord{};
  Coord c;
  c.tp = rank % tp;
  c.dp = (rank / tp) % dp;
  c.pp = rank / (tp * dp);
  return c;
}

std::vector<int> Layout::TpGroup(int rank) const {
  Coord c = CoordOf(rank);
  std::vector<int> out;
  if (c.tp < 0) return out;
  for (int t = 0; t < tp; ++t) out.push_back(RankOf(t, c.dp, c.pp));
  return out;
}

std::vector<int> Layout::DpGroup(int rank) const {
  Coord c = CoordOf(rank);
  std::vector<int> out;
  if (c.tp < 0) return out;
  for (int d = 0; d < dp; ++d) out.push_back(RankOf(c.tp, d, c.pp));
  return out;
}

std::vector<int> Layout::PpGroup(int rank) const {
  Coord c = CoordOf(rank);
  std::vector<int> out;
  if (c.tp < 0) return out;
  for (int p = 0; p < pp; ++p) out.push_back(RankOf(c.tp, c.dp, p));
  return out;
}

std::vector<int> Layout::EpGroup(int rank) const {
  Coord c = CoordOf(rank);
  std::vector<int> out;
  if (c.tp < 0 || ep < 1 || dp % ep != 0) return out;
  const int first = c.dp - c.dp % ep;
  for (int d = first; d < first + ep; ++d) out.push_back(RankOf(c.tp, d, c.pp));
  return out;
}

// ---- Normalize / Check ----

std::optional<FieldError> NormalizeSpec(JobSpec& s) {
  Layout& l = s.layout;
  if (l.tp < 1 || l.tp > kMaxDim) return Err("layout.tp", "must be between 1 and 1048576");
  if (l.pp < 1 || l.pp > kMaxDim) return Err("layout.pp", "must be between 1 and 1048576");
  if (l.ep < 1 || l.ep > kMaxDim) return Err("layout.ep", "must be between 1 and 1048576");
  if (l.dp < 0 || l.dp > kMaxDim) return Err("layout.dp", "must be between 1 and 1048576");
  if (s.replicas < 0 || s.replicas > kMaxGpus) return Err("replicas", "out of range");
  if (s.gpus_per_replica < 0 || s.gpus_per_replica > kMaxGpus) {
    return Err("gpus_per_replica", "out of range");
  }
  if (s.total_gpus < 0 || s.total_gpus > kMaxGpus) return Err("total_gpus", "out of range");

  // Every size that was given must agree; the first one found fixes the total.
  const int64_t unit = int64_t{l.tp} * l.pp;
  int64_t total = 0;
  std::string total_from;
  auto agree = [&](int64_t value, const std::string& field,
                   const std::string& what) -> std::optional<FieldError> {
    if (total == 0) {
      total = value;
      total_from = what;
      return std::nullopt;
    }
    if (value != total) {
      return Err(field, what + " = " + std::to_string(value) + " but " + total_from + " = " +
                            std::to_string(total));
    }
    return std::nullopt;
  };
  if (s.total_gpus > 0) {
    if (auto e = agree(s.total_gpus, "total_gpus", "total_gpus")) return e;
  }
  if (s.replicas > 0 && s.gpus_per_replica > 0) {
    if (auto e = agree(int64_t{s.replicas} * s.gpus_per_replica, "gpus_per_replica",
                       "replicas * gpus_per_replica")) {
      return e;
    }
  }
  if (l.dp > 0) {
    if (auto e = agree(unit * l.dp, "layout.dp", "tp * pp * dp")) return e;
  }
  if (total == 0) {
    if (s.replicas > 0) return Err("gpus_per_replica", "missing (or give layout.dp or total_gpus)");
    if (s.gpus_per_replica > 0) return Err("replicas", "missing (or give layout.dp or total_gpus)");
    return Err("replicas", "missing: give replicas and gpus_per_replica, total_gpus, or layout.dp");
  }
  if (total > kMaxGpus) return Err("total_gpus", "more than 1048576 GPUs");
  if (l.dp == 0) {
    if (total % unit != 0) {
      return Err("layout", total_from + " = " + std::to_string(total) +
                               " is not a multiple of tp * pp = " + std::to_string(unit));
    }
    l.dp = static_cast<int>(total / unit);
  }
  if (s.replicas == 0 && s.gpus_per_replica == 0) {
    s.replicas = l.dp;
    s.gpus_per_replica = static_cast<int>(unit);
  } else if (s.replicas == 0) {
    if (total % s.gpus_per_replica != 0) {
      return Err("gpus_per_replica", total_from + " = " + std::to_string(total) +
                                         " is not a multiple of gpus_per_replica = " +
                                         std::to_string(s.gpus_per_replica));
    }
    s.replicas = static_cast<int>(total / s.gpus_per_replica);
  } else if (s.gpus_per_replica == 0) {
    if (total % s.replicas != 0) {
      return Err("replicas", total_from + " = " + std::to_string(total) +
                                 " is not a multiple of replicas = " + std::to_string(s.replicas));
    }
    s.gpus_per_replica = static_cast<int>(total / s.replicas);
  }
  s.total_gpus = static_cast<int>(total);

  if (s.model_params < 0 || s.model_params > kMaxParams || std::isnan(s.model_params)) {
    return Err("model_params", "must be between 0 and 1e15");
  }
  if (s.hidden_size < 0 || s.hidden_size > kMaxHidden) {
    return Err("hidden_size", "must be between 1 and 1048576");
  }
  if (s.hidden_size == 0 && s.model_params > 0) s.hidden_size = DeriveHidden(s.model_params);
  if (s.seq_len < 1 || s.seq_len > kMaxSeqLen) return Err("seq_len", "must be >= 1");
  if (s.micro_batch < 1 || s.micro_batch > kMaxMicroBatch) {
    return Err("micro_batch", "must be >= 1");
  }
  // Message sizes in bytes, bf16 (2 bytes per value); see docs/jobs.md.
  const double activation = 2.0 * s.micro_batch * s.seq_len * s.hidden_size;
  const double gradients = s.model_params * 2.0 / static_cast<double>(unit);
  auto fill = [](int64_t& b, double v) {
    if (b < 0) b = static_cast<int64_t>(std::min(v, static_cast<double>(kMaxBytes)));
  };
  if (s.model_params == 0 && s.hidden_size == 0) {
    // Unknown model: every collective is taken as 1 GiB (the size `place-node` and scheduler
    // scripts use), so placements still rank by their communication time instead of all
    // predicting 0 ms.
    constexpr double kUnknownModelBytes = 1 << 30;
    fill(l.tp_bytes, kUnknownModelBytes);
    fill(l.pp_bytes, kUnknownModelBytes);
    fill(l.ep_bytes, kUnknownModelBytes);
    fill(l.dp_bytes, kUnknownModelBytes);
    return CheckSpec(s);
  }
  fill(l.tp_bytes, activation);
  fill(l.pp_bytes, activation);
  fill(l.ep_bytes, activation);
  fill(l.dp_bytes, gradients);
  return CheckSpec(s);
}

std::optional<FieldError> CheckSpec(const JobSpec& s) {
  if (s.name.empty()) return Err("name", "missing");
  if (!ValidName(s.name)) {
    return Err("name",
               "expected letters, digits, '-', '_', '.' (starting with a letter or digit, "
               "at most 253), got " +
                   Quote(s.name));
  }
  if (!s.user.empty() && !ValidName(s.user)) return Err("user", "bad user name " + Quote(s.user));
  if (!ValidName(s.queue)) return Err("queue", "bad queue name " + Quote(s.queue));
  const Layout& l = s.layout;
  if (l.tp < 1 || l.tp > kMaxDim) return Err("layout.tp", "must be between 1 and 1048576");
  if (l.pp < 1 || l.pp > kMaxDim) return Err("layout.pp", "must be between 1 and 1048576");
  if (l.dp < 1 || l.dp > kMaxDim) return Err("layout.dp", "must be between 1 and 1048576");
  if (l.ep < 1 || l.ep > kMaxDim) return Err("layout.ep", "must be between 1 and 1048576");
  if (l.dp % l.ep != 0) {
    return Err("layout.ep", "expert parallelism is carved out of DP: ep = " + std::to_string(l.ep) +
                                " must divide dp = " + std::to_string(l.dp));
  }
  if (s.replicas < 1) return Err("replicas", "must be >= 1");
  if (s.gpus_per_replica < 1) return Err("gpus_per_replica", "must be >= 1");
  const int64_t unit = int64_t{l.tp} * l.pp;
  const int64_t world = unit * l.dp;
  const int64_t product = int64_t{s.replicas} * s.gpus_per_replica;
  if (product != world) {
    return Err("gpus_per_replica", "replicas * gpus_per_replica = " + std::to_string(product) +
                                       " but tp * pp * dp = " + std::to_string(world));
  }
  if (s.total_gpus != world) {
    return Err("total_gpus", "total_gpus = " + std::to_string(s.total_gpus) +
                                 " but tp * pp * dp = " + std::to_string(world));
  }
  const std::pair<int64_t, const char*> bytes[] = {{l.tp_bytes, "layout.tp_bytes"},
                                                   {l.pp_bytes, "layout.pp_bytes"},
                                                   {l.dp_bytes, "layout.dp_bytes"},
                                                   {l.ep_bytes, "layout.ep_bytes"}};
  for (const auto& [b, field] : bytes) {
    if (b < 0 || b > kMaxBytes) return Err(field, "must be between 0 and 2^60");
  }
  if (s.model_params < 0 || s.model_params > kMaxParams || std::isnan(s.model_params)) {
    return Err("model_params", "must be between 0 and 1e15");
  }
  if (s.hidden_size < 0 || s.hidden_size > kMaxHidden) return Err("hidden_size", "out of range");
  if (s.seq_len < 1 || s.seq_len > kMaxSeqLen) return Err("seq_len", "must be >= 1");
  if (s.micro_batch < 1 || s.micro_batch > kMaxMicroBatch) {
    return Err("micro_batch", "must be >= 1");
  }
  if (auto e = CheckConstraint(s.constraints.job, "constraints.job")) return e;
  if (auto e = CheckConstraint(s.constraints.tp, "constraints.tp")) return e;
  if (s.time_limit_s < 0) return Err("time_limit", "must be > 0");
  if (s.checkpoint_interval_s < 0) return Err("checkpoint.interval", "must be > 0");
  if (s.restart_cost_s < 0) return Err("checkpoint.restart", "must be > 0");
  if ((s.restart_cost_s > 0) != (s.checkpoint_interval_s > 0)) {
    return Err("checkpoint", "needs both interval and restart");
  }
  if (s.estimate) {
    if (s.estimate->run_s <= 0 || s.estimate->run_s > RunEstimate::kMaxRunS) {
      return Err("estimate.run_time", "must be > 0 and at most 1e9 s");
    }
    const double f = s.estimate->comm_share;
    if (!(f >= 0 && f <= 1)) return Err("estimate.comm_share", "must be between 0 and 1");
    if (s.time_limit_s > 0 && s.estimate->run_s > s.time_limit_s) {
      return Err("estimate.run_time",
                 "run_time = " + std::to_string(s.estimate->run_s) + " s is above time_limit = " +
                     std::to_string(s.time_limit_s) + " s (the job would be killed first)");
    }
  }
  if (s.elastic) {
    const ElasticRange& e = *s.elastic;
    if (e.min_replicas < 1) return Err("elastic.min_replicas", "must be >= 1");
    if (e.max_replicas > kMaxGpus) return Err("elastic.max_replicas", "out of range");
    if (e.min_replicas > s.replicas) {
      return Err("elastic.min_replicas", "min_replicas = " + std::to_string(e.min_replicas) +
                                             " is above replicas = " + std::to_string(s.replicas));
    }
    if (e.max_replicas < s.replicas) {
      return Err("elastic.max_replicas", "max_replicas = " + std::to_string(e.max_replicas) +
                                             " is below replicas = " + std::to_string(s.replicas));
    }
    // Every size the job may run at must be whole DP replicas (and whole EP blocks).
    const std::pair<int, const char*> ends[] = {{e.min_replicas, "elastic.min_replicas"},
                                                {e.max_replicas, "elastic.max_replicas"}};
    for (const auto& [r, field] : ends) {
      const int64_t gpus = int64_t{r} * s.gpus_per_replica;
      if (gpus % unit != 0 || (gpus / unit) % l.ep != 0) {
        return Err(field, std::to_string(r) + " replicas = " + std::to_string(gpus) +
                              " GPUs is not a whole number of DP replicas (tp * pp = " +
                              std::to_string(unit) + ", ep = " + std::to_string(l.ep) + ")");
      }
    }
  }
  if (s.on_failure == FailurePolicy::kShrink && !s.elastic) {
    return Err("on_failure", "shrink needs an elastic range (elastic.min_replicas)");
  }
  if (s.gpu_milli < 1 || s.gpu_milli > 1000) {
    return Err("gpu_milli", "expected an integer from 1 to 1000 (thousandths of one GPU), got " +
                                std::to_string(s.gpu_milli));
  }
  if (s.gpu_milli < 1000) {
    if (world != 1) {
      return Err("gpu_milli", "a fraction of a GPU (gpu_milli " + std::to_string(s.gpu_milli) +
                                  ") needs a world size of 1 GPU, got " + std::to_string(world));
    }
    if (s.elastic) {
      return Err("gpu_milli", "a fraction of a GPU cannot be elastic (elastic range given)");
    }
  }
  return std::nullopt;
}

namespace {
Status ToStatus(const JobSpec& s, const FieldError& e) {
  std::string prefix = s.where.file.empty() ? "job " + Quote(s.name) : s.where.Prefix();
  if (!s.where.file.empty() && !s.where.field.empty()) {
    return InvalidArgumentError(prefix + "." + e.field + ": " + e.message);
  }
  return InvalidArgumentError(prefix + ": " + e.field + ": " + e.message);
}
}  // namespace

Status JobSpec::Normalize() {
  if (auto e = NormalizeSpec(*this)) return ToStatus(*this, *e);
  return OkStatus();
}

Status JobSpec::Validate() const {
  if (auto e = CheckSpec(*this)) return ToStatus(*this, *e);
  return OkStatus();
}

Status JobSpec::ValidateAgainstLevels(const std::vector<std::string>& level_names) const {
  const std::pair<const LevelConstraint*, const char*> all[] = {{&constraints.job, "job"},
                                                                {&constraints.tp, "tp"}};
  for (const auto& [c, group] : all) {
    if (c->mode == ConstraintMode::kNone) continue;
    if (c->level == kLevelNvlinkDomain || c->level == kLevelNode) continue;
    if (std::find(level_names.begin(), level_names.end(), c->level) != level_names.end()) continue;
    std::string known = std::string(kLevelNvlinkDomain) + ", " + kLevelNode;
    for (const std::string& n : level_names) known += ", " + n;
    std::string where = c->where.Prefix();
    if (where.empty() || c->where.file.empty()) {
      where = "job " + Quote(name) + ": constraints." + group + "." + ConstraintModeName(c->mode);
    }
    return InvalidArgumentError(where + ": unknown level " + Quote(c->level) +
                                " (this cluster has: " + known + ")");
  }
  return OkStatus();
}

// ---- Durations and parameter counts ----

StatusOr<int64_t> ParseDuration(const std::string& text) {
  const std::string s(Trim(text));
  auto bad = [&]() {
    return InvalidArgumentError(
        "expected a duration such as \"4h\", \"30m\", \"1d2h\", \"90s\" or "
        "seconds, got " +
        Quote(text));
  };
  if (s.empty()) return bad();
  if (std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit((unsigned char)c); })) {
    auto v = ParseInt(s);
    if (!v.ok() || *v <= 0 || *v > (int64_t{1} << 40)) return bad();
    return static_cast<int64_t>(*v);
  }
  // Units must come in order d, h, m, s, each at most once.
  const std::string units = "dhms";
  const int64_t scale[] = {86400, 3600, 60, 1};
  size_t next_unit = 0;
  int64_t total = 0;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = i;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
    if (j == i || j == s.size() || j - i > 9) return bad();
    const size_t u = units.find(static_cast<char>(std::tolower(static_cast<unsigned char>(s[j]))));
    if (u == std::string::npos || u < next_unit) return bad();
    total += std::atoll(s.substr(i, j - i).c_str()) * scale[u];
    next_unit = u + 1;
    i = j + 1;
  }
  if (total <= 0) return bad();
  return total;
}

std::string FormatDuration(int64_t seconds) {
  if (seconds <= 0) return "0s";
  std::string out;
  const std::pair<int64_t, char> parts[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
  for (const auto& [scale, unit] : parts) {
    if (seconds >= scale) {
      out += std::to_string(seconds / scale) + unit;
      seconds %= scale;
    }
  }
  return out;
}

StatusOr<double> ParseParamCount(const std::string& text) {
  std::string s(Trim(text));
  auto bad = [&]() {
    return InvalidArgumentError(
        "expected a parameter count such as \"70B\", \"350M\" or "
        "\"1.8T\", got " +
        Quote(text));
  };
  if (s.empty()) return bad();
  double scale = 1;
  switch (std::toupper(static_cast<unsigned char>(s.back()))) {
    case 'K':
      scale = 1e3;
      break;
    case 'M':
      scale = 1e6;
      break;
    case 'B':
    case 'G':
      scale = 1e9;
      break;
    case 'T':
      scale = 1e12;
      break;
    default:
      break;
  }
  if (scale != 1) s.pop_back();
  auto v = ParseDouble(s);
  if (!v.ok() || !std::isfinite(*v) || *v <= 0) return bad();
  const double params = *v * scale;
  if (params > kMaxParams) return bad();
  return params;
}

}  // namespace toposched::job
