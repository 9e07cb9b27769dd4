#!/bin/bash
# bench/metrics/stream_memory.sh [PERPCOMP] [DIR] [THREADS] — peak RSS of the block-by-block
# `measure` and `eval --reference` on a random Pythia-1.4B-shaped bf16 checkpoint (2.8 GB), under
# --max-memory 1.5G, against the bound of the streaming issue (docs/PERFORMANCE.md "Streaming").
# Makes the checkpoint (bench/metrics/random_checkpoint.py, numpy) and its rtn-w4g128 counterpart
# (compress streams) in DIR once; DIR defaults to /tmp/perpcomp-stream-bench (never the repository).
# Prints one Markdown row per command: model, command, peak RSS (/usr/bin/time -v), the bound.
set -euo pipefail
P=$(realpath "${1:-build/tools/perpcomp}")
D=${2:-/tmp/perpcomp-stream-bench}
THREADS=${3:-2}
HERE=$(dirname "$(realpath "$0")")
SHARED=${PERPCOMP_SHARED:-$(realpath "$HERE/../../../shared" 2>/dev/null || echo /work/shared)}/data
mkdir -p "$D"
REF=$D/pythia-1.4b-random
COMP=$D/pythia-1.4b-random-rtn-w4g128
TEXT=$D/text.txt
[ -f "$REF/model.safetensors" ] ||
  /usr/bin/python3 "$HERE/random_checkpoint.py" "$REF" --tokenizer "$SHARED/tokenizers/gpt-neox-20b/tokenizer.json"
[ -f "$TEXT" ] || head -c 200000 "$SHARED/text/wikitext-2/wiki.test.raw.txt" > "$TEXT"
[ -f "$COMP/model.safetensors" ] ||
  "$P" compress --model "$REF" --recipe rtn-w4g128 --calib "$TEXT" --calib-windowing random --calib-samples 2 --calib-seq-len 256 \
    --out "$COMP" --threads "$THREADS" -q
WINDOWS="--seq-len 256 --max-windows 2 --batch 1"
peak() {  # command... -> peak RSS in MiB (the command must succeed)
  /usr/bin/time -v "$@" > "$D/last.out" 2> "$D/last.err" || { cat "$D/last.err" >&2; exit 1; }
  awk '/Maximum resident set size/ {printf "%.0f", $6 / 1024}' "$D/last.err"
}
# The bound: embedding + head of each model, two blocks of each, the activations (every window's
# residual stream of both models), + 300 MB; bf16 weights as computed in, f32 activations.
BOUND=$(/usr/bin/python3 - "$REF/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
V, d, I = c["vocab_size"], c["hidden_size"], c["intermediate_size"]
bytes_w = 2  # --dtype bf16
top = 2 * V * d + 2 * d                      # embedding, untied head, final norm
block = 3 * d * d + 3 * d + d * d + d + I * d + I + d * I + d + 4 * d
acts = 2 * 2 * 256 * d * 4                   # 2 windows x 256 tokens, both models
print(round((2 * top * bytes_w + 2 * 2 * block * bytes_w + acts + 300e6) / 2**20))
PY
)
CPU=$(lscpu | sed -n 's/^Model name: *//p' | head -1)
echo "CPU: $CPU, $(nproc) cores, --threads $THREADS"
echo "| model | command | peak RSS | bound |"
echo "|---|---|---:|---:|"
M=$(peak "$P" measure --reference "$REF" --compressed "$COMP" --text "$TEXT" $WINDOWS --dtype bf16 --no-cache \
  --out "$D/measure.h5" --overwrite --max-memory 1.5G --threads "$THREADS" -q)
echo "| random Pythia-1.4B shape, bf16 (2.8 GB) | \`measure --dtype bf16 --max-memory 1.5G\`, 2 × 256 tokens | $M MiB | $BOUND MiB |"
E=$(peak "$P" eval --model "$COMP" --reference "$REF" --text "$TEXT" $WINDOWS --dtype bf16 --no-cache \
  --max-memory 1.5G --threads "$THREADS" -q)
echo "| random Pythia-1.4B shape, bf16 (2.8 GB) | \`eval --reference --dtype bf16 --max-memory 1.5G\`, 2 × 256 tokens | $E MiB | $BOUND MiB |"
