#!/usr/bin/env bash
# Runs every libFuzzer target (fuzz/fuzz_<target>.cc) for SECONDS each (default 10), seeded with
# its corpora (fuzz/corpora.txt; read only: new inputs go to a scratch corpus under OUT), under
# ASan+UBSan. Builds them first with clang in build-fuzz/ (TOPOSCHED_FUZZ). Prints one line per
# target: executions, coverage (edges), features, corpus size; a crash stops with the input's
# path, which then belongs in fuzz/regressions/<target>/ as a regression test (CTest runs those
# in every build).
#   scripts/fuzz.sh [SECONDS] [TARGET...]      e.g. scripts/fuzz.sh 600 nvidia_smi
# FUZZ_BUILD=DIR: the build directory (default build-fuzz); FUZZ_OUT=DIR: corpora, logs, crashes;
# FUZZ_NO_BUILD=1: run the binaries already in FUZZ_BUILD (for runs in parallel).
# FUZZ_SEED=N: libFuzzer's random seed (default: a new one each run). CI sets it, so that its
# short runs take the same mutations each time and a failure there reproduces here; long runs
# without it explore further.
# FUZZ_LANES=N: run the targets N at a time (default 1), each still for SECONDS; the lines are
# printed in the targets' order once all have run. CI runs 2 lanes beside the soak.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-10}"
shift || true
BUILD="${FUZZ_BUILD:-build-fuzz}"
OUT="${FUZZ_OUT:-$BUILD/fuzz-out}"
JOBS="${JOBS:-$(nproc)}"
LANES="${FUZZ_LANES:-1}"
[[ "$LANES" =~ ^[1-9][0-9]*$ ]] || {
  echo "fuzz: FUZZ_LANES: expected a whole number >= 1, got '$LANES'" >&2
  exit 2
}

mapfile -t lines < <(grep -E '^[a-z_]+ ' fuzz/corpora.txt)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for l in "${lines[@]}"; do targets+=("${l%% *}"); done
fi

if [ "${FUZZ_NO_BUILD:-0}" = 1 ]; then
  :
elif [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTOPOSCHED_SANITIZE=ON -DTOPOSCHED_FUZZ=ON -DTOPOSCHED_ONLY_PARSER_TESTS=ON \
    -DTOPOSCHED_BENCH=OFF >/dev/null
fi
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  ninja -C "$BUILD" -j "$JOBS" "${targets[@]/#/fuzz_}" >"$BUILD/fuzz-build.log" 2>&1 || {
    cat "$BUILD/fuzz-build.log"
    exit 1
  }
fi

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="suppressions=$PWD/fuzz/lsan.supp"
# One target: its line (or its failure report) into $OUT/<target>.report; exit 1 on a failure.
run_one() {
  local t=$1 seeds="" l corpus log execs line cov ft corp crash
  local -a seed_flag=()
  for l in "${lines[@]}"; do
    if [ "${l%% *}" = "$t" ]; then seeds="${l#* }"; fi
  done
  corpus="$OUT/corpus-$t"
  mkdir -p "$corpus"
  if [ -n "${FUZZ_SEED:-}" ]; then seed_flag=(-seed="$FUZZ_SEED"); fi
  log="$OUT/$t.log"
  # shellcheck disable=SC2086
  if "$BUILD/fuzz_$t" "$corpus" $seeds -max_total_time="$SECONDS_EACH" -max_len=65536 \
    -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$OUT/crash-$t-" \
    "${seed_flag[@]}" \
    >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    line=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$log" | tail -1)
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$line")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$line")
    corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$line")
    echo "fuzz: $t: ${SECONDS_EACH} s, $execs executions, cov $cov edges, ft $ft, corpus $corp, 0 crashes"
  else
    echo "fuzz: $t: FAILED (log $log):"
    # What ended the run (a sanitizer report, an assertion, an uncaught exception) and the stack
    # libFuzzer or the sanitizer printed: the tail of the log, from its first report line.
    awk '/ERROR|Assertion|terminate called|what\(\)|deadly signal|runtime error/ && !s {s=1} s' "$log" |
      head -60
    # The input itself, so that a run elsewhere (CI) can be reproduced from its log alone:
    # base64 -d | gunzip > input, then build-fuzz/fuzz_<target> input.
    crash=$(sed -n 's/.*Test unit written to //p' "$log" | head -1)
    if [ -f "$crash" ]; then
      echo "input $crash ($(stat -c %s "$crash") bytes), gzip + base64:"
      gzip -9c "$crash" | base64 -w 120 | head -200
    elif [ -n "$crash" ]; then
      echo "input $crash (not found)"
    fi
    return 1
  fi
}
mkdir -p "$OUT"
lane_pids=()
for ((lane = 0; lane < LANES; lane++)); do
  (
    lane_status=0
    for ((i = lane; i < ${#targets[@]}; i += LANES)); do
      run_one "${targets[$i]}" >"$OUT/${targets[$i]}.report" || lane_status=1
    done
    exit $lane_status
  ) &
  lane_pids+=($!)
done
status=0
for pid in "${lane_pids[@]}"; do wait "$pid" || status=1; done
for t in "${targets[@]}"; do cat "$OUT/$t.report"; done
exit $status
