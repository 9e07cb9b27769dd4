#!/usr/bin/env python3
"""perpcomp against llm-compressor: the same model, the same calibration token ids, the same scheme;
held-out delta NLL and KL of both, measured by one evaluator (perpcomp eval on both saved folders),
wall time and peak memory of both tools. Runs in the reference environment
(tools/setup-reference.sh); perpcomp itself never needs Python.

  peers.py run --perpcomp BIN --model DIR --calib TEXT --eval-text TEXT --work DIR [options]
      for every method in --methods: `perpcomp compress` (its calibration windows written with
      --calib-dump), then llm-compressor's oneshot on exactly those ids (a child process), its
      result saved as a dense float32 Hugging Face folder, then `perpcomp eval --reference` on
      both folders. Prints a Markdown table (with the CPU model) and writes it to --table and the
      figures to WORK/results.json.
  peers.py llmc --model DIR --ids FILE --method M --group G --out DIR
      the child: one llm-compressor run (oneshot) on the ids of FILE (one window per line), the
      result written dense (fake-quantized weights) to DIR; prints {"seconds": oneshot's wall time}.

Methods (perpcomp recipe / llm-compressor recipe):
  rtn          rtn / QuantizationModifier (memoryless min-max observer: round to nearest)
  awq          awq with duo_scaling true, grid llm-compressor, clip false, propagate original
               (llm-compressor's AWQ form) / AWQModifier (duo_scaling True) + QuantizationModifier
  awq-llmawq   awq with perpcomp's defaults (llm-awq: x_mean^a scales, clipping search, original
               outputs fed forward) / the same llm-compressor run as `awq`
  gptq         gptq (act_order false; perpcomp's default dynamic groups: a group's range from its
               weights when the walk reaches it, as IST-DASLab's GPTQ) / GPTQModifier (actorder None)
  gptq-static  gptq with static_groups true (every group's range from the weights before the walk,
               llm-compressor's rule: its observer's scales are computed before GPTQ runs) / the same
               llm-compressor run as `gptq`
  wanda-50, wanda-2of4, sparsegpt-50, sparsegpt-2of4
               / WandaPruningModifier, SparseGPTModifier (sparsity 0.5, mask "0:0" or "2:4")
Quantization is 4-bit asymmetric integer, group --group along the input (-1: per output channel).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

QUANT = {"rtn", "awq", "awq-llmawq", "gptq", "gptq-static"}
METHODS = ["rtn", "awq", "awq-llmawq", "gptq", "gptq-static", "wanda-50", "wanda-2of4", "sparsegpt-50", "sparsegpt-2of4"]
# The llm-compressor run a method's row is compared with (variants of one perpcomp method share it).
LLMC_RUN = {"awq-llmawq": "awq", "gptq-static": "gptq"}
# Where the two algorithms differ on purpose (docs/AWQ.md, docs/PRUNING.md): printed beside the number.
NOTES = {
    "rtn": "same algorithm (min-max round to nearest)",
    "awq": "perpcomp set to llm-compressor's form: duo scaling on its grid (s = 1, then alpha = i/18), no clipping "
           "search, original outputs fed forward",
    "awq-llmawq": "perpcomp's defaults differ on purpose (docs/AWQ.md): llm-awq's x_mean^a scales and clipping "
                  "search, original outputs fed forward",
    "gptq": "no act-order on both; perpcomp's default dynamic groups (a group's range from its weights as the "
            "walk reaches it, IST-DASLab) against llm-compressor's static ones (from the original weights)",
    "gptq-static": "perpcomp with static_groups: true (llm-compressor's rule); the same llm-compressor run as gptq",
    "wanda-50": "same algorithm",
    "wanda-2of4": "same algorithm",
    "sparsegpt-50": "same algorithm",
    "sparsegpt-2of4": "same algorithm",
}


def perpcomp_recipe(method, group):
    """The perpcomp recipe YAML of a method."""
    q = f"  bits: 4\n  group_size: {group}\n  zero_point: true\n"
    if method == "rtn":
        return "name: peers-rtn\nmethod: rtn\nparams:\n" + q
    if method == "awq":
        # llm-compressor's sequential pipeline runs under DisableQuantization and AWQ + QuantizationModifier only
        # fake-quantize at forward time, so the next layer gets the smoothed float outputs: the original ones.
        return ("name: peers-awq\nmethod: awq\npropagate: original\nparams:\n" + q +
                "  duo_scaling: true\n  grid: llm-compressor\n  clip: false\n")
    if method == "awq-llmawq":
        return "name: peers-awq-llmawq\nmethod: awq\nparams:\n" + q
    if method in ("gptq", "gptq-static"):
        static = "  static_groups: true\n" if method == "gptq-static" else ""
        return f"name: peers-{method}\nmethod: gptq\nparams:\n" + q + "  act_order: false\n" + static
    name, pattern = method.split("-")
    pat = "unstructured" if pattern == "50" else "2:4"
    return f"name: peers-{method}\nmethod: {name}\nparams:\n  sparsity: 0.5\n  pattern: \"{pat}\"\n"


def windowing(method):
    # AWQ calibrates on llm-awq's concatenated blocks, the others on random windows (their conventions).
    return "awq" if method.startswith("awq") else "random"


# ---------------------------------------------------------------------------------------------
# The llm-compressor child.

def llmc_recipe(method, group):
    from compressed_tensors.quantization import QuantizationArgs, QuantizationScheme

    def scheme():
        args = dict(num_bits=4, type="int", symmetric=False)
        args.update(dict(strategy="channel") if group == -1 else dict(strategy="group", group_size=group))
        return {"group_0": QuantizationScheme(targets=["Linear"], weights=QuantizationArgs(**args))}

    if method in ("rtn", "awq", "awq-llmawq", "gptq"):
        from llmcompressor.modifiers.quantization import GPTQModifier, QuantizationModifier
        if method == "gptq":
            return [GPTQModifier(config_groups=scheme(), ignore=["lm_head"], actorder=None,
                                 block_size=128, dampening_frac=0.01)]
        quant = QuantizationModifier(config_groups=scheme(), ignore=["lm_head"])
        if method == "rtn":
            return [quant]
        from llmcompressor.modifiers.transform.awq import AWQModifier
        return [AWQModifier(duo_scaling=True, n_grid=20), quant]
    name, pattern = method.split("-")
    mask = "0:0" if pattern == "50" else "2:4"
    # The pruning modifiers name a targeted module's own linear "lm_head." (with the dot), which
    # ignore=["lm_head"] does not match: without the regex they prune the (tied) head as well.
    skip = ["lm_head", "re:.*lm_head.*"]
    if name == "wanda":
        from llmcompressor.modifiers.pruning import WandaPruningModifier
        return [WandaPruningModifier(sparsity=0.5, mask_structure=mask, targets=["Linear"], ignore=skip)]
    from llmcompressor.modifiers.pruning import SparseGPTModifier
    return [SparseGPTModifier(sparsity=0.5, mask_structure=mask, targets=["Linear"], ignore=skip,
                              block_size=128, dampening_frac=0.01)]


def read_ids(path):
    with open(path) as f:
        rows = [[int(t) for t in line.split()] for line in f if line.strip()]
    if not rows or len({len(r) for r in rows}) != 1:
        sys.exit(f"{path}: expected windows of equal length, one per line")
    return rows


def dense_state_dict(model):
    """Every tensor of the model with each quantized linear's weight fake-quantized by its own
    scale / zero point (what compressed-tensors' forward computes), so the folder is plain."""
    import torch
    from compressed_tensors.quantization import forward_quantize

    out = {}
    with torch.no_grad():
        for name, t in model.state_dict().items():
            mod_name, _, leaf = name.rpartition(".")
            if leaf in ("weight_scale", "weight_zero_point", "weight_g_idx") or "observer" in name:
                continue
            mod = model.get_submodule(mod_name) if mod_name else model
            scheme = getattr(mod, "quantization_scheme", None)
            if leaf == "weight" and scheme is not None and scheme.weights is not None and hasattr(mod, "weight_scale"):
                t = forward_quantize(mod, mod.weight, "weight", scheme.weights)
            out[name] = t.detach().to(torch.float32).clone()
    return out


def cmd_llmc(a):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from llmcompressor import oneshot

    if not torch.cuda.is_available():
        # llm-compressor 0.14's AWQ pins its cached block inputs (IntermediatesCache.pin_memory),
        # which needs a CUDA driver; on a CPU-only machine pinning has no purpose: leave them as they are.
        from llmcompressor.pipelines.cache import IntermediatesCache
        IntermediatesCache.pin_memory = lambda self, *args, **kwargs: None
    torch.manual_seed(0)
    ids = read_ids(a.ids)
    ds = Dataset.from_dict({"input_ids": ids, "attention_mask": [[1] * len(r) for r in ids]})
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    t0 = time.perf_counter()
    oneshot(model=model, dataset=ds, recipe=llmc_recipe(a.method, a.group), num_calibration_samples=len(ids),
            max_seq_length=len(ids[0]), shuffle_calibration_samples=False, batch_size=min(len(ids), 32))
    seconds = time.perf_counter() - t0
    # A fresh model from the original folder takes the dense tensors: a plain checkpoint, no
    # quantization config, that any loader (perpcomp, transformers) reads as the original.
    sd = dense_state_dict(model)
    fresh = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.float32)
    missing, unexpected = fresh.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not fresh.config.tie_word_embeddings]
    if missing or unexpected:
        sys.exit(f"dense state dict does not fit the original model: missing {missing}, unexpected {unexpected}")
    fresh.save_pretrained(a.out, safe_serialization=True)
    for f in ("tokenizer.json", "tokenizer.model", "tokenizer_config.json", "special_tokens_map.json",
              "vocab.json", "merges.txt", "generation_config.json"):
        src = os.path.join(a.model, f)
        if os.path.exists(src) and not os.path.exists(os.path.join(a.out, f)):
            shutil.copy(src, os.path.join(a.out, f))
    print(json.dumps({"seconds": seconds}))


