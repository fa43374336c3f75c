// A main for the fuzz targets in ordinary (non-libFuzzer) builds: runs the target once over each
// file named, directories walked recursively. CTest runs every target this way over its seed
// corpus and fuzz/regressions/<target>/ (inputs that once crashed), so both stay crash-free in
// every build, without clang.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t runs = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    std::filesystem::path root(argv[i]);
    if (!std::filesystem::exists(root, ec)) continue;  // no regressions yet for this target
    auto run = [&](const std::filesystem::path& p) {
      std::ifstream in(p, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string bytes = ss.str();
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++runs;
    };
    if (std::filesystem::is_directory(root, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
        if (e.is_regular_file()) run(e.path());
      }
    } else {
      run(root);
    }
  }
  std::printf("ran %zu inputs\n", runs);
  return runs > 0 ? 0 : 1;
}
