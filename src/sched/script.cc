#include "sched/script.h"

#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "core/source_error.h"
#include "core/strings.h"
#include "core/time_units.h"
#include "job/job_spec.h"
#include "placer/policy.h"
#include "sched/input.h"
#include "sched/run_time.h"
#include "sched/scheduler.h"

namespace toposched::sched {

namespace {

struct Line {
  int number = 0;
  std::vector<std::string> words;
};

class Runner {
 public:
  Runner(const topo::Cluster& cluster, std::string source)
      : cluster_(cluster), source_(std::move(source)) {}

  StatusOr<std::string> Run(const std::string& text);

 private:
  Status Err(const Line& l, const std::string& msg) const {
    return SourceError(source_, l.number, msg);
  }
  Status Option(const Line& l, const std::string& kv);
  Status Start(const Line& l);
  Status Command(const Line& l, int64_t t_us);
  // The line as a scheduler input (a line that is not a query).
  StatusOr<Input> ParseInput(const Line& l);
  // A malformed line is an error; what the scheduler refuses goes to `refused` (printed).
  Status Query(const Line& l, Status& refused);
  StatusOr<job::JobSpec> MakeJob(const Line& l);
  StatusOr<JobId> IdOf(const Line& l, size_t word) const;
  StatusOr<int> Node(const Line& l, size_t word) const;
  StatusOr<int> Int(const Line& l, size_t word, const char* what) const;
  StatusOr<topo::Health> HealthAt(const Line& l, size_t word) const;
  std::string Rest(const Line& l, size_t from) const;
  std::string Show(JobId id) const;
  void Ranks(JobId id);
  void Out(const std::string& s) { out_ += "  " + s + "\n"; }