# ---------------------------------------------------------------------------------------------
# The driver.

def timed(cmd, log):
    """Runs cmd under /usr/bin/time -v; returns (stdout, wall seconds, peak RSS MiB)."""
    with open(log, "w") as errf:
        p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=subprocess.PIPE, stderr=errf, text=True)
    err = open(log).read()
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{err[-4000:]}")
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) / 1024
    m = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", err)
    wall = int(m.group(1) or 0) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
    return p.stdout, wall, rss


def evaluate(a, folder, log):
    cmd = [a.perpcomp, "eval", "--json", "--threads", str(a.threads), "--model", folder, "--reference", a.model,
           "--text", a.eval_text, "--seq-len", str(a.eval_seq_len), "--cache", os.path.join(a.work, "reference-cache")]
    if a.eval_windows:
        cmd += ["--max-windows", str(a.eval_windows)]
    out, _, _ = timed(cmd, log)
    return json.loads(out)


def weights_equal(a_dir, b_dir):
    """The fraction of the block linears' weights (2-D tensors under '.layers.') that are equal,
    element for element, in the two folders' model.safetensors."""
    import torch
    from safetensors import safe_open

    equal = total = 0
    with safe_open(os.path.join(a_dir, "model.safetensors"), "pt") as fa, \
            safe_open(os.path.join(b_dir, "model.safetensors"), "pt") as fb:
        names = [n for n in fa.keys() if ".layers." in n and n.endswith(".weight")]
        for n in names:
            x = fa.get_tensor(n)
            if x.dim() != 2:
                continue
            if n not in fb.keys():
                sys.exit(f"{b_dir}/model.safetensors has no {n}")
            y = fb.get_tensor(n)
            equal += int((x.float() == y.float()).sum())
            total += x.numel()
    return equal / total if total else float("nan")


