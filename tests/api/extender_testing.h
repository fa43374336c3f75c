// Kubernetes objects and the gang job the extender tests share (tests/api/extender_test.cc,
// extender_serve_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "job/job_spec.h"

namespace toposched::testing_api {

// A v1.Pod in namespace "ml" asking for `gpus` nvidia.com/gpu, with these labels and annotations.
inline nlohmann::json Pod(const std::string& name, const std::string& uid, int gpus,
                          const std::map<std::string, std::string>& labels = {},
                          const std::map<std::string, std::string>& annotations = {}) {
  nlohmann::json pod = {
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata", {{"name", name}, {"namespace", "ml"}, {"uid", uid}}},
      {"spec",
       {{"containers",
         {{{"name", "trainer"},
           {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  if (!labels.empty()) pod["metadata"]["labels"] = labels;
  if (!annotations.empty()) pod["metadata"]["annotations"] = annotations;
  return pod;
}

// The job the 16-pod gangs describe: "llama", 16 replicas of 8 GPUs, TP 8 x DP 16, 70B
// parameters, normalized.
inline job::JobSpec LlamaGangSpec() {
  job::JobSpec spec;
  spec.name = "llama";
  spec.replicas = 16;
  spec.gpus_per_replica = 8;
  spec.layout.tp = 8;
  spec.layout.dp = 16;
  spec.model_params = 70e9;
  EXPECT_TRUE(spec.Normalize().ok());
  return spec;
}

}  // namespace toposched::testing_api
