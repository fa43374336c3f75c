#include "sched/scheduler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/time_units.h"
#include "job/job_spec.h"
#include "testing/status_matchers.h"
#include "topo/io/cluster_yaml.h"

namespace toposched::sched {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using job::JobState;

const topo::Cluster& H100() {
  static const topo::Cluster* c = [] {
    StatusOr<topo::Cluster> r = topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) +
                                                              "/data/clusters/h100-2rack.yaml");
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    auto* out = new topo::Cluster(std::move(r).value());
    out->Finalize();
    return out;
  }();
  return *c;
}

const GangPlacer& Placer() {
  static const GangPlacer* p = [] {
    auto r = GangPlacer::Create(H100());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return std::move(r).value().release();
  }();
  return *p;
}

// `gpus` GPUs: TP 8 x DP gpus/8 (or TP gpus when under a node).
job::JobSpec MakeJob(const std::string& name, const std::string& user, int priority, int gpus,
                     int64_t limit_s, const std::string& queue = "default") {
  job::JobSpec j;
  j.name = name;
  j.user = user;
  j.queue = queue;
  j.priority = priority;
  j.layout.tp = std::min(gpus, 8);
  j.layout.pp = 1;
  j.layout.dp = gpus / j.layout.tp;
  j.layout.dp_bytes = int64_t{1} << 30;
  j.layout.tp_bytes = j.layout.tp > 1 ? int64_t{64} << 20 : 0;
  j.layout.pp_bytes = 0;
  j.time_limit_s = limit_s;
  EXPECT_TRUE(j.Normalize().ok()) << name;
  return j;
}

// A scheduler that checks every invariant after every operation.
class Harness {
 public:
  explicit Harness(SchedulerOptions opts = {}) {
    auto s = Scheduler::Create(Placer(), std::move(opts));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    s_ = std::move(s).value();
  }
  Scheduler& s() { return *s_; }

  int64_t Submit(const job::JobSpec& spec, int64_t t_s) {
    auto id = s_->Submit(spec, t_s * kUsPerS);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    Check();
    return id.ok() ? id->value : -1;
  }
  std::vector<int64_t> Schedule(int64_t t_s) {
    auto r = s_->Schedule(t_s * kUsPerS);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    Check();
    std::vector<int64_t> ids;
    if (r.ok()) {
      for (JobId id : *r) ids.push_back(id.value);
    }
    return ids;
  }
  void Complete(int64_t id, int64_t t_s) {
    Status st = s_->Complete(JobId{id}, t_s * kUsPerS);
    EXPECT_TRUE(st.ok()) << st.ToString();
    Check();
  }
  void Cancel(int64_t id, int64_t t_s) {
    Status st = s_->Cancel(JobId{id}, t_s * kUsPerS);
    EXPECT_TRUE(st.ok()) << st.ToString();
    Check();
  }
  void Tick(int64_t t_s) {
    Status st = s_->Tick(t_s * kUsPerS);
    EXPECT_TRUE(st.ok()) << st.ToString();
    Check();
  }
  JobState State(int64_t id) { return s_->State(JobId{id}).value_or(JobState::kFailed); }
  std::string Explain(int64_t id) {
    auto e = s_->Explain(JobId{id});
    EXPECT_TRUE(e.ok());
    return e.ok() ? *e : "";
  }
  // Events of one job as "FROM -> TO: reason" (or "STATE: note").
  std::vector<std::string> EventsOf(int64_t id) {
    std::vector<std::string> out;
    const std::string name = "job-" + std::to_string(id);
    for (const job::JobEvent& e : s_->Events()) {
      if (e.job_id != name) continue;
      std::string line = e.from == e.to ? std::string(job::JobStateName(e.to))
                                        : std::string(job::JobStateName(e.from)) + " -> " +
                                              job::JobStateName(e.to);
      out.push_back(line + ": " + e.reason);
    }
    return out;
  }
  void Check() {
    Status st = s_->CheckInvariants();
    EXPECT_TRUE(st.ok()) << st.ToString();
  }

