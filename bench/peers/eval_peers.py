#!/usr/bin/env python3
"""perpcomp eval beside transformers (eager attention) and llama.cpp (llama-cpp-python) on the same
model, the same WikiText-2 windows and the same threads, in one run; prints a Markdown table headed
by the CPU and its flags (docs/PERFORMANCE.md, "eval beside the peers"). Runs in the reference
environment (tools/setup-reference.sh); perpcomp itself never needs Python.

  eval_peers.py --perpcomp BIN --model DIR --text FILE --work DIR [--windows 8] [--seq-len 2048]
                [--threads 2] [--dtypes f32,bf16] [--tools perpcomp,transformers,llama.cpp] [--table FILE]
                [--also-perpcomp BIN ...]

Every tool gets the windows perpcomp cuts (docs/METRICS.md "Tokens and windows": the text
tokenized once, no BOS where the tokenizer adds none, consecutive windows of --seq-len, the first
--windows of them): the token ids come from Hugging Face `tokenizers` loading the folder's
tokenizer.json, checked equal to perpcomp's count of tokens. Each tool's figure is its wall time
from start to the last NLL, load and tokenization included, in a fresh child process, with its
parts: load, tokenize, forward. Mean NLL is over the windows' predicted tokens (windows x (T - 1)).

  perpcomp      `perpcomp eval --json --threads N --dtype D` (its own load/tokenize/forward
                seconds; compute_dtype says whether bf16 ran natively); --also-perpcomp adds a row per
                other binary (the same build on another LibTorch), named by its `perpcomp version`
  transformers  AutoModelForCausalLM.from_pretrained(DIR, attn_implementation="eager", dtype),
                torch.set_num_threads(N), one window per forward, NLL in float32 from the logits
  llama.cpp     `perpcomp convert --to gguf --outtype D` of DIR (the same weights), then
                llama_cpp.Llama(n_ctx=T, n_batch=T, n_ubatch=T, n_threads=N, logits_all=True): one
                eval of each window, NLL from its scores (float32 logits)
"""
import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def cpu_line(perpcomp=None):
    """The CPU model and the flags that decide bf16 and GEMM speed; with perpcomp's path, also the
    BLAS kernels perpcomp runs (`perpcomp version`)."""
    model, flags = "unknown CPU", set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and model == "unknown CPU":
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    names = [("AVX2", "avx2"), ("FMA", "fma"), ("AVX-512F", "avx512f"), ("AVX512-VNNI", "avx512_vnni"),
             ("AVX512-BF16", "avx512_bf16"), ("AMX-BF16", "amx_bf16")]
    have = ", ".join(f"{n} {'yes' if f in flags else 'no'}" for n, f in names)
    line = f"{model}; {have}; {os.cpu_count()} cores; load average {os.getloadavg()[0]:.1f} at the start"
    if perpcomp:
        from peers import blas_kernels
        line += f"; perpcomp's BLAS kernels: {blas_kernels(perpcomp)}"
    return line


def windows_of(model_dir, text_path, windows, seq_len):
    """perpcomp's windows (docs/METRICS.md): ids of the whole text, cut into consecutive windows."""
    import tokenizers
    t0 = time.perf_counter()
    tok = tokenizers.Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    with open(text_path, encoding="utf-8") as f:
        text = f.read()
    ids = tok.encode(text).ids
    seconds = time.perf_counter() - t0
    n = len(ids) // seq_len
    if n < windows:
        sys.exit(f"eval_peers.py: {text_path} gives {n} windows of {seq_len} tokens, fewer than --windows {windows}")
    return [ids[i * seq_len:(i + 1) * seq_len] for i in range(windows)], len(ids), seconds


def nll_from_logits(logits, window):
    """Sum of next-token NLL over positions 0..T-2 of one window; logits (T, V) numpy float32."""
    import numpy as np
    x = logits[:-1].astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = (m[:, 0] + np.log(np.exp(x - m).sum(axis=1)))
    tgt = np.asarray(window[1:])
    return float((lse - x[np.arange(len(tgt)), tgt]).sum())


