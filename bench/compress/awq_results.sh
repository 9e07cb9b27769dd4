#!/bin/bash
# bench/compress/awq_results.sh — the AWQ table of docs/RESULTS.md: RTN vs AWQ vs perpendicular-aware
# AWQ on a small model, held-out ΔNLL against the original, and the α histograms.
#
#   bench/compress/awq_results.sh WORK_DIR MODEL_DIR HELDOUT_TEXT [recipes...]
#
# MODEL_DIR: a Hugging Face folder (e.g. stories260K converted with `perpcomp convert`).
# HELDOUT_TEXT: evaluation text (for stories260K: self-generated, see docs/RESULTS.md).
# Environment: PERPCOMP (binary; default build-awq/tools/perpcomp), CALIB (default self:64),
# CALIB_SEQ (256), SEQ (eval window, 256), THREADS (1: CPU time is what the shared machine gives).
set -euo pipefail
work=$1; model=$2; text=$3; shift 3
recipes=("$@")
[ ${#recipes[@]} -eq 0 ] && recipes=(rtn-w4g128 awq-w4g128 perp-awq-w4g128 rtn-w3g128 awq-w3g128 perp-awq-w3g128)
here=$(cd "$(dirname "$0")/../.." && pwd)
P=${PERPCOMP:-$here/build-awq/tools/perpcomp}
CALIB=${CALIB:-self:64}; CALIB_SEQ=${CALIB_SEQ:-256}; SEQ=${SEQ:-256}; THREADS=${THREADS:-1}
mkdir -p "$work"
echo "| recipe | mean NLL | ΔNLL vs original | KL mean | top-1 agreement | compress s |"
echo "|---|---|---|---|---|---|"
base=$("$P" eval --model "$model" --text "$text" --seq-len "$SEQ" --json --threads "$THREADS" -q)
echo "| original | $(echo "$base" | /usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(sys.stdin)["mean_nll"])') | 0 | 0 | 1 | |"
for r in "${recipes[@]}"; do
  out=$work/$r
  if [ ! -f "$out/config.json" ]; then
    "$P" compress --model "$model" --recipe "$r" --calib "$CALIB" --calib-seq-len "$CALIB_SEQ" --out "$out" \
      --threads "$THREADS" -q > "$work/$r.compress.log" 2>&1
  fi
  "$P" eval --model "$out" --text "$text" --seq-len "$SEQ" --reference "$model" --json --threads "$THREADS" -q \
    > "$work/$r.eval.json"
  /usr/bin/python3 - "$work/$r.eval.json" "$out/config.json" "$r" "$base" <<'EOF'
import json, sys
e = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))["perpcomp_compression"]
b = json.loads(sys.argv[4])
d = e.get("delta_nll", e["mean_nll"] - b["mean_nll"])
print("| %s | %.4f | %+.4f | %.4f | %.4f | %.0f |" % (sys.argv[3], e["mean_nll"], d, e.get("kl_mean", float("nan")),
                                                   e.get("top1_agreement", float("nan")), c["seconds"]))
EOF
done
awq_dirs=()
for r in "${recipes[@]}"; do [[ $r == *awq* ]] && awq_dirs+=("$work/$r"); done
[ ${#awq_dirs[@]} -gt 0 ] && /usr/bin/python3 "$here/bench/compress/awq_alpha_hist.py" "${awq_dirs[@]}"
