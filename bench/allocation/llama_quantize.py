#!/usr/bin/env python3
"""perpcomp allocate's llama-quantize export run by llama.cpp's own llama-quantize, and the files
it makes evaluated by llama.cpp (docs/ALLOCATION.md, docs/RESULTS.md "Plans in llama.cpp"). Runs in
the reference environment (tools/setup-reference.sh); perpcomp itself never needs Python.

  llama_quantize.py build [--dir DIR]
      builds llama.cpp's llama-quantize from the source distribution (PyPI) of the llama-cpp-python
      the reference environment holds, so the tool is the same llama.cpp as the one that evaluates;
      DIR defaults to $XDG_CACHE_HOME/perpcomp/llama-quantize-<version>; prints the binary's path.
      A second run finds the binary and returns at once.
  llama_quantize.py run --perpcomp BIN --model DIR --sensitivity FILE --budget bits=3.5 \\
      --predictors perp,iso --text FILE --work DIR [--windows 8] [--seq-len 512] [--threads 2]
      [--uniform q3_K,q4_0,q4_1] [--mixtures Q3_K_S,Q3_K_M] [--table FILE]
      1. `perpcomp convert --to gguf --outtype f16` of DIR: the base file;
      2. per predictor, `perpcomp allocate ... --llama-quantize P.args`, then
         `llama-quantize --pure --token-embedding-type q8_0 $(cat P.args) base.gguf P.gguf q8_0`
         (--pure: a tensor the arguments do not name keeps the base type instead of llama.cpp's
         own mixture), and every named tensor's type in P.gguf checked against the arguments;
      3. per --uniform type, `llama-quantize --pure --token-embedding-type q8_0` of the base;
         per --mixtures type, llama.cpp's own mixture of that name (its allocation by tensor
         role and layer), with the same token embedding type;
      4. each file evaluated by llama.cpp (llama-cpp-python: the windows perpcomp's eval cuts,
         NLL from its float32 logits, no extra buffer types) against the f16 base.
      Prints a Markdown table (bits per weight of the block linears as stored, mean NLL, delta NLL
      against f16, the types used) headed by the CPU, and writes WORK/results.json.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "peers"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "reference"))


def default_dir():
    import llama_cpp
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    return os.path.join(cache, "perpcomp", f"llama-quantize-{llama_cpp.__version__}")


def cmd_build(a):
    """Builds llama-quantize from llama-cpp-python's source distribution; returns the binary's path."""
    import llama_cpp
    d = os.path.abspath(a.dir or default_dir())
    binary = os.path.join(d, "build", "bin", "llama-quantize")
    if os.path.exists(binary):
        print(binary)
        return binary
    os.makedirs(d, exist_ok=True)
    version = llama_cpp.__version__
    sdist = os.path.join(d, f"llama_cpp_python-{version}.tar.gz")
    if not os.path.exists(sdist):
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                        f"llama-cpp-python=={version}", "-d", d], check=True)
    src = os.path.join(d, f"llama_cpp_python-{version}")
    if not os.path.isdir(src):
        with tarfile.open(sdist) as t:
            t.extractall(d, filter="data")
    llama = os.path.join(src, "vendor", "llama.cpp")
    build = os.path.join(d, "build")
    t0 = time.perf_counter()
    log = os.path.join(d, "build.log")  # llama.cpp's compiler warnings go here, not to the terminal
    run(["cmake", "-S", llama, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF",
         "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_APP=OFF",
         "-DLLAMA_BUILD_TOOLS=ON", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_NATIVE=ON"], log)
    run(["cmake", "--build", build, "--target", "llama-quantize", "-j", str(os.cpu_count() or 2)], log + ".2")
    print(f"llama_quantize.py: built llama-quantize of llama-cpp-python {version} in {time.perf_counter() - t0:.0f} s",
          file=sys.stderr)
    print(binary)
    return binary


# ---------------------------------------------------------------------------------------------
# Reading a GGUF file's block linears.

def linear_types(path):
    """{tensor name: (type name, weights, bytes)} of the 2-D tensors under blk.* of a GGUF file."""
    import gguf
    r = gguf.GGUFReader(path)
    out = {}
    for t in r.tensors:
        if t.name.startswith("blk.") and len([d for d in t.shape if d > 1]) == 2:
            out[t.name] = (t.tensor_type.name.lower(), int(t.n_elements), int(t.n_bytes))
    return out


def stored_bits(types):
    weights = sum(n for _, n, _ in types.values())
    return 8.0 * sum(b for _, _, b in types.values()) / weights


def type_shares(types):
    """'q4_0 83.3 %, q3_k 16.7 %' by weights."""
    weights = sum(n for _, n, _ in types.values())
    by = {}
    for ty, n, _ in types.values():
        by[ty] = by.get(ty, 0) + n
    return ", ".join(f"{ty} {100.0 * n / weights:.1f} %" for ty, n in sorted(by.items(), key=lambda x: -x[1]))


def check_args(args_file, types):
    """Every tensor the --tensor-type arguments name has that type in the file; returns the count."""
    rules = []
    for line in open(args_file):
        m = re.fullmatch(r"--tensor-type (\S+)=(\S+)", line.strip())
        if m:
            rules.append((m.group(1), m.group(2).lower()))
    named = 0
    for name, (ty, _, _) in types.items():
        want = next((t for pat, t in rules if re.search(pat, name)), None)
        if want is None:
            continue
        named += 1
        if ty != want:
            sys.exit(f"llama_quantize.py: {name} is {ty} in the quantized file, the arguments of {args_file} say {want}")
    if named != len(rules):
        sys.exit(f"llama_quantize.py: {args_file} names {len(rules)} tensors, the file has {named} of them")
    return named


# ---------------------------------------------------------------------------------------------
# Evaluation by llama.cpp (a child process per file).

def child_eval(a):
    import numpy as np
    import llama_cpp
    from eval_peers import nll_from_logits, windows_of
    from gguf_llamacpp import no_extra_buffer_types
    no_extra_buffer_types(llama_cpp)
    llm = llama_cpp.Llama(model_path=a.gguf, n_ctx=a.seq_len, n_batch=a.seq_len, n_ubatch=a.seq_len,
                          n_threads=a.threads, n_threads_batch=a.threads, logits_all=True, verbose=False,
                          type_k=0, type_v=0, flash_attn=False)
    wins, _, _ = windows_of(a.model, a.text, a.windows, a.seq_len)
    total = 0.0
    per_window = []
    for w in wins:
        llm.reset()
        llm.eval(w)
        nll = nll_from_logits(np.asarray(llm.scores[:len(w)], dtype=np.float32), w)
        per_window.append(nll / (len(w) - 1))
        total += nll
    n = len(wins) * (a.seq_len - 1)
    print(json.dumps({"mean_nll": total / n, "tokens": n, "per_window": per_window, "llama_cpp": llama_cpp.__version__}))


def evaluate(a, gguf_path):
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "child", "--gguf", gguf_path, "--model", a.model,
                        "--text", a.text, "--windows", str(a.windows), "--seq-len", str(a.seq_len),
                        "--threads", str(a.threads)], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"llama_quantize.py: llama.cpp evaluation of {gguf_path} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    out = p.stdout.strip()
    return json.loads(out[out.index("{"):])


def run(cmd, log):
    with open(log, "w") as f:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=f, text=True)
    if p.returncode != 0:
        sys.exit(f"llama_quantize.py: failed ({p.returncode}): {' '.join(cmd)}\n{open(log).read()[-4000:]}")
    return p.stdout


def cmd_run(a):
    from eval_peers import cpu_line
    os.makedirs(a.work, exist_ok=True)
    quantize = a.llama_quantize or cmd_build(argparse.Namespace(dir=""))
    header = cpu_line()
    base = os.path.join(a.work, "base-f16.gguf")
    if not os.path.exists(base):
        run([a.perpcomp, "convert", "--to", "gguf", "--model", a.model, "--out", base, "--outtype", "f16"],
            os.path.join(a.work, "convert.log"))
    rows = []  # (label, how, file, extra)

    def quantize_to(out, ftype, extra, log):
        cmd = [quantize] + extra + [base, out, ftype, str(a.threads)]
        run(cmd, log)
        return " ".join(os.path.basename(c) if os.path.isabs(c) else c for c in cmd[1:])

    rows.append(("f16 (the base)", "perpcomp convert --to gguf --outtype f16", base, {}))
    for pred in [p for p in a.predictors.split(",") if p]:
        plan, args = os.path.join(a.work, f"{pred}.yaml"), os.path.join(a.work, f"{pred}.args")
        log = os.path.join(a.work, f"allocate-{pred}.log")
        out = run([a.perpcomp, "allocate", "--sensitivity", a.sensitivity, "--budget", a.budget, "--predictor", pred,
                   "--out", plan, "--llama-quantize", args, "--overwrite"], log)
        m = re.search(r"llama\.cpp: ([\d.]+) bits per weight", out)
        perp_bits = re.search(r"average bits ([\d.]+)", out)
        fallbacks = open(log).read().count("llama-quantize: model.")
        tensor_args = open(args).read().split()
        f = os.path.join(a.work, f"plan-{pred}.gguf")
        quantize_to(f, "q8_0", ["--pure", "--token-embedding-type", "q8_0"] + tensor_args,
                    os.path.join(a.work, f"quantize-{pred}.log"))
        types = linear_types(f)
        named = check_args(args, types)
        rows.append((f"{pred} plan under {a.budget}", f"allocate --predictor {pred} --llama-quantize; llama-quantize "
                     f"--pure --token-embedding-type q8_0 $(cat {pred}.args) base q8_0", f,
                     {"perpcomp_bits": float(perp_bits.group(1)) if perp_bits else None,
                      "export_bits": float(m.group(1)) if m else None, "fallbacks": fallbacks,
                      "checked_tensors": named}))
    for ty in [t for t in a.uniform.split(",") if t]:
        f = os.path.join(a.work, f"uniform-{ty}.gguf")
        quantize_to(f, ty, ["--pure", "--token-embedding-type", "q8_0"], os.path.join(a.work, f"quantize-{ty}.log"))
        rows.append((f"uniform {ty}", f"llama-quantize --pure --token-embedding-type q8_0 base {ty}", f, {}))
    for ty in [t for t in a.mixtures.split(",") if t]:
        f = os.path.join(a.work, f"mixture-{ty}.gguf")
        quantize_to(f, ty, ["--token-embedding-type", "q8_0"], os.path.join(a.work, f"quantize-{ty}.log"))
        rows.append((f"llama.cpp's {ty} mixture", f"llama-quantize --token-embedding-type q8_0 base {ty}", f, {}))

    results = []
    for label, how, f, extra in rows:
        t0 = time.perf_counter()
        ev = evaluate(a, f)
        types = linear_types(f)
        results.append({"label": label, "how": how, "file": os.path.basename(f), "bits": stored_bits(types),
                        "types": type_shares(types), "mean_nll": ev["mean_nll"], "tokens": ev["tokens"],
                        "per_window": ev["per_window"], "eval_seconds": time.perf_counter() - t0, **extra})
        print(f"{label}: {results[-1]['bits']:.4f} bits, mean NLL {ev['mean_nll']:.6f}", flush=True)
    ref = results[0]["mean_nll"]
    lines = [f"llama.cpp (llama-cpp-python {ev['llama_cpp']}) on {os.path.basename(os.path.normpath(a.model))}: "
             f"the first {a.windows} windows of {a.seq_len} tokens of {os.path.basename(a.text)} "
             f"({results[0]['tokens']} predicted tokens), {a.threads} threads. CPU: {header}.", "",
             "| file | bits per weight (block linears, as stored) | mean NLL | ΔNLL vs f16 | paired SE | types (by weights) |",
             "|---|---:|---:|---:|---:|---|"]
    from plans import paired_mean_se
    for r in results:
        paired = paired_mean_se(r["per_window"], results[0]["per_window"])
        se = paired[1] if paired else 0.0
        r["delta_nll"], r["delta_nll_se"] = r["mean_nll"] - ref, se
        lines.append(f"| {r['label']} | {r['bits']:.4f} | {r['mean_nll']:.5f} | {r['delta_nll']:+.5f} | {se:.5f} | "
                     f"{r['types']} |")
    table = "\n".join(lines) + "\n"
    print(table)
    with open(os.path.join(a.work, "results.json"), "w") as fh:
        json.dump({"cpu": header, "budget": a.budget, "sensitivity": a.sensitivity, "results": results}, fh, indent=1)
    if a.table:
        with open(a.table, "w") as fh:
            fh.write(table)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--dir", default="")
    r = sub.add_parser("run")
    r.add_argument("--perpcomp", required=True)
    r.add_argument("--model", required=True)
    r.add_argument("--sensitivity", required=True)
    r.add_argument("--budget", required=True)
    r.add_argument("--predictors", default="perp,iso")
    r.add_argument("--text", required=True)
    r.add_argument("--work", required=True)
    r.add_argument("--windows", type=int, default=8)
    r.add_argument("--seq-len", type=int, default=512)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--uniform", default="q3_K,q4_0,q4_1")
    r.add_argument("--mixtures", default="Q3_K_S,Q3_K_M")
    r.add_argument("--llama-quantize", default="", help="the llama-quantize binary (default: build it)")
    r.add_argument("--table", default="")
    c = sub.add_parser("child")
    for k in ("--gguf", "--model", "--text"):
        c.add_argument(k, required=True)
    c.add_argument("--windows", type=int, required=True)
    c.add_argument("--seq-len", type=int, required=True)
    c.add_argument("--threads", type=int, required=True)
    a = ap.parse_args()
    if a.cmd == "build":
        cmd_build(a)
    elif a.cmd == "run":
        a.model = os.path.abspath(a.model)
        cmd_run(a)
    else:
        child_eval(a)


if __name__ == "__main__":
    main()
