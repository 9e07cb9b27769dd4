#!/usr/bin/env bash
# tools/parallel_suppression.sh — parallel suppression in pretraining (docs/SCIENCE.md, "Suppression
# in pretraining"). Trains the same small model with `perpcomp train --parallel-scale A` for A = 1 (plain)
# and smaller A (each attention / MLP update D becomes A*D_par + D_perp, during training and inference),
# on the same corpus (plain text, as `perpcomp demo` trains), steps and seeds, and reports for each:
# the trainer's held-out loss, the loss and perplexity of `perpcomp eval` on the held-out text, and
# minimal-pair accuracy per pair file.
#
#   tools/parallel_suppression.sh [--work DIR] [--corpus DIR] [--scales "1 0.5 0"] [--seeds "0 1"] ...
#
# Every option (default in brackets):
#   --perpcomp BIN     the perpcomp binary [build/tools/perpcomp, or perpcomp on PATH]
#   --work DIR         work folder: corpus/, models/, results.tsv, results.md [./suppression-work]
#   --corpus DIR       an existing `perpcomp corpus` folder (train.txt, valid.txt, pairs/) [made in DIR/corpus]
#   --sentences N      training sentences when the corpus is made here [50000]
#   --arch A           gpt_neox (LayerNorm) | llama (RMSNorm) [gpt_neox]
#   --scales "A ..."   parallel scales; 1 is the plain model [1 0.5 0]
#   --seeds "S ..."    training seeds (initialisation and data order) [0 1]
#   --steps N --batch N --context N --layers N --hidden N --heads N --lr X --warmup N
#                      the trainer's options [600 32 64 2 64 4 0.005 50]
#   --vocab-size N     BPE vocabulary, trained once and shared by every run [600]
#   --eval-windows K   held-out windows for `perpcomp eval` (0: all) [200]
#   --threads N        intra-op threads per command (1 is fastest on a loaded machine) [1]
#   --keep             reuse models already trained in DIR/models (same options) instead of retraining
set -euo pipefail

perpcomp=""
work="./suppression-work"
corpus=""
sentences=50000
arch=gpt_neox
scales="1 0.5 0"
seeds="0 1"
steps=600 batch=32 context=64 layers=2 hidden=64 heads=4 lr=0.005 warmup=50 vocab=600
eval_windows=200
threads=1
keep=0

die() { echo "parallel_suppression.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --perpcomp) perpcomp="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --corpus) corpus="$2"; shift 2 ;;
    --sentences) sentences="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --scales) scales="$2"; shift 2 ;;
    --seeds) seeds="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --context) context="$2"; shift 2 ;;
    --layers) layers="$2"; shift 2 ;;
    --hidden) hidden="$2"; shift 2 ;;
    --heads) heads="$2"; shift 2 ;;
    --lr) lr="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --vocab-size) vocab="$2"; shift 2 ;;
    --eval-windows) eval_windows="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --keep) keep=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

if [ -z "$perpcomp" ]; then
  here="$(cd "$(dirname "$0")/.." && pwd)"
  if [ -x "$here/build/tools/perpcomp" ]; then perpcomp="$here/build/tools/perpcomp"; else perpcomp="$(command -v perpcomp || true)"; fi
fi
[ -n "$perpcomp" ] && [ -x "$perpcomp" ] || die "no perpcomp binary (pass --perpcomp BIN)"
case "$arch" in gpt_neox|llama) ;; *) die "--arch must be gpt_neox or llama, got '$arch'" ;; esac
python=python3
command -v "$python" >/dev/null || die "python3 is needed to read the JSON of perpcomp eval"

mkdir -p "$work/models"
if [ -z "$corpus" ]; then
  corpus="$work/corpus"
  if [ ! -f "$corpus/corpus.json" ]; then
    echo "== corpus: $sentences sentences -> $corpus"
    "$perpcomp" corpus --out "$corpus" --sentences "$sentences" --seed 0 --threads "$threads" --overwrite
  fi
fi
for f in train.txt valid.txt pairs; do [ -e "$corpus/$f" ] || die "'$corpus' has no $f (a perpcomp corpus folder is expected)"; done

common=(--arch "$arch" --text "$corpus/train.txt" --valid "$corpus/valid.txt"
        --steps "$steps" --batch "$batch" --context "$context" --layers "$layers" --hidden "$hidden"
        --heads "$heads" --lr "$lr" --warmup "$warmup" --threads "$threads" --quiet)
tokenizer=""
results="$work/results.tsv"
printf 'scale\tseed\ttrain_valid_loss\teval_loss\teval_ppl\taccuracy\tfiles\tseconds\n' > "$results"
for seed in $seeds; do
  for scale in $scales; do
    model="$work/models/ps-$scale-seed-$seed"
    if [ "$keep" = 1 ] && [ -f "$model/train_log.json" ]; then
      echo "== reusing $model"
    else
      echo "== train: parallel scale $scale, seed $seed -> $model"
      tok=(--vocab-size "$vocab")
      [ -n "$tokenizer" ] && tok=(--tokenizer "$tokenizer")
      "$perpcomp" train "${common[@]}" "${tok[@]}" --parallel-scale "$scale" --seed "$seed" --out "$model" --overwrite
    fi
    [ -z "$tokenizer" ] && tokenizer="$model/tokenizer.json"  # every later run shares the first run's tokenizer
    json="$("$perpcomp" eval --model "$model" --text "$corpus/valid.txt" --seq-len "$context" \
            --max-windows "$eval_windows" --pairs "$corpus/pairs" --threads "$threads" --json --quiet)"
    "$python" - "$model/train_log.json" "$scale" "$seed" "$json" >> "$results" <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
ev = json.loads(sys.argv[4])
files = ";".join(f"{k}={v['accuracy']:.4f}" for k, v in ev["pairs"]["files"].items())
print("\t".join([sys.argv[2], sys.argv[3], f"{log['final_valid_loss']:.5f}", f"{ev['mean_nll']:.5f}",
                 f"{ev['ppl']:.4f}", f"{ev['pairs']['accuracy']:.4f}", files, f"{log['seconds']:.0f}"]))
PY
  done
done

# Per-scale means over seeds, as a Markdown table (also in results.md).
"$python" - "$results" "$work/results.md" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1])][1:]
by = {}
for r in rows:
    by.setdefault(r[0], []).append(r)
def ms(xs):
    xs = [float(x) for x in xs]
    return f"{st.mean(xs):.4f} ± {st.stdev(xs):.4f}" if len(xs) > 1 else f"{xs[0]:.4f}"
files = [kv.split("=")[0] for kv in rows[0][6].split(";")] if rows else []
out = ["| parallel scale | seeds | trainer held-out loss | eval loss | eval ppl | accuracy | " + " | ".join(files) + " |",
       "|---:|---:|---:|---:|---:|---:|" + "---:|" * len(files)]
for scale, rs in by.items():
    per_file = [ms([dict(kv.split("=") for kv in r[6].split(";"))[f] for r in rs]) for f in files]
    out.append(f"| {scale} | {len(rs)} | {ms([r[2] for r in rs])} | {ms([r[3] for r in rs])} | {ms([r[4] for r in rs])} | "
               f"{ms([r[5] for r in rs])} | " + " | ".join(per_file) + " |")
text = "\n".join(out) + "\n"
open(sys.argv[2], "w").write(text)
print(text)
PY
echo "per run: $results; summary: $work/results.md"
