#!/usr/bin/env python3
"""Reading perpcomp's GGUF files with the reference environment's readers (tools/setup-reference.sh):
the `gguf` package and llama.cpp itself (llama-cpp-python). Used by tests/compress/gguf_export_test.cc.

  gguf_llamacpp.py tensors FILE.gguf OUT.json
      gguf.GGUFReader of the file: OUT {"metadata": {key: value (scalars and strings; arrays as their
      length)}, "tensors": {name: {"type": "Q4_0", "shape": [rows, cols] (row-major),
      "sha256": sha256 of gguf.quants.dequantize(...) as little-endian float32}}}.
  gguf_llamacpp.py logits FILE.gguf TOKENS OUT.f32
      llama.cpp (llama_cpp.Llama(model_path, logits_all=True, n_threads=2, n_ctx=len)) evaluating the
      space-separated token ids of TOKENS in one sequence (no BOS added; float32 key/value cache,
      no flash attention, no extra buffer types: see no_extra_buffer_types): OUT the logits
      (tokens, vocab) as raw little-endian float32. Exits 77 when llama_cpp is not importable.
"""
import hashlib
import json
import sys

import numpy as np


def tensors(path, out):
    import gguf
    from gguf import quants

    r = gguf.GGUFReader(path)
    meta = {}
    for k, f in r.fields.items():
        if k.startswith("GGUF."):
            continue
        t = f.types[0] if f.types else None
        if t == gguf.GGUFValueType.ARRAY:
            meta[k] = len(f.data)
        elif t == gguf.GGUFValueType.STRING:
            meta[k] = bytes(f.parts[f.data[0]]).decode("utf-8")
        else:
            meta[k] = f.parts[f.data[0]].tolist()[0]
    ts = {}
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape.tolist())]
        v = quants.dequantize(t.data, t.tensor_type).astype("<f4").reshape(shape)
        ts[t.name] = {"type": t.tensor_type.name, "shape": shape,
                      "sha256": hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()}
    with open(out, "w") as f:
        json.dump({"metadata": meta, "tensors": ts}, f)


def no_extra_buffer_types(llama_cpp):
    """Loads models without llama.cpp's extra buffer types (its weight repacking for the CPU, the
    AMX kernels among them): llama-cpp-python 0.3.36 built on a CPU with AMX (Intel Xeon, family 6
    model 167) segfaults in the first eval of a Q4_0/Q4_1/Q8_0 file with them, and the
    comparison is about the file, not about llama.cpp's fastest kernels. The high-level Llama
    class takes its model parameters from llama_model_default_params, so the default is changed."""
    low = llama_cpp.llama_cpp
    default = low.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = False
        return p

    low.llama_model_default_params = params


def logits(path, tokens_file, out):
    try:
        import llama_cpp
    except ImportError as e:
        print("llama_cpp is not importable: %s" % e, file=sys.stderr)
        sys.exit(77)
    no_extra_buffer_types(llama_cpp)
    toks = [int(x) for x in open(tokens_file).read().split()]
    llm = llama_cpp.Llama(model_path=path, logits_all=True, n_ctx=max(len(toks), 8), n_batch=len(toks),
                          n_ubatch=len(toks), n_threads=2, n_threads_batch=2, verbose=False, seed=0,
                          type_k=0, type_v=0, flash_attn=False)  # GGML_TYPE_F32 key/value cache
    llm.eval(toks)
    s = np.asarray(llm.scores[: len(toks)], dtype="<f4")
    s.tofile(out)


def main():
    cmd = sys.argv[1]
    if cmd == "tensors":
        tensors(sys.argv[2], sys.argv[3])
    elif cmd == "logits":
        logits(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