 private:
  std::unique_ptr<Scheduler> s_;
};

bool Disjoint(const Placement& a, const Placement& b) {
  for (const NodeGpus& x : a.parts) {
    for (const NodeGpus& y : b.parts) {
      if (x.node == y.node && !(x.gpus & y.gpus).empty()) return false;
    }
  }
  return true;
}

TEST(SchedulerTest, PriorityOrderHigherFirst) {
  Harness h;
  const int64_t low = h.Submit(MakeJob("low", "u", 1, 256, 100), 0);
  const int64_t high = h.Submit(MakeJob("high", "u", 5, 256, 100), 1);
  const int64_t mid = h.Submit(MakeJob("mid", "u", 3, 256, 100), 2);
  EXPECT_EQ(h.Schedule(3), std::vector<int64_t>{high});
  EXPECT_EQ(h.State(low), JobState::kPending);
  EXPECT_EQ(h.State(mid), JobState::kPending);
  h.Complete(high, 10);
  EXPECT_EQ(h.Schedule(10), std::vector<int64_t>{mid});
  h.Complete(mid, 20);
  EXPECT_EQ(h.Schedule(20), std::vector<int64_t>{low});
  EXPECT_EQ(h.EventsOf(high),
            (std::vector<std::string>{
                "PENDING: submitted \"high\" (user u, queue default, priority 5, 256 GPUs, "
                "limit 1m40s)",
                "PENDING -> RUNNING: scheduled (256 GPUs)",
                "RUNNING -> COMPLETING: job finished: running epilog",
                "COMPLETING -> COMPLETED: epilog done"}));
  EXPECT_EQ(h.s().cluster_state().ClusterCapacity().free_gpus, 0);
}

TEST(SchedulerTest, FairShareFavoursUserWithLessUsage) {
  Harness h;
  const int64_t a1 = h.Submit(MakeJob("a1", "alice", 1, 128, 1000), 0);
  EXPECT_EQ(h.Schedule(0), std::vector<int64_t>{a1});
  // alice holds half the cluster; her next job was submitted before bob's but bob goes first.
  const int64_t a2 = h.Submit(MakeJob("a2", "alice", 1, 128, 1000), 1);
  const int64_t b1 = h.Submit(MakeJob("b1", "bob", 1, 128, 1000), 2);
  EXPECT_EQ(h.Schedule(3), std::vector<int64_t>{b1});
  EXPECT_EQ(h.State(a2), JobState::kPending);
  EXPECT_THAT(h.Explain(a2), HasSubstr("head of queue, reserved to start at 1000.000000s"))
      << h.Explain(a2);

  // Within one pass usage counts as jobs start: on an empty cluster (room for two of the three),
  // alice's two early jobs do not both go before bob's, with or without backfill.
  Harness g;
  const int64_t x1 = g.Submit(MakeJob("x1", "alice", 1, 128, 100), 0);
  const int64_t x2 = g.Submit(MakeJob("x2", "alice", 1, 128, 100), 1);
  const int64_t y1 = g.Submit(MakeJob("y1", "bob", 1, 128, 100), 2);
  SchedulerOptions no_backfill;
  no_backfill.backfill = false;
  Harness k(no_backfill);
  const int64_t k1 = k.Submit(MakeJob("x1", "alice", 1, 128, 100), 0);
  const int64_t k2 = k.Submit(MakeJob("x2", "alice", 1, 128, 100), 1);
  const int64_t k3 = k.Submit(MakeJob("y1", "bob", 1, 128, 100), 2);
  EXPECT_EQ(k.Schedule(3), (std::vector<int64_t>{k1, k3}));
  EXPECT_EQ(k.State(k2), JobState::kPending);
  EXPECT_EQ(g.Schedule(3), (std::vector<int64_t>{x1, y1}));
  EXPECT_EQ(g.State(x2), JobState::kPending);
}