  const topo::Cluster& cluster_;
  std::string source_;
  std::string policy_ = "toposched";
  SchedulerOptions opts_;
  std::unique_ptr<GangPlacer> placer_;
  std::unique_ptr<Scheduler> sched_;
  DeclaredRunTimes run_times_;
  // Per submit line being parsed: its declared run time (s, 0: none) and communication share.
  double run_s_ = 0, comm_share_ = 0, hide_factor_ = 0;
  std::string group_;  // the submit line's group=, "" for a plain job
  std::map<std::string, JobId> ids_;
  std::string out_;
  size_t logged_ = 0;
  int64_t last_t_ = 0;
};

StatusOr<int> Runner::Int(const Line& l, size_t word, const char* what) const {
  if (word >= l.words.size()) return Err(l, std::string("missing ") + what);
  auto v = ParseInt(l.words[word]);
  if (!v.ok())
    return Err(l, std::string(what) + ": expected an integer, got \"" + l.words[word] + "\"");
  return static_cast<int>(*v);
}

StatusOr<JobId> Runner::IdOf(const Line& l, size_t word) const {
  if (word >= l.words.size()) return Err(l, "missing job name");
  auto it = ids_.find(l.words[word]);
  if (it == ids_.end()) return Err(l, "no job named \"" + l.words[word] + "\"");
  return it->second;
}

StatusOr<int> Runner::Node(const Line& l, size_t word) const {
  if (word >= l.words.size()) return Err(l, "missing node name");
  for (size_t n = 0; n < cluster_.nodes.size(); ++n) {
    if (cluster_.nodes[n].name == l.words[word]) return static_cast<int>(n);
  }
  return Err(l, "no node named \"" + l.words[word] + "\"");
}

StatusOr<topo::Health> Runner::HealthAt(const Line& l, size_t word) const {
  if (word >= l.words.size()) return Err(l, "missing health (healthy, degraded, unhealthy)");
  auto h = topo::ParseHealth(l.words[word]);
  if (!h.ok()) return Err(l, h.status().message());
  return *h;
}

std::string Runner::Rest(const Line& l, size_t from) const {
  std::string s;
  for (size_t i = from; i < l.words.size(); ++i) s += (s.empty() ? "" : " ") + l.words[i];
  return s;
}

Status Runner::Option(const Line& l, const std::string& kv) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos) return Err(l, "option \"" + kv + "\": expected KEY=VALUE");
  const std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
  if (key == "policy") {
    policy_ = value;
    return OkStatus();
  }
  auto num = ParseInt(value);
  if (!num.ok()) return Err(l, "option " + key + ": expected an integer, got \"" + value + "\"");
  const int64_t v = *num;
  auto suffix = [&](const char* prefix) -> std::string {
    const std::string p = prefix;
    return key.rfind(p, 0) == 0 ? key.substr(p.size()) : "";
  };
  if (key == "preempt") {
    opts_.preempt_priority_threshold = static_cast<int>(v);
  } else if (key == "backfill") {
    opts_.backfill = v != 0;
  } else if (key == "grace") {
    opts_.kill_grace_us = v * kUsPerS;
  } else if (key == "half_life") {
    opts_.fair_share_half_life_s = v;
  } else if (key == "grow") {
    opts_.elastic_grow = v != 0;
  } else if (key == "locality_wait") {
    opts_.locality_wait_us = v < 0 ? -1 : v * kUsPerS;
  } else if (key == "wait_or_spread") {
    opts_.wait_or_spread = v != 0;
  } else if (key == "backfill_by_estimates") {
    opts_.backfill_by_estimates = v != 0;
  } else if (key == "consolidate") {
    opts_.consolidate = v != 0;
  } else if (key == "max_moves_per_job") {
    opts_.max_moves_per_job = static_cast<int>(v);
  } else if (key == "max_moves_per_hour") {
    opts_.max_moves_per_hour = static_cast<int>(v);
  } else if (key == "shrink") {
    opts_.elastic_shrink = v != 0;
  } else if (std::string u = suffix("user_weight."); !u.empty()) {
    opts_.user_weights[u] = static_cast<double>(v);
  } else if (std::string q = suffix("queue_weight."); !q.empty()) {
    opts_.queue_weights[q] = static_cast<double>(v);
  } else if (std::string ul = suffix("user_limit."); !ul.empty()) {
    opts_.user_gpu_limits[ul] = static_cast<int>(v);
  } else if (std::string ql = suffix("queue_limit."); !ql.empty()) {
    opts_.queue_gpu_limits[ql] = static_cast<int>(v);
  } else {
    return Err(l, "unknown option \"" + key + "\"");
  }
  return OkStatus();
}

Status Runner::Start(const Line& l) {
  auto po = PolicyOptions(policy_);
  if (!po.ok()) return Err(l, po.status().message());
  auto placer = GangPlacer::Create(cluster_, *po);
  if (!placer.ok()) return Err(l, placer.status().message());
  placer_ = std::move(placer).value();
  SchedulerOptions o = opts_;
  if (PolicyWaitsForLocality(policy_) && o.locality_wait_us < 0) {
    o.locality_wait_us = kDefaultLocalityWaitS * kUsPerS;
  }
  auto s = Scheduler::Create(*placer_, o);
  if (!s.ok()) return Err(l, s.status().message());
  sched_ = std::move(s).value();
  run_times_.Attach(sched_.get());
  sched_->SetRunTimeEstimator(&run_times_);
  return OkStatus();
}

