// A Scheduler on an example cluster whose jobs declare their run times (DeclaredRunTimes, the
// estimator of the wait-or-spread and backfill-by-estimates tests), and whole-node TP 8 jobs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "job/job_spec.h"
#include "sched/run_time.h"
#include "sched/scheduler.h"
#include "testing/placers.h"

namespace toposched::testing {

inline constexpr int64_t kDeclaredSec = 1000000;

// TP 8 x DP gpus/8 (1 GiB per DP all-reduce, 64 MiB per TP all-reduce), user "u".
inline job::JobSpec WholeNodeJob(const std::string& name, int gpus, int64_t limit_s = 0) {
  job::JobSpec j;
  j.name = name;
  j.user = "u";
  j.layout.tp = 8;
  j.layout.pp = 1;
  j.layout.dp = gpus / 8;
  j.layout.dp_bytes = int64_t{1} << 30;
  j.layout.tp_bytes = int64_t{64} << 20;
  j.time_limit_s = limit_s;
  EXPECT_TRUE(j.Normalize().ok()) << name;
  return j;
}

class DeclaredScheduler {
 public:
  DeclaredScheduler(const std::string& cluster, const sched::SchedulerOptions& options) {
    auto s = sched::Scheduler::Create(ExamplePlacer(cluster), options);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    s_ = std::move(s).value();
    runs_.Attach(s_.get());
    s_->SetRunTimeEstimator(&runs_);
  }
  // Submits at t_s seconds, declaring `run_s` on its best placement with `comm` of a step
  // communicating there.
  int64_t Submit(const job::JobSpec& spec, double run_s, double comm, int64_t t_s) {
    auto id = s_->Submit(spec, t_s * kDeclaredSec);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_TRUE(runs_.Declare(*id, run_s, comm).ok());
    return id->value;
  }
  // One pass at t_s seconds (invariants checked): the ids started.
  std::vector<int64_t> Schedule(int64_t t_s) {
    auto r = s_->Schedule(t_s * kDeclaredSec);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(s_->CheckInvariants().ok());
    std::vector<int64_t> ids;
    if (r.ok()) {
      for (JobId id : *r) ids.push_back(id.value);
    }
    return ids;
  }
  sched::Scheduler& s() { return *s_; }
  const sched::Scheduler& s() const { return *s_; }

 private:
  std::unique_ptr<sched::Scheduler> s_;
  sched::DeclaredRunTimes runs_;
};

}  // namespace toposched::testing