TEST(SchedulerTest, FairShareWeights) {
  SchedulerOptions o;
  o.user_weights["alice"] = 4;  // alice's share 0.8: 128/256 / 0.8 = 0.625
  o.user_weights["bob"] = 1;    // bob's share 0.2: 64/256 / 0.2 = 1.25
  Harness h(o);
  const int64_t a1 = h.Submit(MakeJob("a1", "alice", 1, 128, 1000), 0);
  const int64_t b1 = h.Submit(MakeJob("b1", "bob", 1, 64, 1000), 0);
  EXPECT_EQ(h.Schedule(0), (std::vector<int64_t>{a1, b1}));
  const int64_t b2 = h.Submit(MakeJob("b2", "bob", 1, 64, 1000), 1);
  const int64_t a2 = h.Submit(MakeJob("a2", "alice", 1, 64, 1000), 2);
  EXPECT_EQ(h.Schedule(3), std::vector<int64_t>{a2});
  EXPECT_EQ(h.State(b2), JobState::kPending);
}

TEST(SchedulerTest, UserAndQueueLimitsKeepJobPendingWithReason) {
  SchedulerOptions o;
  o.user_gpu_limits["alice"] = 128;
  o.queue_gpu_limits["small"] = 16;
  Harness h(o);
  const int64_t a1 = h.Submit(MakeJob("a1", "alice", 5, 128, 1000), 0);
  const int64_t a2 = h.Submit(MakeJob("a2", "alice", 5, 64, 1000), 0);
  const int64_t b1 = h.Submit(MakeJob("b1", "bob", 1, 64, 1000), 0);
  const int64_t q1 = h.Submit(MakeJob("q1", "carol", 1, 16, 1000, "small"), 0);
  const int64_t q2 = h.Submit(MakeJob("q2", "carol", 1, 8, 1000, "small"), 0);
  // q1 before b1: queue "small" has no usage, "default" holds alice's 128 GPUs.
  EXPECT_EQ(h.Schedule(1), (std::vector<int64_t>{a1, q1, b1}));
  EXPECT_EQ(h.State(a2), JobState::kPending);
  EXPECT_EQ(h.Explain(a2),
            "job-2 PENDING: user GPU limit: user \"alice\" holds 128 GPUs, limit 128, job needs "
            "64");
  EXPECT_EQ(h.Explain(q2),
            "job-5 PENDING: queue GPU limit: queue \"small\" holds 16 GPUs, limit 16, job needs 8");
  h.Complete(a1, 10);
  EXPECT_EQ(h.Schedule(10), std::vector<int64_t>{a2});
}

// R1 (128 GPUs, ends at 1000 s) and R2 (64, ends at 5000 s) run; the head job needs 192.
TEST(SchedulerTest, BackfillShortJobStartsLongJobRefused) {
  Harness h;
  const int64_t r1 = h.Submit(MakeJob("r1", "u", 1, 128, 1000), 0);
  const int64_t r2 = h.Submit(MakeJob("r2", "u", 1, 64, 5000), 0);
  EXPECT_EQ(h.Schedule(0), (std::vector<int64_t>{r1, r2}));
  const int64_t head = h.Submit(MakeJob("head", "v", 1, 192, 1000), 10);
  const int64_t shrt = h.Submit(MakeJob("short", "w", 1, 8, 500), 11);
  const int64_t lng = h.Submit(MakeJob("long", "w", 1, 8, 5000), 12);
  EXPECT_EQ(h.Schedule(20), std::vector<int64_t>{shrt});
  EXPECT_EQ(h.State(head), JobState::kPending);
  EXPECT_EQ(h.State(lng), JobState::kPending);
  EXPECT_THAT(h.Explain(head), HasSubstr("reserved to start at 1000.000000s"));
  EXPECT_THAT(h.Explain(lng), HasSubstr("would delay the reservation of job-3 at 1000.000000s"))
      << h.Explain(lng);
  EXPECT_EQ(h.EventsOf(shrt).back(),
            "PENDING -> RUNNING: backfilled (8 GPUs, ends by 520.000000s before the reservation "
            "of job-3 at 1000.000000s)");
  h.Complete(shrt, 400);
  h.Tick(999);
  EXPECT_TRUE(h.Schedule(999).empty());
  h.Tick(1000);  // r1 reaches its limit
  EXPECT_EQ(h.State(r1), JobState::kTimeout);
  // The head job starts at its reserved time: the backfilled job did not delay it.
  EXPECT_EQ(h.Schedule(1000), std::vector<int64_t>{head});
  EXPECT_EQ(h.State(lng), JobState::kPending);
}