StatusOr<job::JobSpec> Runner::MakeJob(const Line& l) {
  if (l.words.size() < 3) return Err(l, "submit: missing job name");
  job::JobSpec j;
  j.name = l.words[2];
  j.user = "user";
  run_s_ = 0;
  comm_share_ = 0;
  hide_factor_ = 0;
  group_.clear();
  int gpus = 0, tp = 0, pp = 1, dp = 0, min = 0, max = 0;
  auto level = [&](const std::string& v, job::LevelConstraint& c) -> Status {
    const size_t colon = v.find(':');
    const std::string mode = colon == std::string::npos ? "" : v.substr(colon + 1);
    if (mode != "required" && mode != "preferred") {
      return Err(l, "constraint \"" + v + "\": expected LEVEL:required or LEVEL:preferred");
    }
    c.level = v.substr(0, colon);
    c.mode = mode == "required" ? job::ConstraintMode::kRequired : job::ConstraintMode::kPreferred;
    return OkStatus();
  };
  for (size_t i = 3; i < l.words.size(); ++i) {
    const std::string& kv = l.words[i];
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) return Err(l, "submit: \"" + kv + "\": expected KEY=VALUE");
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "user") {
      j.user = v;
    } else if (k == "queue") {
      j.queue = v;
    } else if (k == "group") {
      if (v.empty()) return Err(l, "submit group: expected a pod group name");
      group_ = v;
    } else if (k == "model") {
      j.constraints.gpu_model = v;
    } else if (k == "on_failure") {
      if (v == "requeue") {
        j.on_failure = job::FailurePolicy::kRequeue;
      } else if (v == "shrink") {
        j.on_failure = job::FailurePolicy::kShrink;
      } else if (v == "fail") {
        j.on_failure = job::FailurePolicy::kFail;
      } else {
        return Err(l, "on_failure: expected requeue, shrink or fail, got \"" + v + "\"");
      }
    } else if (k == "on_degraded") {
      if (v == "continue") {
        j.on_degraded = job::DegradedPolicy::kContinue;
      } else if (v == "wait") {
        j.on_degraded = job::DegradedPolicy::kWait;
      } else {
        return Err(l, "on_degraded: expected continue or wait, got \"" + v + "\"");
      }
    } else if (k == "job") {
      RETURN_IF_ERROR(level(v, j.constraints.job));
    } else if (k == "tpc") {
      RETURN_IF_ERROR(level(v, j.constraints.tp));
    } else {
      auto n = ParseInt(v);
      if (!n.ok()) return Err(l, "submit " + k + ": expected an integer, got \"" + v + "\"");
      const int x = static_cast<int>(*n);
      if (k == "prio") {
        j.priority = x;
      } else if (k == "gpus") {
        gpus = x;
      } else if (k == "tp") {
        tp = x;
      } else if (k == "pp") {
        pp = x;
      } else if (k == "dp") {
        dp = x;
      } else if (k == "limit") {
        j.time_limit_s = *n;
      } else if (k == "ckpt") {
        j.checkpoint_interval_s = *n;
      } else if (k == "restart") {
        j.restart_cost_s = *n;
      } else if (k == "run") {
        if (*n <= 0 || *n > 1000000000) {
          return Err(l, "submit run: expected seconds in [1, 1000000000], got \"" + v + "\"");
        }
        run_s_ = static_cast<double>(*n);
      } else if (k == "comm") {
        if (*n < 0 || *n > 100) return Err(l, "submit comm: expected a percent in [0, 100]");
        comm_share_ = static_cast<double>(*n) / 100;
      } else if (k == "hide") {
        if (*n < 1 || *n > 100000000) {
          return Err(l, "submit hide: expected a percent in [1, 100000000], got \"" + v + "\"");
        }
        hide_factor_ = static_cast<double>(*n) / 100;
      } else if (k == "min") {
        min = x;
      } else if (k == "max") {
        max = x;
      } else {
        return Err(l, "submit: unknown key \"" + k + "\"");
      }
    }
  }
  if (gpus > 0) {
    tp = std::min(gpus, 8);
    dp = gpus / tp;
    pp = 1;
  }
  if (tp <= 0 || dp <= 0) return Err(l, "submit: give gpus=G or tp=, dp= (and pp=)");
  j.layout.tp = tp;
  j.layout.pp = pp;
  j.layout.dp = dp;
  j.layout.dp_bytes = int64_t{1} << 30;
  j.layout.tp_bytes = tp > 1 ? int64_t{64} << 20 : 0;
  j.layout.pp_bytes = pp > 1 ? int64_t{64} << 20 : 0;
  if (min > 0 || max > 0) j.elastic = job::ElasticRange{min, max};
  if (Status st = j.Normalize(); !st.ok()) return Err(l, st.message());
  return j;
}