def child_transformers(args):
    """One transformers run (a child process): prints its figures as JSON."""
    start = time.perf_counter()
    import torch
    torch.set_num_threads(args.threads)
    from transformers import AutoModelForCausalLM
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    t = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="eager", dtype=dtype)
    model.eval()
    load = time.perf_counter() - t
    wins, stream, tokenize = windows_of(args.model, args.text, args.windows, args.seq_len)
    t = time.perf_counter()
    total_nll = 0.0
    with torch.inference_mode():
        for w in wins:
            ids = torch.tensor([w])
            logits = model(ids).logits[0].float()  # (T, V)
            logp = torch.log_softmax(logits[:-1].double(), dim=-1)
            total_nll -= float(logp.gather(1, ids[0, 1:].unsqueeze(1)).sum())
    forward = time.perf_counter() - t
    n = len(wins) * (args.seq_len - 1)
    print(json.dumps({"load": load, "tokenize": tokenize, "forward": forward, "total": time.perf_counter() - start,
                      "mean_nll": total_nll / n, "tokens": n, "stream_tokens": stream,
                      "torch": torch.__version__, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def child_llama_cpp(args):
    """One llama.cpp run (a child process) on args.gguf: prints its figures as JSON."""
    start = time.perf_counter()
    import numpy as np
    import llama_cpp
    t = time.perf_counter()
    llm = llama_cpp.Llama(model_path=args.gguf, n_ctx=args.seq_len, n_batch=args.seq_len, n_ubatch=args.seq_len,
                          n_threads=args.threads, n_threads_batch=args.threads, logits_all=True, verbose=False)
    load = time.perf_counter() - t
    wins, stream, tokenize = windows_of(args.model, args.text, args.windows, args.seq_len)
    t = time.perf_counter()
    total_nll = 0.0
    for w in wins:
        llm.reset()
        llm.eval(w)
        total_nll += nll_from_logits(np.asarray(llm.scores[:len(w)], dtype=np.float32), w)
    forward = time.perf_counter() - t
    n = len(wins) * (args.seq_len - 1)
    print(json.dumps({"load": load, "tokenize": tokenize, "forward": forward, "total": time.perf_counter() - start,
                      "mean_nll": total_nll / n, "tokens": n, "stream_tokens": stream,
                      "llama_cpp": llama_cpp.__version__,
                      "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def run_child(cmd):
    """Runs a child, returns (its JSON, wall seconds, stderr)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"eval_peers.py: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-4000:]}")
    out = p.stdout.strip()
    return json.loads(out[out.index("{"):]), wall, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--perpcomp", default="build/tools/perpcomp")
    ap.add_argument("--also-perpcomp", action="append", default=[],
                    help="another perpcomp binary (e.g. built on another LibTorch) run the same way, one row each")
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--dtypes", default="f32,bf16")
    ap.add_argument("--tools", default="perpcomp,transformers,llama.cpp")
    ap.add_argument("--table", default="")
    ap.add_argument("--child", choices=["transformers", "llama.cpp"], help=argparse.SUPPRESS)
    ap.add_argument("--dtype", default="f32", help=argparse.SUPPRESS)
    ap.add_argument("--gguf", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "transformers":
        return child_transformers(args)
    if args.child == "llama.cpp":
        return child_llama_cpp(args)

    os.makedirs(args.work, exist_ok=True)
    dtypes = [d for d in args.dtypes.split(",") if d]
    tools = [t for t in args.tools.split(",") if t]
    rows = []  # (tool, dtype, figures)
    me = [sys.executable, os.path.abspath(__file__), "--model", args.model, "--text", args.text, "--work", args.work,
          "--windows", str(args.windows), "--seq-len", str(args.seq_len), "--threads", str(args.threads)]
    header = cpu_line(args.perpcomp)
    print(header, flush=True)
    from peers import libtorch_version
    # the first binary's rows are "perpcomp", the base of the ratios; others name their LibTorch
    binaries = [(args.perpcomp, "perpcomp")] if "perpcomp" in tools else []
    binaries += [(b, f"perpcomp, LibTorch {libtorch_version(b)} ({b})") for b in args.also_perpcomp]
    for dtype in dtypes:
        for binary, name in binaries:
            j, wall, _ = run_child([binary, "eval", "--model", args.model, "--text", args.text,
                                    "--seq-len", str(args.seq_len), "--max-windows", str(args.windows),
                                    "--threads", str(args.threads), "--dtype", dtype, "--json"])
            s = j["seconds"]
            rows.append((name, dtype, {"arith": j["compute_dtype"], "wall": wall, "load": s["load"],
                                       "tokenize": s["tokenize"], "forward": s["forward"],
                                       "mean_nll": j["mean_nll"], "tokens": j["tokens"],
                                       "stream_tokens": j["stream_tokens"]}))
            print(f"{name} {dtype}: {wall:.1f} s, mean NLL {j['mean_nll']:.6f}", flush=True)
        if "transformers" in tools:
            j, wall, _ = run_child(me + ["--child", "transformers", "--dtype", dtype])
            rows.append(("transformers eager (torch " + j["torch"] + ")", dtype,
                         {"arith": dtype, "wall": wall, **j}))
            print(f"transformers {dtype}: {wall:.1f} s, mean NLL {j['mean_nll']:.6f}", flush=True)
        if "llama.cpp" in tools:
            gguf = os.path.join(args.work, f"model-{dtype}.gguf")
            if not os.path.exists(gguf):
                subprocess.run([args.perpcomp, "convert", "--to", "gguf", "--model", args.model, "--out", gguf,
                                "--outtype", dtype], check=True, capture_output=True)
            j, wall, _ = run_child(me + ["--child", "llama.cpp", "--dtype", dtype, "--gguf", gguf])
            rows.append(("llama.cpp (llama-cpp-python " + j["llama_cpp"] + ")", dtype,
                         {"arith": dtype, "wall": wall, **j}))
            print(f"llama.cpp {dtype}: {wall:.1f} s, mean NLL {j['mean_nll']:.6f}", flush=True)

    base = {d: next((r[2] for r in rows if r[0] == "perpcomp" and r[1] == d), None) for d in dtypes}
    f32 = base.get("f32")
    lines = [f"CPU: {header}", "",
             f"{args.windows} windows x {args.seq_len} tokens of {os.path.basename(args.text)}, "
             f"{args.threads} threads, model {args.model}; perpcomp is {args.perpcomp} on LibTorch "
             f"{libtorch_version(args.perpcomp)}", "",
             "| tool | weights | arithmetic | total s | load s | tokenize s | forward s | tokens/s (forward) "
             "| mean NLL | − perpcomp f32 NLL | total ÷ perpcomp's (same weights) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for tool, dtype, r in rows:
        pc = base.get(dtype)
        speed = r["wall"] / pc["wall"] if pc else float("nan")
        dn = r["mean_nll"] - f32["mean_nll"] if f32 else float("nan")
        lines.append(f"| {tool} | {dtype} | {r['arith']} | {r['wall']:.1f} | {r['load']:.1f} | {r['tokenize']:.2f} | "
                     f"{r['forward']:.1f} | {r['tokens'] / r['forward']:.0f} | {r['mean_nll']:.6f} | {dn:+.6f} | "
                     f"{speed:.2f} |")
    table = "\n".join(lines)
    print("\n" + table)
    with open(os.path.join(args.work, "eval_peers.json"), "w") as f:
        json.dump({"cpu": header, "rows": rows}, f, indent=1)
    if args.table:
        with open(args.table, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
