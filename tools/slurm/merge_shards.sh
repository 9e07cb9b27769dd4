#!/usr/bin/env bash
# tools/slurm/merge_shards.sh — joins the shards written by sweep_array.sh into one results file.
#
#   tools/slurm/merge_shards.sh N results.h5
#   sbatch --dependency=afterok:<array job id> --kill-on-invalid-dep=yes tools/slurm/merge_shards.sh N results.h5
#
# Runs `perpcomp merge results.shard-0-of-N.h5 ... results.shard-<N-1>-of-N.h5 --out results.h5
# --overwrite` (the merge refuses shards made under different conventions). A missing shard file
# is an error naming it. The perpcomp binary is $PERPCOMP, else the one on PATH.
#SBATCH --job-name=perpcomp-merge
#SBATCH --cpus-per-task=1
set -euo pipefail

die() { echo "merge_shards.sh: $*" >&2; exit 2; }
[ $# = 2 ] || die "usage: merge_shards.sh N results.h5"
n=$1
out=$2
[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "N must be a positive integer, got '$n'"

shards=()
missing=()
for ((k = 0; k < n; k++)); do
  f="${out%.h5}.shard-$k-of-$n.h5"
  shards+=("$f")
  [ -f "$f" ] || missing+=("$f")
done
[ ${#missing[@]} = 0 ] || die "missing shard results: ${missing[*]} (did every array task finish?)"
exec "${PERPCOMP:-perpcomp}" merge "${shards[@]}" --out "$out" --overwrite
