#!/usr/bin/env python3
"""Held-out damage of allocation plans at equal budget, over calibration seeds.

For every calibration seed: `perpcomp sensitivity` (one scan), then `perpcomp allocate` for every
predictor (and `--uniform` baselines on the first seed), `perpcomp compress --recipe` of each plan
and `perpcomp eval --reference` of the result against the original on held-out text. Identical
plans (same recipe text but for its name) are compressed and evaluated once. Every step's output is
kept in --work and a finished step is not run again, so a stopped run resumes. Prints a markdown
table (and writes it to --table): per predictor the average stored bits (or sparsity), held-out
ΔNLL mean over seeds with [min, max] and the mean standard error over windows, KL mean, how
many distinct plans the seeds gave, and the paired difference from the --paired plan: every plan is
evaluated on the same windows, so per window the plan's ΔNLL (averaged over seeds) minus the
--paired plan's, with its mean and standard error over windows (`eval --json`'s
window_delta_nll). Every plan is compressed on the same calibration (seed 0,
--compress-samples windows), so the spread over seeds is the plans' own.

Standard library only (runs with /usr/bin/python3 or the reference environment).

  python3 bench/allocation/plans.py --perpcomp build/tools/perpcomp --model SMOLLM2 \\
      --candidates bench/allocation/rtn-w3-w4-w8-g64.yaml --budget bits=3.5 \\
      --calib c4_sample.jsonl --eval-text wiki.test.raw.txt --work /tmp/alloc --seeds 0,1,2
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import time


def run(cmd, log):
    """Runs cmd, appending its output to log; returns stdout. Raises with the log's tail on failure."""
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(log, "a") as f:
        f.write("$ " + " ".join(cmd) + "\n" + p.stdout + p.stderr + "\n")
    if p.returncode != 0:
        sys.exit(f"plans.py: {' '.join(cmd[:2])} failed (rc {p.returncode}):\n{p.stderr[-2000:]}")
    return p.stdout, time.time() - t0


def plan_key(recipe_path):
    """A plan's identity: its recipe text without comments, name, description and calibration seed
    (compress runs every plan with --calib-seed 0)."""
    with open(recipe_path) as f:
        text = "".join(l for l in f if not l.startswith(("#", "name:", "description:", "  seed:")))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def compress_plan(perpcomp, model, plan, calib, samples, seq_len, folder, threads, log):
    """`perpcomp compress --recipe plan` into folder, every plan on the same calibration (seed 0);
    returns the seconds it took."""
    _, secs = run([perpcomp, "compress", "--model", model, "--recipe", plan, "--calib", calib,
                   "--calib-samples", str(samples), "--calib-seq-len", str(seq_len), "--calib-seed", "0",
                   "--out", folder, "--overwrite", "--threads", str(threads)], log)
    return secs


def eval_plan(perpcomp, folder, model, text, seq_len, windows, threads, log):
    """`perpcomp eval --reference model` of folder on the first windows of text: (its JSON, seconds)."""
    out, secs = run([perpcomp, "eval", "--json", "--model", folder, "--reference", model, "--text", text,
                     "--seq-len", str(seq_len), "--max-windows", str(windows), "--threads", str(threads)], log)
    return json.loads(out.strip().splitlines()[-1]), secs


def window_means(rs):
    """Per-window ΔNLL averaged over a plan's seeds (None without window_delta_nll)."""
    ws = [r[3].get("window_delta_nll") for r in rs]
    if not ws or any(w is None for w in ws) or len({len(w) for w in ws}) != 1:
        return None
    return [sum(col) / len(ws) for col in zip(*ws)]


def paired_mean_se(w, base):
    """(mean, standard error) over windows of the per-window difference w − base; None where
    either is missing, their lengths differ or there are fewer than 2 windows."""
    if w is None or base is None or len(w) != len(base) or len(w) < 2:
        return None
    d = [x - y for x, y in zip(w, base)]
    m = sum(d) / len(d)
    return m, (sum((x - m) ** 2 for x in d) / (len(d) - 1) / len(d)) ** 0.5