// With an epoch clock (the daemon) explanations print UTC date-times, not raw seconds.
TEST(SchedulerTest, EpochClockPrintsUtcDateTimes) {
  SchedulerOptions o;
  o.epoch_clock = true;
  Harness h(o);
  const int64_t t0 = 1796400000;  // 2026-12-04T16:00:00Z
  const int64_t r1 = h.Submit(MakeJob("r1", "u", 1, 128, 1000), t0);
  const int64_t r2 = h.Submit(MakeJob("r2", "u", 1, 64, 5000), t0);
  EXPECT_EQ(h.Schedule(t0), (std::vector<int64_t>{r1, r2}));
  const int64_t head = h.Submit(MakeJob("head", "v", 1, 192, 1000), t0 + 10);
  const int64_t shrt = h.Submit(MakeJob("short", "w", 1, 8, 500), t0 + 11);
  EXPECT_EQ(h.Schedule(t0 + 20), std::vector<int64_t>{shrt});
  EXPECT_THAT(h.Explain(head), HasSubstr("reserved to start at 2026-12-04T16:16:40Z"))
      << h.Explain(head);
  EXPECT_EQ(h.EventsOf(shrt).back(),
            "PENDING -> RUNNING: backfilled (8 GPUs, ends by 2026-12-04T16:08:40Z before the "
            "reservation of job-3 at 2026-12-04T16:16:40Z)");
}

TEST(SchedulerTest, BackfillClearOfReservedGpus) {
  Harness h;
  const int64_t r1 = h.Submit(MakeJob("r1", "u", 1, 128, 1000), 0);
  const int64_t r2 = h.Submit(MakeJob("r2", "u", 1, 64, 5000), 0);
  EXPECT_EQ(h.Schedule(0), (std::vector<int64_t>{r1, r2}));
  const int64_t head = h.Submit(MakeJob("head", "v", 1, 128, 1000), 10);
  const int64_t lng = h.Submit(MakeJob("long", "w", 1, 8, 5000), 11);
  EXPECT_EQ(h.Schedule(20), std::vector<int64_t>{lng});
  EXPECT_THAT(h.EventsOf(lng).back(), HasSubstr("clear of the GPUs reserved for job-3"))
      << h.EventsOf(lng).back();
  h.Complete(r1, 1000);
  EXPECT_EQ(h.Schedule(1000), std::vector<int64_t>{head});
  ASSERT_NE(h.s().PlacementOf(JobId{head}), nullptr);
  EXPECT_TRUE(Disjoint(*h.s().PlacementOf(JobId{head}), *h.s().PlacementOf(JobId{lng})));
}

TEST(SchedulerTest, NoBackfillKeepsStrictOrder) {
  SchedulerOptions o;
  o.backfill = false;
  Harness h(o);
  const int64_t r1 = h.Submit(MakeJob("r1", "u", 1, 192, 1000), 0);
  EXPECT_EQ(h.Schedule(0), std::vector<int64_t>{r1});
  const int64_t head = h.Submit(MakeJob("head", "v", 1, 128, 1000), 1);
  const int64_t small = h.Submit(MakeJob("small", "w", 1, 8, 10), 2);
  EXPECT_TRUE(h.Schedule(3).empty());
  EXPECT_EQ(h.State(head), JobState::kPending);
  EXPECT_EQ(h.State(small), JobState::kPending);
}

