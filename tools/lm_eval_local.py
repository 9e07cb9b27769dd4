#!/usr/bin/env python3
"""lm-evaluation-harness (Hugging Face backend) on a model folder, over local copies of BLiMP
subject-verb agreement and WikiText-2 test (lm-eval's stock tasks fetch from the model hub; these
are the same tasks, prompts and metrics over files, see tools/lm_eval_tasks/ and docs/METRICS.md).
Runs in the reference environment (tools/setup-reference.sh), never downloads.

  lm_eval_local.py --model DIR --out RESULTS.json [--shared DATA] [--blimp FILE.jsonl ...]
                   [--no-wikitext] [--no-blimp] [--limit N] [--batch-size N] [--dtype float32]
                   [--max-length N]

--blimp: BLiMP files to evaluate (default: the six subject-verb agreement files of
DATA/tasks/blimp/data, the set `perpcomp eval --pairs blimp-sva` reads). One task per file,
named blimp_local_<file stem>; WikiText is wikitext_local. --limit: first N documents per task.
--max-length: lm-eval's HF max_length (the rolling window of wikitext; default: the model's
context, 8192 for SmolLM2, whose attention then costs more than its linears on a CPU).
RESULTS.json holds lm-eval's results/config/versions (what `perpcomp eval --import-lm-eval` reads);
with --samples also every scored request.
"""
import argparse
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = os.path.join(HERE, "lm_eval_tasks")
SVA = ["distractor_agreement_relational_noun", "distractor_agreement_relative_clause",
       "irregular_plural_subject_verb_agreement_1", "irregular_plural_subject_verb_agreement_2",
       "regular_plural_subject_verb_agreement_1", "regular_plural_subject_verb_agreement_2"]


def default_shared():
    env = os.environ.get("PERPCOMP_SHARED")
    if env:
        return os.path.join(env, "data") if os.path.isdir(os.path.join(env, "data")) else env
    return os.path.join(HERE, "..", "..", "shared", "data")


def write_tasks(folder, blimp_files, wikitext_file):
    names = []
    for f in blimp_files:
        stem = os.path.splitext(os.path.basename(f))[0]
        name = "blimp_local_" + stem
        with open(os.path.join(folder, name + ".yaml"), "w") as out:
            out.write(f"include: {os.path.join(TASKS, '_blimp_local_template_yaml')}\n"
                      f"task: {name}\ndataset_kwargs:\n  data_files:\n    train: {json.dumps(os.path.abspath(f))}\n")
        names.append(name)
    if wikitext_file:
        with open(os.path.join(folder, "wikitext_local.yaml"), "w") as out:
            out.write(f"include: {os.path.join(TASKS, '_wikitext_local_template_yaml')}\n"
                      f"task: wikitext_local\ndataset_kwargs:\n  data_files:\n"
                      f"    train: {json.dumps(os.path.abspath(wikitext_file))}\n  keep_linebreaks: false\n")
        names.append("wikitext_local")
    return names


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--shared", default=default_shared())
    ap.add_argument("--blimp", nargs="*")
    ap.add_argument("--no-blimp", action="store_true")
    ap.add_argument("--no-wikitext", action="store_true")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--batch-size", default="16")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--samples", action="store_true")
    ap.add_argument("--max-length", type=int)
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    blimp = [] if a.no_blimp else (a.blimp or [os.path.join(a.shared, "tasks/blimp/data", s + ".jsonl") for s in SVA])
    wiki = None if a.no_wikitext else os.path.join(a.shared, "text/wikitext-2/wiki.test.raw.txt")
    for f in blimp + ([wiki] if wiki else []):
        if not os.path.isfile(f):
            sys.exit(f"lm_eval_local.py: '{f}' does not exist (give --shared DATA or the files)")
    import lm_eval
    from lm_eval.tasks import TaskManager
    with tempfile.TemporaryDirectory(prefix="pc_lm_eval_tasks_") as folder:
        names = write_tasks(folder, blimp, wiki)
        tm = TaskManager(include_path=folder, include_defaults=False)
        res = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={a.model},dtype={a.dtype}"
                                      + (f",max_length={a.max_length}" if a.max_length else ""), tasks=names,
                                      task_manager=tm, limit=a.limit, batch_size=a.batch_size, device="cpu",
                                      log_samples=a.samples)
    keep = {k: res[k] for k in ("results", "versions", "n-shot", "n-samples", "config") if k in res}
    if a.samples:
        keep["samples"] = res.get("samples", {})
    with open(a.out, "w") as out:
        json.dump(keep, out, indent=1, default=str)
    for t in names:
        print(t, {k: v for k, v in res["results"][t].items() if k != "alias"})
    print("wrote", a.out)


if __name__ == "__main__":
    main()
