// The stored form of scheduler inputs: every alternative survives encode → decode unchanged,
// records as earlier builds wrote them still decode (a store outlives the binary), and a
// malformed record is DataLoss naming it.
#include "api/input_codec.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job/job_spec.h"
#include "testing/clusters.h"
#include "testing/status_matchers.h"

namespace toposched::api {
namespace {

using ::testing::AllOf;
using ::toposched::testing::HasSubstr;
using ::toposched::testing::StatusIs;

const topo::Cluster& C() { return toposched::testing::H100Cluster(); }

job::JobSpec Spec() {
  auto s = job::ParseJobJson(
      R"({"name":"llama","user":"ana","queue":"research","priority":7,"replicas":2,)"
      R"("gpus_per_replica":8,"time_limit":"2h"})",
      "test");
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : job::JobSpec{};
}

std::vector<sched::Input> AllKinds() {
  const int node = C().FindNode(C().nodes[5].name);
  return {sched::SubmitJob{Spec()},
          sched::SubmitPodGroup{Spec(), "research/llama"},
          sched::CancelJob{JobId{3}},
          sched::CompleteJob{JobId{4}, {}},
          sched::CompleteJob{JobId{4}, "exit code 1: cause gpu_fault: Xid 79"},
          sched::CompleteJob{JobId{4}, "exit code 1: cause gpu_fault: Xid 79", node, "Xid 79"},
          sched::SetJobPriority{JobId{5}, -2},
          sched::DrainNode{node, true, "cabling"},
          sched::DrainNode{node, false, ""},
          sched::HealthReport{sched::HealthTarget::kNode, node, 0, topo::Health::kUnhealthy, "PSU"},
          sched::HealthReport{sched::HealthTarget::kGpu, node, 3, topo::Health::kDegraded, ""},
          sched::HealthReport{sched::HealthTarget::kNic, node, 1, topo::Health::kHealthy, "ok"},
          sched::HealthReport{sched::HealthTarget::kNvlink, node, 2, topo::Health::kUnhealthy,
                              "xid 74"},
          sched::Tick{},
          sched::SchedulePass{},
          sched::Pass{},
          sched::JobDegraded{JobId{6}, "NET/Socket", 12.5},
          sched::JobDegraded{JobId{6}, "NET/Socket", 0, node, "Xid 48"},
          sched::NodeTopologyReport{node, C().topology(node), "toposched agent on gpu006"},
          sched::NodeNetworkReport{node, {"spine0", "block-b9"}, "clique-7", 900, "labels"},
          sched::NodeNetworkReport{node, {}, std::nullopt, 0, ""}};
}

TEST(InputCodec, EveryKindRoundTrips) {
  for (const sched::Input& in : AllKinds()) {
    SCOPED_TRACE(sched::InputKind(in));
    store::InputRecord rec = EncodeInput(in, C());
    rec.seq = 9;
    EXPECT_EQ(rec.kind, sched::InputKind(in));
    StatusOr<sched::Input> back = DecodeInput(rec, C());
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(back->index(), in.index());
    // Encoding what was decoded gives the very same record.
    store::InputRecord again = EncodeInput(*back, C());
    again.seq = 9;
    EXPECT_EQ(again, rec);
  }
}

TEST(InputCodec, FieldsSurvive) {
  const int node = C().FindNode(C().nodes[5].name);
  store::InputRecord rec = EncodeInput(
      sched::HealthReport{sched::HealthTarget::kGpu, node, 3, topo::Health::kDegraded, "x"}, C());
  auto in = DecodeInput(rec, C());
  ASSERT_TRUE(in.ok());
  const auto& h = std::get<sched::HealthReport>(*in);
  EXPECT_EQ(h.target, sched::HealthTarget::kGpu);
  EXPECT_EQ(h.node, node);
  EXPECT_EQ(h.index, 3);
  EXPECT_EQ(h.health, topo::Health::kDegraded);
  EXPECT_EQ(h.reason, "x");
  auto sub = DecodeInput(EncodeInput(sched::SubmitJob{Spec()}, C()), C());
  ASSERT_TRUE(sub.ok());
  EXPECT_EQ(std::get<sched::SubmitJob>(*sub).spec, Spec());
  auto group = DecodeInput(EncodeInput(sched::SubmitPodGroup{Spec(), "research/llama"}, C()), C());
  ASSERT_TRUE(group.ok()) << group.status().ToString();
  EXPECT_EQ(std::get<sched::SubmitPodGroup>(*group).spec, Spec());
  EXPECT_EQ(std::get<sched::SubmitPodGroup>(*group).group, "research/llama");
  const sched::NodeNetworkReport place{node, {"spine0", "block-b9"}, "", 0, "Kubernetes"};
  auto net = DecodeInput(EncodeInput(place, C()), C());
  ASSERT_TRUE(net.ok()) << net.status().ToString();
  EXPECT_EQ(std::get<sched::NodeNetworkReport>(*net), place);
  auto pr = DecodeInput(EncodeInput(sched::SetJobPriority{JobId{5}, -2}, C()), C());
  ASSERT_TRUE(pr.ok());
  EXPECT_EQ(std::get<sched::SetJobPriority>(*pr).job.value, 5);
  EXPECT_EQ(std::get<sched::SetJobPriority>(*pr).priority, -2);
}

// The records exactly as the daemon wrote them before inputs were typed (its payload literals).
TEST(InputCodec, RecordsOfEarlierBuildsDecode) {
  const std::string node = C().nodes[0].name;
  const std::vector<store::InputRecord> old = {
      {1, "cancel", 10, 7, "", "{}"},
      {2, "complete", 11, 7, "", "{}"},
      {3, "priority", 12, 7, "", R"({"priority":4})"},
      {4, "drain", 13, 0, "", R"({"drained":true,"node":")" + node + R"(","reason":""})"},
      {5, "health", 14, 0, "",
       R"({"component":"nic","health":"degraded","index":1,"node":")" + node +
           R"(","reason":"flap"})"},
      {6, "pass", 15, 0, "", "{}"}};
  for (const store::InputRecord& rec : old) {
    SCOPED_TRACE(rec.kind);
    auto in = DecodeInput(rec, C());
    ASSERT_TRUE(in.ok()) << in.status().ToString();
    store::InputRecord again = EncodeInput(*in, C());
    EXPECT_EQ(again.kind, rec.kind);
    EXPECT_EQ(again.job_id, rec.job_id);
    EXPECT_EQ(again.payload, rec.payload) << "the stored bytes do not change";
  }
}

