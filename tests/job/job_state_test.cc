#include "job/job_state.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "testing/status_matchers.h"

namespace toposched::job {
namespace {

using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

using S = JobState;

std::vector<S> AllStates() {
  std::vector<S> out;
  for (int i = 0; i < kNumJobStates; ++i) out.push_back(static_cast<S>(i));
  return out;
}

TEST(JobState, NamesRoundTrip) {
  const std::pair<S, const char*> names[] = {
      {S::kPending, "PENDING"},     {S::kRunning, "RUNNING"},     {S::kCompleting, "COMPLETING"},
      {S::kCompleted, "COMPLETED"}, {S::kFailed, "FAILED"},       {S::kCancelled, "CANCELLED"},
      {S::kTimeout, "TIMEOUT"},     {S::kPreempted, "PREEMPTED"}, {S::kNodeFail, "NODE_FAIL"},
      {S::kRequeued, "REQUEUED"}};
  for (const auto& [s, name] : names) {
    EXPECT_STREQ(ToString(s), name);
    auto p = ParseJobState(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ(*p, s);
  }
  EXPECT_EQ(*ParseJobState("node_fail"), S::kNodeFail);
  EXPECT_EQ(*ParseJobState("CG"), S::kCompleting);
  EXPECT_EQ(*ParseJobState(" pd "), S::kPending);
  auto bad = ParseJobState("DONE");
  ASSERT_THAT(bad, StatusIs(StatusCode::kInvalidArgument, HasSubstr("\"DONE\"")));
}

// The whole table: exactly these pairs are legal.
TEST(JobState, TransitionTable) {
  const std::set<std::pair<S, S>> legal = {
      {S::kPending, S::kRunning},     {S::kPending, S::kCancelled},
      {S::kPending, S::kFailed},      {S::kRunning, S::kCompleting},
      {S::kRunning, S::kFailed},      {S::kRunning, S::kCancelled},
      {S::kRunning, S::kTimeout},     {S::kRunning, S::kPreempted},
      {S::kRunning, S::kNodeFail},    {S::kCompleting, S::kCompleted},
      {S::kCompleting, S::kFailed},   {S::kCompleting, S::kCancelled},
      {S::kCompleting, S::kTimeout},  {S::kCompleting, S::kPreempted},
      {S::kCompleting, S::kNodeFail}, {S::kFailed, S::kRequeued},
      {S::kPreempted, S::kRequeued},  {S::kNodeFail, S::kRequeued},
      {S::kRequeued, S::kPending},    {S::kRequeued, S::kCancelled},
  };
  for (S from : AllStates()) {
    for (S to : AllStates()) {
      EXPECT_EQ(IsLegalTransition(from, to), legal.count({from, to}) == 1)
          << ToString(from) << " -> " << ToString(to);
    }
  }
  for (S s : {S::kCompleted, S::kCancelled, S::kTimeout}) {
    EXPECT_TRUE(IsFinal(s));
    for (S to : AllStates()) EXPECT_FALSE(IsLegalTransition(s, to));
  }
  EXPECT_FALSE(IsFinal(S::kFailed));  // may be requeued
  EXPECT_TRUE(HoldsResources(S::kCompleting));
  EXPECT_FALSE(HoldsResources(S::kPending));
}

TEST(JobRecord, Paths) {
  struct Case {
    const char* what;
    std::vector<S> path;  // after the initial PENDING
    bool ok;              // every step legal
  };
  const Case cases[] = {
      {"normal completion", {S::kRunning, S::kCompleting, S::kCompleted}, true},
      {"no shortcut to COMPLETED", {S::kRunning, S::kCompleted}, false},
      {"cancel while pending", {S::kCancelled}, true},
      {"preempt and requeue",
       {S::kRunning, S::kPreempted, S::kRequeued, S::kPending, S::kRunning},
       true},
      {"node failure requeue", {S::kRunning, S::kNodeFail, S::kRequeued, S::kPending}, true},
      {"failure requeue", {S::kRunning, S::kFailed, S::kRequeued, S::kPending}, true},
      {"no run from PENDING to COMPLETING", {S::kCompleting}, false},
      {"nothing after COMPLETED",
       {S::kRunning, S::kCompleting, S::kCompleted, S::kRequeued},
       false},
      {"requeue must pass PENDING", {S::kRunning, S::kPreempted, S::kRequeued, S::kRunning}, false},
      {"TIMEOUT is final", {S::kRunning, S::kTimeout, S::kRequeued}, false},
      {"no self transition", {S::kPending}, false},
  };
  for (const Case& c : cases) {
    JobRecord r("job-1", 0);
    bool all_ok = true;
    int64_t t = 0;
    for (S to : c.path) {
      const S before = r.state();
      const size_t events = r.events().size();
      Status s = r.Transition(t += 10, to, "test");
      if (!s.ok()) {
        all_ok = false;
        EXPECT_THAT(s, StatusIs(StatusCode::kFailedPrecondition,
                                HasSubstr(std::string(ToString(before)) + " -> " + ToString(to))))
            << c.what;
        EXPECT_EQ(r.state(), before) << c.what;
        EXPECT_EQ(r.events().size(), events) << c.what;
        break;
      }
      EXPECT_EQ(r.state(), to);
      EXPECT_EQ(r.events().back().from, before);
      EXPECT_EQ(r.events().back().to, to);
      EXPECT_EQ(r.events().back().job_id, "job-1");
      EXPECT_EQ(r.events().back().time_us, t);
    }
    EXPECT_EQ(all_ok, c.ok) << c.what;
  }
}

TEST(JobRecord, EventsChainAndCountRequeues) {
  JobRecord r("job-9", 100);
  ASSERT_TRUE(r.Transition(200, S::kRunning, "placed on leaf0").ok());
  ASSERT_TRUE(r.Note(250, "shrunk to 3 replicas").ok());
  ASSERT_TRUE(r.Transition(300, S::kNodeFail, "gpu017 down").ok());
  ASSERT_TRUE(r.Transition(300, S::kRequeued, "on_failure: requeue").ok());
  ASSERT_TRUE(r.Transition(301, S::kPending, "back in queue").ok());
  EXPECT_EQ(r.requeue_count(), 1);
  ASSERT_EQ(r.events().size(), 5u);
  EXPECT_EQ(r.events()[1].from, S::kRunning);
  EXPECT_EQ(r.events()[1].to, S::kRunning);
  for (size_t i = 1; i < r.events().size(); ++i) {
    EXPECT_EQ(r.events()[i].from, r.events()[i - 1].to);
    EXPECT_GE(r.events()[i].time_us, r.events()[i - 1].time_us);
  }
  EXPECT_EQ(FormatEvent(r.events()[2]), "0.000300s job-9 RUNNING -> NODE_FAIL: gpu017 down");
  EXPECT_EQ(FormatEvent(r.events()[1]), "0.000250s job-9 RUNNING: shrunk to 3 replicas");
}

TEST(JobRecord, BadTimeOrReason) {
  JobRecord r("j", 1000);
  EXPECT_THAT(r.Transition(999, S::kRunning, "early"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("j: event at 999 us is before the last one at 1000 us")));
  EXPECT_THAT(r.Transition(1000, S::kRunning, ""),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("j: a transition needs a reason")));
  EXPECT_EQ(r.state(), S::kPending);
  ASSERT_TRUE(r.Transition(2000, S::kRunning, "go").ok());
  EXPECT_THAT(r.Note(1500, "late"),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("j: event at 1500 us is before the last one at 2000 us")));
  EXPECT_TRUE(r.events().size() == 1);
}

TEST(JobRecord, TimeoutSigtermThenSigkill) {
  JobRecord r("train", 0);
  ASSERT_TRUE(r.Transition(1'000'000, S::kRunning, "started").ok());
  const int64_t limit = 4'000'000, grace = 30'000'000;
  ASSERT_TRUE(r.Timeout(limit, grace).ok());
  EXPECT_EQ(r.state(), S::kCompleting);
  EXPECT_EQ(r.events().back().reason, "time limit: SIGTERM sent");
  ASSERT_EQ(r.kill_deadline_us(), limit + grace);
  EXPECT_FALSE(r.AdvanceTo(limit + grace - 1));  // still in the grace period
  EXPECT_EQ(r.state(), S::kCompleting);
  EXPECT_TRUE(r.AdvanceTo(limit + grace + 5'000'000));  // the loop woke up late
  EXPECT_EQ(r.state(), S::kTimeout);
  const JobEvent& kill = r.events().back();
  EXPECT_EQ(kill.from, S::kCompleting);
  EXPECT_EQ(kill.to, S::kTimeout);
  EXPECT_EQ(kill.time_us, limit + grace);  // stamped at the deadline, not the wake-up
  EXPECT_EQ(kill.reason, "time limit: SIGKILL after grace period");
  EXPECT_FALSE(r.kill_deadline_us().has_value());
  EXPECT_FALSE(r.AdvanceTo(limit + grace * 10));
  EXPECT_EQ(r.events().size(), 3u);
}

TEST(JobRecord, TimeoutExitsWithinGrace) {
  JobRecord r("train", 0);
  ASSERT_TRUE(r.Transition(0, S::kRunning, "started").ok());
  ASSERT_TRUE(r.Timeout(100, 50).ok());
  ASSERT_TRUE(r.ProcessesExited(120).ok());
  EXPECT_EQ(r.state(), S::kTimeout);
  EXPECT_EQ(r.events().back().time_us, 120);
  EXPECT_EQ(r.events().back().reason, "time limit: exited after SIGTERM");
  EXPECT_THAT(r.ProcessesExited(130),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("train: no termination pending (state TIMEOUT)")));
}