def pick(ev, *keys):
    """The first of keys found anywhere in the eval JSON (top level or one level down)."""
    for k in keys:
        if k in ev:
            return ev[k]
        for v in ev.values():
            if isinstance(v, dict) and k in v:
                return v[k]
    raise KeyError(f"none of {keys} in perpcomp eval's JSON: {list(ev)}")


def version_field(perpcomp, label):
    """The rest of the `perpcomp version` line that starts with label ("unknown" if none)."""
    out = subprocess.run([perpcomp, "version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    m = re.search(r"^" + re.escape(label) + r"(.+)$", out, re.MULTILINE)
    return m.group(1).strip() if m else "unknown"


def blas_kernels(perpcomp):
    """The BLAS kernels perpcomp runs ("OpenBLAS SkylakeX ...")."""
    return version_field(perpcomp, "BLAS kernels: ")


def libtorch_version(perpcomp):
    """The LibTorch a perpcomp binary was built with ("1.13.0")."""
    return version_field(perpcomp, "LibTorch ")


def cpu_model(perpcomp=None):
    """lscpu's model name and the visible cores; with perpcomp's path, also the BLAS kernels it runs."""
    out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"Model name:\s*(.+)", out)
    line = f"{m.group(1).strip() if m else 'unknown CPU'}, {os.cpu_count()} cores visible"
    return line + (f"; perpcomp's BLAS kernels: {blas_kernels(perpcomp)}" if perpcomp else "")


def cmd_run(a):
    os.makedirs(a.work, exist_ok=True)
    a.eval_label = os.path.basename(a.eval_text)
    if a.eval_bytes:
        # The first N bytes of the held-out text (cut at a line end), the same file for every evaluation.
        with open(a.eval_text, "rb") as f:
            head = f.read(a.eval_bytes)
        head = head[:head.rfind(b"\n") + 1] or head
        a.eval_label = f"the first {len(head)} bytes of {a.eval_label}"
        a.eval_text = os.path.join(a.work, "eval-text.txt")
        with open(a.eval_text, "wb") as f:
            f.write(head)
    methods = a.methods.split(",")
    for m in methods:
        if m not in METHODS:
            sys.exit(f"unknown method {m} (known: {', '.join(METHODS)})")
    results = []
    llmc_cache = {}  # variants (LLMC_RUN) share llm-compressor's run when their ids are equal
    for m in methods:
        d = os.path.join(a.work, m)
        os.makedirs(d, exist_ok=True)
        done = os.path.join(d, "row.json")
        if a.resume and os.path.exists(done):  # a finished method of an earlier run with the same options
            with open(done) as f:
                results.append(json.load(f))
            continue
        recipe = os.path.join(d, "recipe.yaml")
        with open(recipe, "w") as f:
            f.write(perpcomp_recipe(m, a.group))
        ids = os.path.join(d, "calib-ids.txt")
        pc_out = os.path.join(d, "perpcomp")
        cmd = [a.perpcomp, "compress", "--threads", str(a.threads), "--model", a.model, "--recipe", recipe,
               "--calib", a.calib, "--calib-samples", str(a.samples), "--calib-seq-len", str(a.seq_len),
               "--calib-windowing", windowing(m), "--calib-seed", "0", "--calib-dump", ids, "--out", pc_out,
               "--overwrite"]
        print(f"[{m}] perpcomp compress", flush=True)
        _, pc_wall, pc_rss = timed(cmd, os.path.join(d, "perpcomp.log"))
        lm = LLMC_RUN.get(m, m)
        key = (open(ids).read(), lm)
        if key in llmc_cache:
            lc_out, lc_wall, lc_rss, lc_seconds = llmc_cache[key]
        else:
            lc_out = os.path.join(d, "llmcompressor")
            shutil.rmtree(lc_out, ignore_errors=True)
            print(f"[{m}] llm-compressor oneshot", flush=True)
            out, lc_wall, lc_rss = timed([sys.executable, os.path.abspath(__file__), "llmc", "--model", a.model,
                                          "--ids", ids, "--method", lm, "--group", str(a.group), "--out", lc_out],
                                         os.path.join(d, "llmcompressor.log"))
            lc_seconds = json.loads(out.strip().splitlines()[-1])["seconds"]
            llmc_cache[key] = (lc_out, lc_wall, lc_rss, lc_seconds)
        print(f"[{m}] perpcomp eval of both", flush=True)
        ev_pc = evaluate(a, pc_out, os.path.join(d, "eval-perpcomp.log"))
        ev_lc = evaluate(a, lc_out, os.path.join(d, "eval-llmcompressor.log"))
        with open(os.path.join(pc_out, "config.json")) as f:
            pc_seconds = json.load(f)["perpcomp_compression"]["seconds"]
        row = {
            "method": m, "note": NOTES[m],
            "windows": len(read_ids(ids)), "seq_len": a.seq_len,
            "perpcomp": {"delta_nll": pick(ev_pc, "delta_nll"), "kl": pick(ev_pc, "kl_mean", "kl"),
                         "compress_s": pc_seconds, "process_s": pc_wall, "peak_rss_mib": pc_rss},
            "llmcompressor": {"delta_nll": pick(ev_lc, "delta_nll"), "kl": pick(ev_lc, "kl_mean", "kl"),
                              "compress_s": lc_seconds, "process_s": lc_wall, "peak_rss_mib": lc_rss},
            "ref_mean_nll": pick(ev_pc, "reference_mean_nll"), "eval_tokens": pick(ev_pc, "tokens"),
            "weights_equal": weights_equal(pc_out, lc_out),
        }
        results.append(row)
        with open(done, "w") as f:
            json.dump(row, f)
        print(json.dumps(row), flush=True)
    table = format_table(a, results)
    print(table)
    with open(os.path.join(a.work, "results.json"), "w") as f:
        json.dump({"model": a.model, "cpu": cpu_model(a.perpcomp), "results": results}, f, indent=1)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)


