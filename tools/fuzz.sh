#!/usr/bin/env bash
# Builds perpcomp's libFuzzer targets (clang-14, ASan + UBSan, no LibTorch) and runs each one.
#
#   tools/fuzz.sh [SECONDS_PER_TARGET] [MAX_RUNS] [TARGET...]
#
# Defaults: 600 s or 1,000,000 executions per target, whichever comes first; all targets.
# Findings (crashing inputs) land in build-fuzz/findings/; the summary table is printed and
# written to build-fuzz/fuzz-summary.md. Exit status 1 when any target found a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
runs=${2:-1000000}
shift $(( $# > 2 ? 2 : $# )) || true
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(safetensors_header config_json tokenizer_json recipe_yaml sweep_yaml pairs_jsonl hdf5_reader)
build=${PERPCOMP_FUZZ_BUILD:-build-fuzz}

CC=clang-14 CXX=clang++-14 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPC_NO_TORCH=ON -DPC_FUZZ=ON -DPC_BUILD_TESTS=OFF -DPC_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

mkdir -p "$build/findings" "$build/corpus-run"
summary="$build/fuzz-summary.md"
printf '| target | executions | seconds | exec/s | corpus | findings |\n|---|---|---|---|---|---|\n' > "$summary"
status=0
for t in "${targets[@]}"; do
  run_corpus="$build/corpus-run/$t"
  mkdir -p "$run_corpus"
  if [ "$t" = hdf5_reader ]; then
    # Seed: a small results file in the store's layout (attributes, a table, nested groups).
    /usr/bin/python3 - "$run_corpus/seed.h5" <<'PY' || true
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", track_order=True) as f:
    f.attrs["perpcomp_schema"] = np.int64(1); f.attrs["perpcomp_kind"] = "measure"
    f.attrs["created_by"] = "perpcomp 0.1.0"; f.attrs["created_at"] = "2026-01-01T00:00:00Z"
    t = f.create_group("runs/r/sites", track_order=True)
    t.attrs["columns"] = ["name", "iso"]; t.attrs["rows"] = np.int64(2)
    t.create_dataset("name", data=np.array(["a", "b"], dtype=h5py.string_dtype()))
    t.create_dataset("iso", data=np.array([0.1, 0.2]))
    f["runs/r"].attrs["seq_len"] = np.int64(64)
PY
  fi
  log="$build/findings/$t.log"
  start=$(date +%s)
  set +e
  "$build/tests/fuzz/fuzz_$t" -max_total_time="$secs" -runs="$runs" -rss_limit_mb=2048 -timeout=20 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/findings/$t-" \
    "$run_corpus" "tests/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  corpus=$(ls "$run_corpus" | wc -l)
  found=$(ls "$build/findings" | grep -c "^$t-" || true)
  printf '| %s | %s | %s | %s | %s | %s |\n' "$t" "${execs:-?}" "$took" "${speed:-?}" "$corpus" "$found" >> "$summary"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz: $t found a crash (exit $rc); see $log and $build/findings/$t-*" >&2
    status=1
  fi
done
cat "$summary"
exit $status