TEST(SchedulerTest, PreemptionPicksCheapestVictimsAndRequeues) {
  SchedulerOptions o;
  o.preempt_priority_threshold = 100;
  Harness h(o);
  const int64_t a = h.Submit(MakeJob("a", "u", 1, 64, 0), 0);   // cost 64 * 2 = 128
  const int64_t b = h.Submit(MakeJob("b", "u", 1, 128, 0), 0);  // cost 128 * 2 = 256
  const int64_t c = h.Submit(MakeJob("c", "u", 50, 64, 0), 0);  // cost 64 * 51 = 3264
  EXPECT_EQ(h.Schedule(0).size(), 3u);
  EXPECT_EQ(h.s().cluster_state().ClusterCapacity().free_gpus, 0);

  // Below the threshold: no preemption.
  const int64_t low = h.Submit(MakeJob("low", "v", 99, 64, 0), 5);
  EXPECT_TRUE(h.Schedule(5).empty());
  h.Cancel(low, 6);

  // 128 GPUs: {b} (256) is cheaper than {a, c} (3392); {a} alone frees too little.
  const int64_t p = h.Submit(MakeJob("p", "v", 200, 128, 0), 10);
  EXPECT_EQ(h.Schedule(10), std::vector<int64_t>{p});
  EXPECT_EQ(h.State(a), JobState::kRunning);
  EXPECT_EQ(h.State(c), JobState::kRunning);
  EXPECT_EQ(h.State(b), JobState::kPending);
  EXPECT_EQ(h.EventsOf(b), (std::vector<std::string>{
                               "PENDING: submitted \"b\" (user u, queue default, priority 1, 128 "
                               "GPUs, limit none)",
                               "PENDING -> RUNNING: scheduled (128 GPUs)",
                               "RUNNING -> PREEMPTED: preempted by job-5 (priority 200)",
                               "PREEMPTED -> REQUEUED: requeued after being preempted by job-5 "
                               "(priority 200)",
                               "REQUEUED -> PENDING: back in queue after preemption by job-5"}));
  EXPECT_EQ(h.EventsOf(p).back(),
            "PENDING -> RUNNING: scheduled after preempting job-2 (128 GPUs)");
  EXPECT_EQ(h.s().PlacementOf(JobId{b}), nullptr);

  // 64 GPUs more: the cheapest is a (128), not c.
  const int64_t p2 = h.Submit(MakeJob("p2", "v", 200, 64, 0), 20);
  EXPECT_EQ(h.Schedule(20), std::vector<int64_t>{p2});
  EXPECT_EQ(h.State(a), JobState::kPending);
  EXPECT_EQ(h.State(c), JobState::kRunning);

  // Equal-priority jobs are never victims.
  const int64_t p3 = h.Submit(MakeJob("p3", "v", 200, 64, 0), 30);
  EXPECT_EQ(h.Schedule(30), std::vector<int64_t>{p3});  // c (priority 50) goes, not p or p2
  EXPECT_EQ(h.State(p), JobState::kRunning);
  EXPECT_EQ(h.State(p2), JobState::kRunning);
  EXPECT_EQ(h.State(p3), JobState::kRunning);
  EXPECT_EQ(h.State(c), JobState::kPending);
}

