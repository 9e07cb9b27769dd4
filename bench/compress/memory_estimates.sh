#!/bin/bash
# bench/compress/memory_estimates.sh [PERPCOMP] [DIR] — the --max-memory estimate of every
# memory_bench row, printed by each command refusing with --max-memory 1 (nothing runs). For
# re-tabulating docs/RELIABILITY.md after the estimate's coefficients change without re-measuring.
# DIR is memory_bench's --dir after a run (its models, text.txt and the rtn-w4g128-32 output).
P=${1:-build/tools/perpcomp}
D=${2:-/tmp/perpcomp-memory-bench}
T=$D/text.txt
for m in 160m 70m; do
  M=$D/pythia-$m-shaped-4
  for r in rtn-w4g128 awq-w4g128 gptq-w4g128 wanda-50; do
    for n in 16 32; do
      printf "compress %s %s %s: " "$m" "$r" "$n"
      "$P" compress --model "$M" --recipe "$r" --calib "$T" --calib-samples "$n" --calib-seq-len 512 \
        --out "$D/estimate-only" --max-memory 1 2>&1 | grep -o "estimated peak [0-9.]* [KMG]iB"
    done
  done
  printf "eval %s: " "$m"
  "$P" eval --model "$M" --text "$T" --seq-len 512 --max-windows 8 --max-memory 1 2>&1 |
    grep -o "estimated peak [0-9.]* [KMG]iB"
  printf "measure %s: " "$m"
  "$P" measure --reference "$M" --compressed "$D/pythia-$m-shaped-rtn-w4g128-32" --text "$T" --seq-len 512 \
    --max-windows 8 --no-cache --out "$D/estimate-only.h5" --max-memory 1 2>&1 | grep -o "estimated peak [0-9.]* [KMG]iB"
done
