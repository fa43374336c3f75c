// The real samples under data/samples, for tests that run over all of them, and reading a
// file whole.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace toposched::testing {

inline std::string SourceDir() { return TS_SOURCE_DIR; }
// A file of data/traces/.
inline std::string TracePath(const std::string& name) {
  return SourceDir() + "/data/traces/" + name;
}

// The whole file as bytes; empty when it cannot be read (the test's own checks then fail).
inline std::string ReadFileText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Files under data/samples/<dir>, subfolders included, whose names end in `ext` (".xml"), as
// paths relative to that folder ("partial/P01-....txt"), sorted.
inline std::vector<std::string> SampleFiles(const std::string& dir, const std::string& ext) {
  const std::filesystem::path root = std::filesystem::path(SourceDir()) / "data/samples" / dir;
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file() || e.path().extension() != ext) continue;
    out.push_back(std::filesystem::relative(e.path(), root).generic_string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Files under data/samples that are not node topologies: `nvidia-smi topo -p2p` and
// `nvidia-smi nvlink -s` outputs, and an NCCL graph (not topology) file. Each has its own test.
inline const std::set<std::string>& NonTopologySamples() {
  static const std::set<std::string> kFiles = {
      "05-h100-8gpu-topo-p2p-r-stas00.txt",
      "06-l4-2gpu-topo-p2p-r-cns-stas00.txt",
      "11-h100-nvlink-status-gpu0-18links-mlsys-tutorial.txt",
      "28-gb200-nvlink-s-18links-53gbps-k8stestinfra371.txt",
      "29-v100-sxm2-nvlink-s-inactive-links-azhpcdiag73.txt",
      "azhpc-ncv4-graph.xml",
  };
  return kFiles;
}

// Every node-topology sample (nvidia-smi topo -m, hwloc XML, NCCL XML), sorted by path.
inline std::vector<std::string> TopologySamples() {
  std::vector<std::string> out;
  for (const char* dir : {"nvidia-smi", "nvidia-smi/partial", "hwloc-xml", "nccl-xml"}) {
    std::filesystem::path d = std::filesystem::path(SourceDir()) / "data/samples" / dir;
    for (const auto& e : std::filesystem::directory_iterator(d)) {
      if (!e.is_regular_file()) continue;
      if (NonTopologySamples().count(e.path().filename().string())) continue;
      out.push_back(e.path().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace toposched::testing