def format_table(a, results):
    scheme = "per output channel" if a.group == -1 else f"group {a.group}"
    r0 = results[0]
    lines = [
        f"perpcomp vs llm-compressor on {os.path.basename(os.path.normpath(a.model))}: quantization w4 asymmetric, "
        f"{scheme}; pruning 50% unstructured and 2:4. Calibration: the same {r0['windows']} x {a.seq_len} token ids "
        f"for both ({os.path.basename(a.calib)}). Evaluator: perpcomp eval of both saved folders against the "
        f"original on {a.eval_label}, {r0['eval_tokens']} tokens in windows of {a.eval_seq_len} "
        f"(original mean NLL {r0['ref_mean_nll']:.4f}). CPU: {cpu_model(a.perpcomp)}; perpcomp --threads {a.threads}.",
        "",
        "| method | ΔNLL perpcomp | ΔNLL llm-compressor | ratio | KL perpcomp | KL llm-compressor | KL ratio | "
        "time perpcomp (compress / process) | time llm-compressor (oneshot / process) | peak RSS perpcomp | "
        "peak RSS llm-compressor | block linears' weights equal | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        p, l = r["perpcomp"], r["llmcompressor"]
        ratio = p["delta_nll"] / l["delta_nll"] if l["delta_nll"] > 0 else float("nan")
        lines.append(
            f"| {r['method']} | {p['delta_nll']:.5f} | {l['delta_nll']:.5f} | {ratio:.3f} | {p['kl']:.5f} | "
            f"{l['kl']:.5f} | {p['kl'] / l['kl']:.3f} | {p['compress_s']:.1f} s / {p['process_s']:.1f} s | {l['compress_s']:.1f} s / "
            f"{l['process_s']:.1f} s | {p['peak_rss_mib']:.0f} MiB | {l['peak_rss_mib']:.0f} MiB | "
            f"{100 * r.get('weights_equal', float('nan')):.2f} % | {r['note']} |")
    lines.append("")
    lines.append("ratio, KL ratio: perpcomp's figure / llm-compressor's (≤ 1.10 is the target).")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--perpcomp", required=True)
    r.add_argument("--model", required=True)
    r.add_argument("--calib", required=True, help="calibration text (plain or *.jsonl) for perpcomp's windowing")
    r.add_argument("--eval-text", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--methods", default=",".join(METHODS))
    r.add_argument("--group", type=int, default=128)
    r.add_argument("--samples", type=int, default=128)
    r.add_argument("--seq-len", type=int, default=512)
    r.add_argument("--eval-seq-len", type=int, default=512)
    r.add_argument("--eval-windows", type=int, default=0, help="first K evaluation windows (0: all)")
    r.add_argument("--eval-bytes", type=int, default=0, help="evaluate on the first N bytes of --eval-text (0: all)")
    r.add_argument("--threads", type=int, default=0)
    r.add_argument("--table", help="also write the Markdown table here")
    r.add_argument("--resume", action="store_true", help="reuse the methods WORK already holds finished")
    c = sub.add_parser("llmc")
    c.add_argument("--model", required=True)
    c.add_argument("--ids", required=True)
    c.add_argument("--method", required=True, choices=METHODS)
    c.add_argument("--group", type=int, required=True)
    c.add_argument("--out", required=True)
    a = ap.parse_args()
    a.model = os.path.abspath(a.model) if hasattr(a, "model") else None
    (cmd_run if a.cmd == "run" else cmd_llmc)(a)


if __name__ == "__main__":
    main()
