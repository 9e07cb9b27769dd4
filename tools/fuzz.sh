#!/usr/bin/env bash
# Builds perpcomp's libFuzzer targets (clang-14, ASan + UBSan, no LibTorch) and runs each one.
#
#   tools/fuzz.sh [SECONDS_PER_TARGET] [MAX_RUNS] [TARGET...]
#
# Defaults: 600 s or 1,000,000 executions per target, whichever comes first; all targets but the
# opt-in hdf5_bytes (raw bytes into libhdf5, which crashes on hostile files: docs/RELIABILITY.md).
# PERPCOMP_FUZZ_BUILD: the build folder (build-fuzz); PERPCOMP_FUZZ_JOBS: build jobs (2).
# Each target starts from tests/fuzz/corpus/<target>/ (the seeds, read only) and grows its own
# corpus in build-fuzz/corpus-run/<target>/ (kept between runs). Findings (crashing inputs) land
# in build-fuzz/findings/<target>-*, each target's log in build-fuzz/findings/<target>.log; the
# summary table is printed and written to build-fuzz/fuzz-summary.md. Exit status 1 when any
# target found a crash or could not run.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
runs=${2:-1000000}
shift $(( $# > 2 ? 2 : $# )) || true
targets=("$@")
# Default: every target tests/fuzz/CMakeLists.txt declares in PC_FUZZ_TARGETS, but hdf5_bytes.
if [ ${#targets[@]} -eq 0 ]; then
  read -r -a targets <<< "$(sed -n '/^set(PC_FUZZ_TARGETS/,/)/p' tests/fuzz/CMakeLists.txt | tr -d '()\n' |
                           sed 's/set//; s/PC_FUZZ_TARGETS//; s/\bhdf5_bytes\b//')"
  [ ${#targets[@]} -gt 0 ] || { echo "fuzz.sh: no targets found in tests/fuzz/CMakeLists.txt" >&2; exit 1; }
fi
build=${PERPCOMP_FUZZ_BUILD:-build-fuzz}

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPC_NO_TORCH=ON -DPC_FUZZ=ON -DPC_BUILD_TESTS=OFF -DPC_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" -j "${PERPCOMP_FUZZ_JOBS:-2}" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

# UBSan in the fuzz build is recoverable (-fsanitize=undefined without -fno-sanitize-recover):
# halt on the first report so that libFuzzer records the input as a finding.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
mkdir -p "$build/findings" "$build/corpus-run"
summary="$build/fuzz-summary.md"
printf '| target | executions | seconds | exec/s | corpus | findings |\n|---|---|---|---|---|---|\n' > "$summary"
status=0
for t in "${targets[@]}"; do
  run_corpus="$build/corpus-run/$t"
  mkdir -p "$run_corpus"
  log="$build/findings/$t.log"
  start=$(date +%s)
  set +e
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -runs="$runs" -rss_limit_mb=2048 -timeout=20 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/findings/$t-" \
    "$run_corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  corpus=$(ls "$run_corpus" | wc -l)
  found=$(ls "$build/findings" | grep -c "^$t-" || true)
  printf '| %s | %s | %s | %s | %s | %s |\n' "$t" "${execs:-?}" "$took" "${speed:-?}" "$corpus" "$found" >> "$summary"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz: $t found a crash or failed (exit $rc); see $log and $build/findings/$t-*" >&2
    status=1
  fi
done
cat "$summary"
exit $status