std::string Runner::Show(JobId id) const {
  const Placement* p = sched_->PlacementOf(id);
  const std::string name = "job-" + std::to_string(id.value);
  if (p == nullptr) return name + " holds no GPUs";
  const topo::Cluster& c = sched_->placer().cluster();
  std::string s = name + " on " + p->domain + ":";
  for (const NodeGpus& g : p->parts) {
    std::vector<int> ids;
    for (int i = 0; i < static_cast<int>(c.topology(g.node).gpus.size()); ++i) {
      if (g.gpus.test(i)) ids.push_back(i);
    }
    s += " " + c.nodes[g.node].name + "[" + FormatIntList(ids) + "]";
  }
  char buf[96];
  std::snprintf(buf, sizeof buf, "; predicted %.3f ms, best possible %.3f ms", p->predicted_ms,
                p->best_possible_ms);
  return s + buf;
}

void Runner::Ranks(JobId id) {
  const Placement* p = sched_->PlacementOf(id);
  if (p == nullptr) return;
  const topo::Cluster& c = sched_->placer().cluster();
  for (const RankSlot& r : p->ranks) {
    const topo::NodeTopology& t = c.topology(r.node);
    Out("rank " + std::to_string(r.rank) + ": " + c.nodes[r.node].name + " GPU " +
        std::to_string(t.gpus[r.gpu].index) + " NIC " + (r.nic >= 0 ? t.nics[r.nic].name : "-"));
  }
}

StatusOr<Input> Runner::ParseInput(const Line& l) {
  const std::string& cmd = l.words[1];
  if (cmd == "submit") {
    ASSIGN_OR_RETURN(job::JobSpec spec, MakeJob(l));
    if (ids_.count(spec.name)) return Err(l, "job name \"" + spec.name + "\" used twice");
    if (!group_.empty()) return Input{SubmitPodGroup{std::move(spec), group_}};
    return Input{SubmitJob{std::move(spec)}};
  }
  if (cmd == "schedule") return Input{SchedulePass{}};
  if (cmd == "tick") return Input{Tick{}};
  if (cmd == "complete" || cmd == "cancel") {
    ASSIGN_OR_RETURN(JobId id, IdOf(l, 2));
    if (cmd == "complete") return Input{CompleteJob{JobId{id}, {}}};
    return Input{CancelJob{JobId{id}}};
  }
  if (cmd == "priority") {
    ASSIGN_OR_RETURN(JobId id, IdOf(l, 2));
    ASSIGN_OR_RETURN(int p, Int(l, 3, "priority"));
    return Input{SetJobPriority{JobId{id}, p}};
  }
  if (cmd == "node-health") {
    ASSIGN_OR_RETURN(int node, Node(l, 2));
    ASSIGN_OR_RETURN(topo::Health h, HealthAt(l, 3));
    return Input{HealthReport{HealthTarget::kNode, node, 0, h, Rest(l, 4)}};
  }
  if (cmd == "gpu-health" || cmd == "nic-health" || cmd == "nvlink-health") {
    ASSIGN_OR_RETURN(int node, Node(l, 2));
    ASSIGN_OR_RETURN(int pos, Int(l, 3, cmd == "nic-health" ? "NIC position" : "GPU position"));
    ASSIGN_OR_RETURN(topo::Health h, HealthAt(l, 4));
    const HealthTarget target = cmd == "gpu-health"   ? HealthTarget::kGpu
                                : cmd == "nic-health" ? HealthTarget::kNic
                                                      : HealthTarget::kNvlink;
    return Input{HealthReport{target, node, pos, h, Rest(l, 5)}};
  }
  if (cmd == "drain" || cmd == "resume") {
    ASSIGN_OR_RETURN(int node, Node(l, 2));
    return Input{DrainNode{node, cmd == "drain", ""}};
  }
  return Err(l, "unknown command \"" + cmd + "\"");
}