TEST(JobRecord, TimeoutZeroGraceAndEdgeCases) {
  JobRecord r("j", 0);
  EXPECT_THAT(r.Timeout(10, 5),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("j: cannot terminate a job in state PENDING (time limit): only "
                                 "RUNNING -> COMPLETING")));  // still PENDING
  ASSERT_TRUE(r.Transition(0, S::kRunning, "go").ok());
  EXPECT_THAT(r.Timeout(10, -1),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr("j: negative grace period")));
  EXPECT_THAT(r.Terminate(10, 5, S::kRunning, "x"),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("j: illegal transition COMPLETING -> RUNNING (x)")));
  EXPECT_THAT(r.Terminate(10, 5, S::kCompleting, "x"),
              StatusIs(StatusCode::kFailedPrecondition,
                       HasSubstr("j: illegal transition COMPLETING -> COMPLETING (x)")));
  ASSERT_TRUE(r.Timeout(10, 0).ok());
  EXPECT_EQ(r.state(), S::kTimeout);
  ASSERT_EQ(r.events().size(), 3u);
  EXPECT_EQ(r.events()[1].time_us, 10);
  EXPECT_EQ(r.events()[2].time_us, 10);
}

TEST(JobRecord, PreemptionAndNodeFailDuringGrace) {
  JobRecord p("p", 0);
  ASSERT_TRUE(p.Transition(0, S::kRunning, "go").ok());
  ASSERT_TRUE(p.Terminate(100, 1000, S::kPreempted, "preempted by big-job").ok());
  EXPECT_EQ(p.events().back().reason, "preempted by big-job: SIGTERM sent");
  EXPECT_TRUE(p.AdvanceTo(1100));
  EXPECT_EQ(p.state(), S::kPreempted);
  EXPECT_TRUE(p.Transition(1100, S::kRequeued, "preemption requeue").ok());

  JobRecord n("n", 0);
  ASSERT_TRUE(n.Transition(0, S::kRunning, "go").ok());
  ASSERT_TRUE(n.Timeout(100, 1000).ok());
  ASSERT_TRUE(n.Transition(200, S::kNodeFail, "gpu003 unreachable").ok());
  EXPECT_FALSE(n.kill_deadline_us().has_value());  // the termination is dropped
  EXPECT_FALSE(n.AdvanceTo(5000));
  EXPECT_EQ(n.state(), S::kNodeFail);
}

}  // namespace
}  // namespace toposched::job