// Holds (the Kubernetes extender's pods): busy for every placement, never a preemption victim,
// untouched by health changes, freed only by ReleaseHold.
TEST(SchedulerTest, HoldsAreBusyAndNeverPreempted) {
  SchedulerOptions o;
  o.preempt_priority_threshold = 100;
  Harness h(o);
  const ClusterState& cs = h.s().cluster_state();
  // Hold every node of leaf1 (gpu017..gpu032).
  int64_t hold = 0;
  for (int n = H100().FindNode("gpu017"); n <= H100().FindNode("gpu032"); ++n) {
    ASSERT_TRUE(h.s().Hold(++hold, {NodeGpus{n, cs.HealthyMask(n)}}).ok());
  }
  h.Check();
  EXPECT_EQ(cs.ClusterCapacity().free_gpus, 128);
  EXPECT_EQ(h.s().Hold(1, {NodeGpus{0, cs.HealthyMask(0)}}).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(h.s().Hold(99, {NodeGpus{H100().FindNode("gpu017"), cs.HealthyMask(0)}}).code(),
            StatusCode::kInvalidArgument);  // held already
  EXPECT_EQ(h.s().Hold(0, {NodeGpus{0, cs.HealthyMask(0)}}).code(), StatusCode::kInvalidArgument);

  const int64_t a = h.Submit(MakeJob("a", "u", 1, 128, 0), 0);
  std::vector<int64_t> started = h.Schedule(0);
  EXPECT_EQ(started, std::vector<int64_t>{a});
  EXPECT_EQ(cs.ClusterCapacity().free_gpus, 0);
  // The high-priority job may preempt a (priority 1), never the holds: it takes a's GPUs.
  const int64_t big = h.Submit(MakeJob("big", "u", 500, 64, 0), 1);
  started = h.Schedule(1);
  EXPECT_EQ(started, std::vector<int64_t>{big});
  EXPECT_EQ(h.State(a), JobState::kPending);
  for (const NodeGpus& p : h.s().PlacementOf(JobId{big})->parts) {
    EXPECT_LT(p.node, H100().FindNode("gpu017")) << "placed on held GPUs";
  }
  EXPECT_EQ(h.s().Holds().size(), 16u);

  // A held GPU going bad fails no job and keeps its hold.
  ASSERT_TRUE(h.s()
                  .SetGpuHealth(H100().FindNode("gpu020"), 3, topo::Health::kUnhealthy, 2 * kUsPerS,
                                "xid 79")
                  .ok());
  h.Check();
  EXPECT_EQ(h.s().Holds().size(), 16u);
  EXPECT_EQ(h.State(big), JobState::kRunning);

  // Released holds free their GPUs for the waiting job.
  for (int64_t id = 1; id <= 16; ++id) ASSERT_TRUE(h.s().ReleaseHold(id).ok());
  EXPECT_EQ(h.s().ReleaseHold(1).code(), StatusCode::kNotFound);
  h.Check();
  EXPECT_EQ(h.Schedule(3), std::vector<int64_t>{a});
}

TEST(SchedulerTest, TimeoutSequence) {
  Harness h;
  const int64_t t = h.Submit(MakeJob("t", "u", 1, 16, 100), 0);
  EXPECT_EQ(h.Schedule(5), std::vector<int64_t>{t});
  h.Tick(104);
  EXPECT_EQ(h.State(t), JobState::kRunning);
  h.Tick(105);
  EXPECT_EQ(h.State(t), JobState::kTimeout);
  EXPECT_EQ(h.s().cluster_state().AllocationCount(), 0u);
  const std::vector<std::string> ev = h.EventsOf(t);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[2], "RUNNING -> COMPLETING: time limit: SIGTERM sent");
  EXPECT_EQ(ev[3], "COMPLETING -> TIMEOUT: time limit: SIGKILL after grace period");

  // With a grace period the GPUs stay held while COMPLETING.
  SchedulerOptions o;
  o.kill_grace_us = 30 * kUsPerS;
  Harness g(o);
  const int64_t u = g.Submit(MakeJob("u", "u", 1, 16, 100), 0);
  EXPECT_EQ(g.Schedule(0), std::vector<int64_t>{u});
  g.Tick(100);
  EXPECT_EQ(g.State(u), JobState::kCompleting);
  EXPECT_TRUE(g.s().cluster_state().HasAllocation(AllocId::Job(u)));
  g.Tick(129);
  EXPECT_EQ(g.State(u), JobState::kCompleting);
  g.Tick(130);
  EXPECT_EQ(g.State(u), JobState::kTimeout);
  EXPECT_FALSE(g.s().cluster_state().HasAllocation(AllocId::Job(u)));
  EXPECT_EQ(g.s().Events().back().time_us, 130 * kUsPerS);
}