def paired_difference(w, base):
    """Mean ± standard error over windows of w − base ("—" where either is missing)."""
    p = paired_mean_se(w, base)
    return "—" if p is None else f"{p[0]:+.4f} ± {p[1]:.4f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perpcomp", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--candidates", required=True)
    ap.add_argument("--budget", required=True, help="bits=B or sparsity=S")
    ap.add_argument("--predictors", default="perp,iso,par,cos-order,weight")
    ap.add_argument("--uniform", default="", help="candidates to report as uniform baselines (comma-separated)")
    ap.add_argument("--calib", required=True)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--calib-samples", type=int, default=4)
    ap.add_argument("--calib-seq-len", type=int, default=512)
    ap.add_argument("--measure-windows", type=int, default=4)
    ap.add_argument("--compress-samples", type=int, default=32,
                    help="calibration windows of every plan's compress (seed 0 for all plans, so the seeds vary the plan only)")
    ap.add_argument("--kl", action="store_true", help="scan with --kl (adds the kl and acc-* predictors' columns)")
    ap.add_argument("--eval-text", required=True)
    ap.add_argument("--eval-windows", type=int, default=16)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", required=True)
    ap.add_argument("--paired", default="",
                    help="the plan the others are paired against (default: the first predictor)")
    ap.add_argument("--table", default="")
    ap.add_argument("--report-only", action="store_true",
                    help="run nothing: the table of the steps already finished in --work")
    a = ap.parse_args()

    os.makedirs(os.path.join(a.work, "models"), exist_ok=True)
    log = os.path.join(a.work, "log.txt")
    pc = a.perpcomp
    seeds = [int(s) for s in a.seeds.split(",") if s != ""]
    predictors = [p for p in a.predictors.split(",") if p]
    uniforms = [u for u in a.uniform.split(",") if u]
    budget_kind = a.budget.split("=")[0]
    rows = []  # (label, seed, plan file, allocate stdout)
    scans = {}
    for seed in seeds:
        sens = os.path.join(a.work, f"sens-seed{seed}.h5")
        if a.report_only and not os.path.exists(sens):
            continue
        if not os.path.exists(sens):
            cmd = [pc, "sensitivity", "--model", a.model, "--candidates", a.candidates, "--calib", a.calib,
                   "--calib-samples", str(a.calib_samples), "--calib-seq-len", str(a.calib_seq_len),
                   "--calib-seed", str(seed), "--measure-windows", str(a.measure_windows),
                   "--out", sens + ".tmp.h5", "--overwrite", "--threads", str(a.threads)] + (["--kl"] if a.kl else [])
            out, secs = run(cmd, log)
            os.replace(sens + ".tmp.h5", sens)
            with open(sens + ".txt", "w") as f:
                f.write(out.strip().splitlines()[-1] + f"\n{secs:.1f} s wall\n")
            print(f"seed {seed}: sensitivity {secs:.0f} s", flush=True)
        with open(sens + ".txt") as f:
            scans[seed] = f.read().strip()
        labels = [(p, ["--predictor", p]) for p in predictors]
        if seed == seeds[0]:
            labels += [(f"uniform {u}", ["--uniform", u]) for u in uniforms]
        for label, extra in labels:
            plan = os.path.join(a.work, f"plan-seed{seed}-{label.replace(' ', '-')}.yaml")
            out, _ = run([pc, "allocate", "--sensitivity", sens, "--budget", a.budget, "--out", plan,
                          "--overwrite"] + extra, log)
            rows.append((label, seed, plan, out))

    results = {}
    for label, seed, plan, out in rows:
        key = plan_key(plan)
        folder = os.path.join(a.work, "models", key)
        done = folder + ".eval.json"
        if a.report_only and not os.path.exists(done):
            continue
        if not os.path.exists(done):
            cs = None
            if not os.path.exists(os.path.join(folder, "config.json")):
                cs = compress_plan(pc, a.model, plan, a.calib, a.compress_samples, a.calib_seq_len, folder,
                                   a.threads, log)
            j, es = eval_plan(pc, folder, a.model, a.eval_text, a.seq_len, a.eval_windows, a.threads, log)
            j["compress_seconds"] = cs
            j["eval_seconds"] = es
            with open(done, "w") as f:
                json.dump(j, f)
            print(f"{label} seed {seed}: plan {key} dNLL {j['delta_nll']:+.4f} "
                  f"(compress {cs or 0:.0f} s, eval {es:.0f} s)", flush=True)
        with open(done) as f:
            j = json.load(f)
        m = re.search(r"average (bits|sparsity) ([0-9.]+)", out)
        results.setdefault(label, []).append((seed, key, float(m.group(2)), j))

    unit = "bits" if budget_kind == "bits" else "sparsity"
    paired = a.paired or predictors[0]
    base = window_means(results.get(paired, []))
    lines = [f"| plan | average {unit} | ΔNLL mean | [min, max] over seeds | SE (windows) | KL mean | distinct plans "
             f"| − {paired} (paired, ± SE) |",
             "|---|---:|---:|---|---:|---:|---:|---:|"]
    order = sorted(results, key=lambda k: sum(r[3]["delta_nll"] for r in results[k]) / len(results[k]))
    for label in order:
        rs = results[label]
        d = [r[3]["delta_nll"] for r in rs]
        se = [r[3]["delta_nll_se"] for r in rs if r[3].get("delta_nll_se") is not None]
        kl = [r[3]["kl_mean"] for r in rs]
        avg = [r[2] for r in rs]
        span = f"[{min(d):+.4f}, {max(d):+.4f}]" if len(rs) > 1 else "—"
        lines.append(f"| {label} | {sum(avg) / len(avg):.4f} | {sum(d) / len(d):+.4f} | {span} | "
                     f"{(sum(se) / len(se)) if se else float('nan'):.4f} | {sum(kl) / len(kl):.4f} | "
                     f"{len(set(r[1] for r in rs))} of {len(rs)} | {paired_difference(window_means(rs), base)} |")
    table = "\n".join(lines)
    ref = next(iter(results.values()))[0][3]
    footer = (f"\nreference NLL {ref['mean_nll'] - ref['delta_nll']:.4f} on {a.eval_windows} windows of "
              f"{a.seq_len} tokens of {os.path.basename(a.eval_text)}; scans: " +
              "; ".join(f"seed {s}: {scans[s].splitlines()[-1]}" for s in scans))
    print(table + footer)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table + footer + "\n")


if __name__ == "__main__":
    main()
