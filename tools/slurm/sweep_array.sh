#!/usr/bin/env bash
# tools/slurm/sweep_array.sh — one shard of a `perpcomp sweep` as a task of a Slurm job array.
#
#   sbatch --array=0-7 tools/slurm/sweep_array.sh --model M --sweep S.yaml --calib C --eval E --out results.h5 [...]
#
# Task K of an array of N tasks runs
#   perpcomp sweep ... --shard K/N --out results.shard-K-of-N.h5
# (runs with index % N == K; its work folder results.shard-K-of-N.work/ beside it, so a task that
# is requeued or resubmitted resumes where it stopped). Join the shards with
# tools/slurm/merge_shards.sh (tools/slurm/submit_sweep.sh submits both). The array must be
# 0..N-1 (a throttle such as --array=0-7%2 is fine). The perpcomp binary is $PERPCOMP, else the
# one on PATH; --threads defaults to the task's CPUs ($SLURM_CPUS_PER_TASK, else 1).
#
# Nothing below may depend on this file's folder: sbatch runs a copy of the script.
#SBATCH --job-name=perpcomp-sweep
#SBATCH --cpus-per-task=1
set -euo pipefail

die() { echo "sweep_array.sh: $*" >&2; exit 2; }

k=${SLURM_ARRAY_TASK_ID:-}
[ -n "$k" ] || die "run me as a Slurm job array: sbatch --array=0-<N-1> $0 <perpcomp sweep options>"
if [ -n "${SLURM_ARRAY_TASK_COUNT:-}" ]; then
  n=$SLURM_ARRAY_TASK_COUNT
else
  n=$(( SLURM_ARRAY_TASK_MAX - SLURM_ARRAY_TASK_MIN + 1 ))
fi
[ "${SLURM_ARRAY_TASK_MIN:-0}" = 0 ] || die "the array must start at 0 (--array=0-$((n - 1))), got ${SLURM_ARRAY_TASK_MIN}"
[ "$k" -lt "$n" ] || die "task $k is outside 0..$((n - 1)); the array must be contiguous (--array=0-$((n - 1)))"

args=()
out=""
threads_given=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --shard|--shard=*) die "--shard is set from the array task (K/N); leave it out" ;;
    --threads|--threads=*) threads_given=1; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
[ -n "$out" ] || die "--out results.h5 is required (the shard writes results.shard-$k-of-$n.h5)"
[ $threads_given = 1 ] || args+=(--threads "${SLURM_CPUS_PER_TASK:-1}")

shard_out="${out%.h5}.shard-$k-of-$n.h5"
echo "sweep_array.sh: task $k of $n on $(hostname) -> $shard_out"
exec "${PERPCOMP:-perpcomp}" sweep "${args[@]}" --shard "$k/$n" --out "$shard_out"