TEST(SchedulerTest, CancelPendingAndRunning) {
  Harness h;
  const int64_t run = h.Submit(MakeJob("run", "u", 1, 256, 0), 0);
  const int64_t pend = h.Submit(MakeJob("pend", "u", 1, 8, 0), 0);
  EXPECT_EQ(h.Schedule(0), std::vector<int64_t>{run});
  h.Cancel(pend, 5);
  EXPECT_EQ(h.State(pend), JobState::kCancelled);
  EXPECT_EQ(h.EventsOf(pend).back(), "PENDING -> CANCELLED: cancelled by user");
  h.Cancel(run, 6);
  EXPECT_EQ(h.State(run), JobState::kCancelled);
  EXPECT_EQ(h.EventsOf(run).back(),
            "COMPLETING -> CANCELLED: cancelled by user: SIGKILL after grace period");
  EXPECT_EQ(h.s().cluster_state().ClusterCapacity().free_gpus, 256);
  EXPECT_THAT(h.s().Cancel(JobId{run}, 7),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("job-1: cannot cancel a job in state CANCELLED")));
  EXPECT_THAT(h.s().Complete(JobId{pend}, 7),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("job-2: cannot complete a job in state CANCELLED")));
  EXPECT_THAT(h.s().Cancel(JobId{99}, 7),
              StatusIs(StatusCode::kNotFound, HasSubstr("no job job-99")));
  h.Check();
}

TEST(SchedulerTest, ExplainPendingAndRunning) {
  Harness h;
  const int64_t big = h.Submit(MakeJob("big", "u", 1, 512, 0), 0);
  const int64_t ok = h.Submit(MakeJob("ok", "u", 1, 16, 0), 0);
  EXPECT_EQ(h.Schedule(0), std::vector<int64_t>{ok});
  EXPECT_EQ(h.Explain(big).rfind("job-1 PENDING: unresolvable: ", 0), 0u) << h.Explain(big);
  const std::string e = h.Explain(ok);
  EXPECT_EQ(e.rfind("job-2 RUNNING on ", 0), 0u) << e;
  EXPECT_THAT(e, HasSubstr("predicted"));
  EXPECT_THAT(e, HasSubstr("best possible"));
}

// Waiting for locality: every node has 3 free GPUs, so a 4-GPU data-parallel job fits only
// across nodes. Held to one node it waits until its wait is over, then spans two nodes; with
// the rule off it spans them at once.
TEST(SchedulerTest, LocalityWaitHoldsAJobToOneNodeUntilItsTimeout) {
  for (const int64_t wait_s : {int64_t{-1}, int64_t{100}}) {
    SchedulerOptions o;
    o.locality_wait_us = wait_s < 0 ? -1 : wait_s * kUsPerS;
    Harness h(o);
    for (int n = 0; n < 32; ++n) h.Submit(MakeJob("five-" + std::to_string(n), "u", 0, 5, 0), 0);
    ASSERT_EQ(h.Schedule(0).size(), 32u);
    job::JobSpec dp = MakeJob("dp4", "u", 0, 4, 0);
    dp.layout.tp = 1;
    dp.layout.dp = 4;
    dp.layout.tp_bytes = 0;
    ASSERT_TRUE(dp.Normalize().ok());
    const int64_t id = h.Submit(dp, 1);
    if (wait_s < 0) {
      EXPECT_EQ(h.Schedule(1), std::vector<int64_t>{id});
      continue;
    }
    EXPECT_TRUE(h.Schedule(1).empty());
    EXPECT_EQ(h.State(id), JobState::kPending);
    EXPECT_THAT(h.Explain(id),
                HasSubstr("held to one node while it waits for locality (up to 100 s"))
        << h.Explain(id);
    EXPECT_TRUE(h.Schedule(100).empty());  // 99 s waited
    EXPECT_EQ(h.Schedule(101), std::vector<int64_t>{id});
    const Placement* p = h.s().PlacementOf(JobId{id});
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->parts.size(), 2u);
  }
}

