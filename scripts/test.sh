#!/usr/bin/env bash
# The whole test suite: include-direction check, unit and integration tests (CTest), the soak
# test, the parser tests again under ASan+UBSan (clang), a short run of every fuzz target, then
# the packaging stage (scripts/test-package.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"

echo "== include direction"
python3 scripts/check-includes.py

echo "== format (clang-format, .clang-format)"
find src tests bench \( -name '*.cc' -o -name '*.h' \) -not -path '*/testdata/*' -print0 |
  xargs -0 clang-format --dry-run -Werror

echo "== build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build -j "$JOBS"

echo "== tests"
ctest --test-dir build --output-on-failure -j "$JOBS" -LE slurm

echo "== Slurm integration (a real slurmctld + 8 slurmd on loopback; skipped without Slurm)"
ctest --test-dir build --output-on-failure -L slurm

echo "== soak (scripts/soak.sh: concurrent REST and extender clients, >= 10 kill -9 cycles, 45 s)"
bash scripts/soak.sh --out build/soak.json >build/soak.log 2>&1 || {
  cat build/soak.log
  exit 1
}
tail -1 build/soak.log

echo "== parser tests (topology, cluster, Slurm, jobs) under ASan+UBSan, built with clang"
# The same build holds the libFuzzer targets (TOPOSCHED_FUZZ): every library is instrumented
# for coverage once, and the fuzz stage below reuses it.
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DTOPOSCHED_SANITIZE=ON -DTOPOSCHED_FUZZ=ON -DTOPOSCHED_ONLY_PARSER_TESTS=ON \
  -DTOPOSCHED_BENCH=OFF >/dev/null
ninja -C build-asan -j "$JOBS" topo_tests core_tests job_tests
export UBSAN_OPTIONS=print_stacktrace=1
ASAN_OPTIONS=detect_leaks=1 ctest --test-dir build-asan --output-on-failure -j "$JOBS" \
  -E '^DiscoverLocal\.'
# Live discovery loads hwloc's I/O plugins with dlopen; they leak a few hundred bytes inside the
# plugin (no frames of ours, "<unknown module>" once unloaded), so leak checking is off there.
ASAN_OPTIONS=detect_leaks=0 ctest --test-dir build-asan --output-on-failure -j "$JOBS" \
  -R '^DiscoverLocal\.'

echo "== every fuzz target for 10 s (scripts/fuzz.sh; seeds from data/, ASan+UBSan)"
FUZZ_BUILD=build-asan bash scripts/fuzz.sh 10

echo "== packaging (Debian package installed, run and purged; container image; Kubernetes manifests)"
# Its own clone and build directory: it shares nothing with the stages above.
bash scripts/test-package.sh
