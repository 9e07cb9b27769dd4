#!/usr/bin/env python3
"""Every shipped recipe (recipes/*.yaml) through the three commands a user runs, one by one:
`perpcomp compress`, `perpcomp measure`, `perpcomp eval --reference`; prints a Markdown table of
held-out ΔNLL, KL, top-1 agreement and each command's wall time and peak memory, headed by the CPU
(docs/RESULTS.md "Every shipped recipe on SmolLM2-135M"). Needs only the standard library (no
reference environment).

  every_recipe.py --perpcomp BIN --model DIR --calib FILE --text FILE --work DIR
                  [--recipes R.yaml ...] [--calib-samples 8] [--calib-seq-len 512] [--seq-len 512]
                  [--measure-windows 4] [--eval-windows 16] [--threads 2] [--table FILE]

Resumable: a recipe whose result file (WORK/NAME.json) exists is not run again, so a run cut off
goes on where it stopped; delete the file to measure a recipe again. Before the recipes, the
original is measured and evaluated against itself, which fills the reference caches (WORK/cache)
that every later measure and eval reads (its row shows that cost, and ΔNLL 0 as a check).

Wall time and peak resident memory of each command come from /usr/bin/time -v.
"""
import argparse
import glob
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
from peers import cpu_model, timed  # noqa: E402  (bench/peers/peers.py: /usr/bin/time and lscpu)


def recipe_name(path):
    """The recipe file's `name:` (the folder and result names), else the file's stem."""
    with open(path) as f:
        for line in f:
            if line.startswith("name:"):
                return line.split(":", 1)[1].strip().strip('"')
    return os.path.splitext(os.path.basename(path))[0]


def write_json(path, obj):
    """Writes obj to path through a temporary file, so a run cut off never leaves half a result."""
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(path + ".tmp", path)


def measure_and_eval(a, compressed, stem):
    """measure and eval --reference of one folder against --model; returns the result dict."""
    mh5 = os.path.join(a.work, stem + ".measure.h5")
    cache = ["--cache", os.path.join(a.work, "cache")]
    out, m_wall, m_rss = timed(
        [a.perpcomp, "measure", "--json", "--overwrite", "--threads", str(a.threads), "--reference", a.model,
         "--compressed", compressed, "--text", a.text, "--seq-len", str(a.seq_len), "--max-windows",
         str(a.measure_windows), "--out", mh5] + cache, os.path.join(a.work, stem + ".measure.log"))
    measure = json.loads(out)
    out, e_wall, e_rss = timed(
        [a.perpcomp, "eval", "--json", "--threads", str(a.threads), "--model", compressed, "--reference", a.model,
         "--text", a.text, "--seq-len", str(a.seq_len), "--max-windows", str(a.eval_windows)] + cache,
        os.path.join(a.work, stem + ".eval.log"))
    d = json.loads(out)
    return {"measure": {"seconds": m_wall, "rss_mib": m_rss, "delta_nll": measure["delta_nll"],
                        "kl_mean": measure["kl_mean"], "windows": measure["windows"]},
            "eval": {"seconds": e_wall, "rss_mib": e_rss, "delta_nll": d["delta_nll"],
                     "delta_nll_se": d.get("delta_nll_se"), "kl_mean": d["kl_mean"],
                     "top1_agreement": d["top1_agreement"], "mean_nll": d["mean_nll"],
                     "reference_mean_nll": d["reference_mean_nll"], "tokens": d["tokens"]}}


def run_one(a, recipe):
    name = recipe_name(recipe)
    result_file = os.path.join(a.work, name + ".json")
    if os.path.exists(result_file):
        with open(result_file) as f:
            return json.load(f)
    folder = os.path.join(a.work, name)
    _, c_wall, c_rss = timed(
        [a.perpcomp, "compress", "--threads", str(a.threads), "--model", a.model, "--recipe", recipe, "--calib",
         a.calib, "--calib-samples", str(a.calib_samples), "--calib-seq-len", str(a.calib_seq_len), "--out", folder,
         "--overwrite"], os.path.join(a.work, name + ".compress.log"))
    r = {"recipe": name, "file": os.path.relpath(recipe), "compress": {"seconds": c_wall, "rss_mib": c_rss}}
    r.update(measure_and_eval(a, folder, name))
    write_json(result_file, r)
    return r


def row(r):
    e, m = r["eval"], r["measure"]
    se = f" ± {e['delta_nll_se']:.4f}" if e.get("delta_nll_se") is not None else ""
    c = r.get("compress")
    cs = f"{c['seconds']:.0f} s / {c['rss_mib']:.0f}" if c else "—"
    return (f"| {r['recipe']} | {e['delta_nll']:+.4f}{se} | {e['kl_mean']:.4f} | {e['top1_agreement']:.4f} | "
            f"{m['delta_nll']:+.4f} | {cs} | {m['seconds']:.0f} s / {m['rss_mib']:.0f} | "
            f"{e['seconds']:.0f} s / {e['rss_mib']:.0f} |")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--perpcomp", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--calib", required=True)
    p.add_argument("--text", required=True, help="held-out text for measure and eval")
    p.add_argument("--work", required=True)
    p.add_argument("--recipes", nargs="+", default=sorted(glob.glob(os.path.normpath(os.path.join(HERE, "..", "..", "recipes")) + "/*.yaml")))
    p.add_argument("--calib-samples", type=int, default=8)
    p.add_argument("--calib-seq-len", type=int, default=512)
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--measure-windows", type=int, default=4)
    p.add_argument("--eval-windows", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--table", help="also write the table to this file")
    a = p.parse_args()
    for f in [a.perpcomp, a.calib, a.text] + a.recipes:
        if not os.path.isfile(f):
            sys.exit(f"every_recipe.py: {f}: no such file")
    if not os.path.isfile(os.path.join(a.model, "config.json")):
        sys.exit(f"every_recipe.py: {a.model}: not a model folder (no config.json)")
    os.makedirs(a.work, exist_ok=True)

    results = []
    ref_file = os.path.join(a.work, "original.json")
    if os.path.exists(ref_file):
        with open(ref_file) as f:
            original = json.load(f)
    else:
        original = {"recipe": "original (fills the caches)"}
        original.update(measure_and_eval(a, a.model, "original"))
        write_json(ref_file, original)
    for k, recipe in enumerate(a.recipes):
        print(f"every_recipe.py: [{k + 1}/{len(a.recipes)}] {recipe}", file=sys.stderr, flush=True)
        results.append(run_one(a, recipe))

    lines = [f"CPU: {cpu_model(a.perpcomp)}; --threads {a.threads}. Calibration {a.calib_samples} samples of "
             f"{a.calib_seq_len} tokens from {os.path.basename(a.calib)}; measure on the first {a.measure_windows} "
             f"and eval on the first {a.eval_windows} windows of {a.seq_len} tokens of {os.path.basename(a.text)} "
             f"({original['eval']['tokens']} predicted tokens; the original's mean NLL "
             f"{original['eval']['reference_mean_nll']:.4f}). Times: wall seconds / peak RSS MiB.", "",
             "| recipe | ΔNLL ± SE (eval) | KL mean | top-1 | ΔNLL (measure) | compress | measure | eval |",
             "|---|---:|---:|---:|---:|---:|---:|---:|", row(original)]
    lines += [row(r) for r in sorted(results, key=lambda r: r["eval"]["delta_nll"])]
    text = "\n".join(lines)
    print(text)
    if a.table:
        with open(a.table, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