TEST(SchedulerTest, LocalityWaitStartsAJobThatFitsOneNodeAtOnce) {
  SchedulerOptions o;
  o.locality_wait_us = 3600 * kUsPerS;
  Harness h(o);
  const int64_t id = h.Submit(MakeJob("eight", "u", 0, 8, 0), 0);
  EXPECT_EQ(h.Schedule(0), std::vector<int64_t>{id});
  EXPECT_EQ(h.s().PlacementOf(JobId{id})->parts.size(), 1u);
  SchedulerOptions bad;
  bad.locality_wait_us = -2;
  EXPECT_THAT(bad.Validate(), StatusIs(StatusCode::kInvalidArgument,
                                       HasSubstr("locality_wait_us must be >= 0, or -1 (off)")));
}

// The backfill shadow (the head job's reserved GPUs blocked in a copy of the state) must not
// share an allocation id with a hold: hold h is allocation −h, so a shadow id of −1 failed to
// block anything while hold 1 lived, and a job without a time limit backfilled onto the head
// job's reserved node. Four 8-GPU nodes: hold 1 on dgx1, a 16-GPU job on two others until
// 1000 s, a 24-GPU head that needs the three, and an 8-GPU job with no limit that fits only on
// the head's free reserved node.
TEST(SchedulerTest, BackfillShadowBlocksTheReservationWhileHoldOneLives) {
  auto c = topo::io::ReadClusterYamlFile(std::string(TS_SOURCE_DIR) +
                                         "/tests/sched/testdata/v100-4node.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  c->Finalize();
  auto placer = GangPlacer::Create(*c);
  ASSERT_TRUE(placer.ok());
  auto s = Scheduler::Create(**placer);
  ASSERT_TRUE(s.ok());
  Scheduler& sc = **s;
  ASSERT_TRUE(sc.Hold(1, {NodeGpus{0, GpuMask::FirstN(8)}}).ok());
  auto running = sc.Submit(MakeJob("running", "u", 0, 16, 1000), 0);
  ASSERT_TRUE(running.ok());
  ASSERT_EQ(sc.Schedule(0).value(), std::vector<JobId>{*running});
  auto head = sc.Submit(MakeJob("head", "u", 0, 24, 1000), 1 * kUsPerS);
  auto small = sc.Submit(MakeJob("small", "u", 0, 8, 0), 2 * kUsPerS);
  ASSERT_TRUE(head.ok() && small.ok());
  EXPECT_TRUE(sc.Schedule(3 * kUsPerS).value().empty());
  EXPECT_EQ(sc.State(JobId{*small}).value(), JobState::kPending);
  auto why = sc.Explain(JobId{*small});
  ASSERT_TRUE(why.ok());
  EXPECT_THAT(*why, HasSubstr("would delay the reservation of job-2")) << *why;
  EXPECT_TRUE(sc.CheckInvariants().ok());
  EXPECT_THAT(sc.Hold(int64_t{1} << 62, {NodeGpus{1, GpuMask::FirstN(1)}}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("hold id must be in [1, 2^60)")));
  EXPECT_THAT(sc.Hold(int64_t{1} << 60, {NodeGpus{1, GpuMask::FirstN(1)}}),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("hold id must be in [1, 2^60)")));
}

}  // namespace
}  // namespace toposched::sched
