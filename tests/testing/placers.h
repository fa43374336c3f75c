// A GangPlacer (default options) over an example cluster of data/clusters, built once per name
// and kept for the test binary's lifetime (the scheduler tests share it).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "placer/gang.h"
#include "testing/clusters.h"

namespace toposched::testing {

inline const sched::GangPlacer& ExamplePlacer(const std::string& name) {
  static auto* cache = new std::map<std::string, std::unique_ptr<sched::GangPlacer>>();
  auto it = cache->find(name);
  if (it != cache->end()) return *it->second;
  auto r = sched::GangPlacer::Create(LoadExampleCluster(name));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return *cache->emplace(name, std::move(r).value()).first->second;
}

}  // namespace toposched::testing