TEST(InputCodec, MalformedRecordsAreDataLossNamingTheRecord) {
  const struct {
    store::InputRecord rec;
    const char* says;
  } cases[] = {
      {{12, "drain", 0, 0, "", R"({"drained":true,"node":"no-such-node"})"}, "no-such-node"},
      {{12, "drain", 0, 0, "", R"({"node":")" + C().nodes[0].name + R"("})"}, "malformed payload"},
      {{12, "priority", 0, 1, "", "not json"}, "malformed payload"},
      {{12, "priority", 0, 1, "", R"({"priority":"high"})"}, "malformed payload"},
      {{12, "health", 0, 0, "",
        R"({"component":"fan","health":"healthy","node":")" + C().nodes[0].name + R"("})"},
       "expected node, gpu, nic or nvlink"},
      {{12, "health", 0, 0, "",
        R"({"component":"gpu","health":"meh","node":")" + C().nodes[0].name + R"("})"},
       "health"},
      {{12, "submit", 0, 1, "", R"({"name":"x"})"}, "input 12 (submit)"},
      {{12, "submit_pod_group", 0, 1, "", R"({"group":"ml/x"})"}, "malformed payload"},
      {{12, "submit_pod_group", 0, 1, "",
        R"({"group":"","spec":{"name":"x","replicas":1,)"
        R"("gpus_per_replica":8}})"},
       "group: empty"},
      {{12, "submit_pod_group", 0, 1, "", R"({"group":"ml/x","spec":{"name":"x"}})"}, "spec"},
      {{12, "teleport", 0, 0, "", "{}"}, "unknown input kind"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.rec.payload);
    auto in = DecodeInput(c.rec, C());
    EXPECT_THAT(in, StatusIs(StatusCode::kDataLoss,
                             AllOf(::testing::StartsWith("input 12 (" + c.rec.kind + "): "),
                                   HasSubstr(c.says))));
  }
}

}  // namespace
}  // namespace toposched::api