Status Runner::Query(const Line& l, Status& refused) {
  const std::string& cmd = l.words[1];
  if (cmd == "capacity") {
    const Capacity c = sched_->cluster_state().ClusterCapacity();
    Out("free " + std::to_string(c.free_gpus) + "/" + std::to_string(c.total_gpus) +
        " GPUs, healthy " + std::to_string(c.healthy_gpus) + ", fully free nodes " +
        std::to_string(c.fully_free_nodes) + ", allocations " +
        std::to_string(sched_->cluster_state().AllocationCount()));
    return OkStatus();
  }
  ASSIGN_OR_RETURN(JobId id, IdOf(l, 2));
  if (cmd == "show") Out(Show(id));
  if (cmd == "ranks") Ranks(id);
  if (cmd == "explain") {
    auto e = sched_->Explain(id);
    if (e.ok()) {
      Out(*e);
    } else {
      refused = e.status();
    }
  }
  return OkStatus();
}

Status Runner::Command(const Line& l, int64_t t) {
  Status st = OkStatus();
  const std::string& cmd = l.words[1];
  if (cmd != "explain" && cmd != "show" && cmd != "ranks" && cmd != "capacity") {
    ASSIGN_OR_RETURN(Input in, ParseInput(l));
    std::string name;
    if (const auto* s = std::get_if<SubmitJob>(&in)) name = s->spec.name;
    if (const auto* s = std::get_if<SubmitPodGroup>(&in)) name = s->spec.name;
    StatusOr<Applied> a = sched_->Apply(in, t);
    if (!a.ok()) {
      st = a.status();
    } else if (!name.empty()) {
      ids_[name] = a->job;
      if (run_s_ > 0) RETURN_IF_ERROR(run_times_.Declare(a->job, run_s_, comm_share_));
      if (hide_factor_ > 0) {
        RETURN_IF_ERROR(run_times_.DeclareHideFactor(a->job, hide_factor_));
      }
    }
  } else {
    RETURN_IF_ERROR(Query(l, st));
  }
  const auto& ev = sched_->Events();
  for (; logged_ < ev.size(); ++logged_) Out(job::FormatEvent(ev[logged_]));
  if (!st.ok()) Out("error: " + st.message());
  if (Status inv = sched_->CheckInvariants(); !inv.ok()) {
    return InternalError(source_ + ":" + std::to_string(l.number) + ": " + inv.message());
  }
  return OkStatus();
}

StatusOr<std::string> Runner::Run(const std::string& text) {
  std::istringstream in(text);
  std::string raw;
  int number = 0;
  while (std::getline(in, raw)) {
    ++number;
    if (size_t hash = raw.find('#'); hash != std::string::npos) raw.resize(hash);
    Line l{number, {}};
    std::istringstream ws(raw);
    for (std::string w; ws >> w;) l.words.push_back(w);
    if (l.words.empty()) continue;
    if (l.words[0] == "option") {
      if (sched_) return Err(l, "option after the first command");
      for (size_t i = 1; i < l.words.size(); ++i) RETURN_IF_ERROR(Option(l, l.words[i]));
      continue;
    }
    auto t = ParseInt(l.words[0]);
    if (!t.ok() || *t < 0) return Err(l, "expected a time in seconds, got \"" + l.words[0] + "\"");
    if (*t < last_t_) return Err(l, "time goes backwards");
    if (l.words.size() < 2) return Err(l, "missing command");
    last_t_ = *t;
    if (!sched_) RETURN_IF_ERROR(Start(l));
    out_ += "> " + Rest(l, 0) + "\n";
    RETURN_IF_ERROR(Command(l, *t * kUsPerS));
  }
  return out_;
}

}  // namespace

StatusOr<std::string> RunScript(const topo::Cluster& cluster, const std::string& text,
                                const std::string& source) {
  Runner r(cluster, source);
  return r.Run(text);
}

}  // namespace toposched::sched
