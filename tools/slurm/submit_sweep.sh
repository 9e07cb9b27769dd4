#!/usr/bin/env bash
# tools/slurm/submit_sweep.sh — submits a sharded `perpcomp sweep` to Slurm: a job array of N
# shards (sweep_array.sh) and a merge job that runs when all of them succeeded (merge_shards.sh).
#
#   tools/slurm/submit_sweep.sh N --model M --sweep S.yaml --calib C --eval E --out results.h5 [sweep options]
#
# Extra sbatch options go in SBATCH_* variables (SBATCH_PARTITION, SBATCH_TIMELIMIT, ...) or in
# PERPCOMP_SBATCH_ARGS (applied to both jobs). Logs: results.shard-K-of-N.log and results.merge.log.
# Prints "<array job id> <merge job id>".
set -euo pipefail

die() { echo "submit_sweep.sh: $*" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || die "usage: submit_sweep.sh N <perpcomp sweep options> --out results.h5"
n=$1
shift
[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "N must be a positive integer, got '$n'"
out=""
prev=""
for a in "$@"; do
  [ "$prev" = --out ] && out=$a
  case "$a" in --out=*) out=${a#--out=} ;; esac
  prev=$a
done
[ -n "$out" ] || die "--out results.h5 is required"
prefix="${out%.h5}"
read -r -a extra <<< "${PERPCOMP_SBATCH_ARGS:-}"

array=$(sbatch --parsable "${extra[@]}" --array="0-$((n - 1))" --output="$prefix.shard-%a-of-$n.log" \
  "$here/sweep_array.sh" "$@")
array=${array%%;*}
merge=$(sbatch --parsable "${extra[@]}" --dependency="afterok:$array" --kill-on-invalid-dep=yes \
  --output="$prefix.merge.log" "$here/merge_shards.sh" "$n" "$out")
merge=${merge%%;*}
echo "$array $merge"
