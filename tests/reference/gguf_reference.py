#!/usr/bin/env python3
"""GGUF references from the `gguf` Python package and Hugging Face transformers (the reference
environment, tools/setup-reference.sh). Used by perpcomp's GGUF tests (tests/model/gguf_*).

  gguf_reference.py quants OUT_DIR [--seed S]
      Writes OUT_DIR/quants.gguf (gguf.GGUFWriter) holding, for every type perpcomp dequantizes,
      tensors quantized by gguf.quants.quantize where the package can quantize that type and
      tensors of random blocks with finite f16 scales (every type; the only kind for the K-quants,
      which the package cannot quantize), and OUT_DIR/<tensor>.f32: gguf.quants.dequantize of each
      (raw little-endian float32, row-major). OUT_DIR/manifest.json lists them.
  gguf_reference.py tokenize GGUF_FILE TEXTS OUT
      transformers' own GGUF tokenizer conversion (AutoTokenizer.from_pretrained(dir,
      gguf_file=...)): TEXTS is a JSON list of strings; OUT a JSON list of id lists (no special
      tokens added).
  gguf_reference.py generate GGUF_FILE PROMPT_IDS N OUT
      Greedy generation of N tokens with AutoModelForCausalLM.from_pretrained(dir, gguf_file=...,
      torch_dtype=float32); PROMPT_IDS space-separated; OUT: JSON list of the new ids.
  gguf_reference.py nll GGUF_FILE TOKENS OUT
      TOKENS: text file, one window per line (space-separated ids). OUT: JSON {"nll": [per window
      mean NLL of tokens 1..T-1], "max_abs_logit": [...]} from the same model.
  gguf_reference.py logits GGUF_FILE TOKENS OUT
      float32 raw logits (windows, T, V) of the same model, with OUT.json giving the shape.
"""
import json
import os
import sys

import numpy as np

# Bytes of each f16 scale inside one block, per type: random blocks get finite scales there.
SCALE_FIELDS = {
    "Q4_0": [0], "Q4_1": [0, 2], "Q5_0": [0], "Q5_1": [0, 2], "Q8_0": [0],
    "Q2_K": [80, 82], "Q3_K": [108], "Q4_K": [0, 2], "Q5_K": [0, 2], "Q6_K": [208],
}
TYPES = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"]


def cmd_quants(out_dir, seed):
    import gguf
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
    rng = np.random.default_rng(seed)
    os.makedirs(out_dir, exist_ok=True)
    w = gguf.GGUFWriter(os.path.join(out_dir, "quants.gguf"), "llama")
    manifest = []

    def add(name, qtype, stored, shape):
        deq = np.ascontiguousarray(gguf.quants.dequantize(stored, qtype), dtype=np.float32)
        assert deq.shape == tuple(shape), (name, deq.shape, shape)
        if stored.dtype == np.uint8:
            w.add_tensor(name, stored, raw_dtype=qtype)
        else:
            w.add_tensor(name, stored)
        deq.tofile(os.path.join(out_dir, name + ".f32"))
        manifest.append({"name": name, "type": qtype.name, "shape": list(shape)})

    for tname in TYPES:
        qtype = T[tname]
        block, size = GGML_QUANT_SIZES[qtype]
        # Rows of 512: two K-quant super-blocks, sixteen 32-element blocks.
        shape = (3, 512)
        x = (rng.standard_normal(shape) * rng.uniform(0.01, 3.0, size=(shape[0], 1))).astype(np.float32)
        x[0, :7] = [0.0, -0.0, 1e-8, -1e-8, 65504.0 / 4, 1.0, -1.0]
        try:
            stored = gguf.quants.quantize(x, qtype)
        except NotImplementedError:
            stored = None
        if stored is not None:
            add(f"quantized.{tname}", qtype, stored, shape)
        if tname in SCALE_FIELDS:
            n_blocks = shape[0] * shape[1] // block
            raw = rng.integers(0, 256, size=(n_blocks, size), dtype=np.uint8)
            for off in SCALE_FIELDS[tname]:
                scale = (rng.standard_normal(n_blocks) * 0.05).astype(np.float16)
                raw[:, off:off + 2] = scale.view(np.uint8).reshape(n_blocks, 2)
            stored = raw.reshape(shape[0], shape[1] // block * size)
            add(f"random.{tname}", qtype, stored, shape)
        elif tname in ("F16", "BF16"):
            # Every finite 16-bit pattern at random (subnormals included).
            bits = rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)
            exp_all_ones = (bits & 0x7C00) == 0x7C00 if tname == "F16" else (bits & 0x7F80) == 0x7F80
            bits[exp_all_ones] &= 0x83FF if tname == "F16" else 0x807F
            stored = bits.view(np.float16) if tname == "F16" else bits.view(np.uint8).reshape(shape[0], -1)
            add(f"random.{tname}", qtype, stored, shape)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump({"gguf_version": getattr(gguf, "__version__", "?"), "tensors": manifest}, f, indent=1)


def _load_dir(gguf_file):
    return os.path.dirname(os.path.abspath(gguf_file)), os.path.basename(gguf_file)


def cmd_tokenize(gguf_file, texts_path, out):
    from transformers import AutoTokenizer
    d, f = _load_dir(gguf_file)
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    with open(texts_path, encoding="utf-8") as fh:
        texts = json.load(fh)
    ids = [tok(t, add_special_tokens=False)["input_ids"] for t in texts]
    with open(out, "w") as fh:
        json.dump(ids, fh)


def _model(gguf_file):
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(int(os.environ.get("PERPCOMP_REF_THREADS", "1")))
    d, f = _load_dir(gguf_file)
    m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, torch_dtype=torch.float32)
    m.eval()
    return m


def cmd_generate(gguf_file, prompt, n, out):
    import torch
    m = _model(gguf_file)
    ids = torch.tensor([[int(t) for t in prompt.split()]])
    with torch.no_grad():
        g = m.generate(ids, max_new_tokens=int(n), do_sample=False, min_new_tokens=int(n),
                       attention_mask=torch.ones_like(ids), pad_token_id=0)
    with open(out, "w") as fh:
        json.dump(g[0, ids.shape[1]:].tolist(), fh)


def _windows(tokens_path):
    with open(tokens_path) as fh:
        return [[int(t) for t in line.split()] for line in fh if line.strip()]


def cmd_nll(gguf_file, tokens_path, out):
    import torch
    m = _model(gguf_file)
    nll, top = [], []
    with torch.no_grad():
        for w in _windows(tokens_path):
            ids = torch.tensor([w])
            logits = m(ids).logits.double()[0]
            lp = torch.log_softmax(logits[:-1], dim=-1)
            nll.append(float(-lp.gather(1, ids[0, 1:, None]).mean()))
            top.append(float(logits.abs().max()))
    with open(out, "w") as fh:
        json.dump({"nll": nll, "max_abs_logit": top}, fh)


def cmd_logits(gguf_file, tokens_path, out):
    import torch
    m = _model(gguf_file)
    wins = _windows(tokens_path)
    with torch.no_grad():
        logits = [m(torch.tensor([w])).logits[0].float().numpy() for w in wins]
    arr = np.stack(logits).astype("<f4")
    arr.tofile(out)
    with open(out + ".json", "w") as fh:
        json.dump({"shape": list(arr.shape)}, fh)


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "quants":
        seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
        cmd_quants(args[0], seed)
    elif cmd == "tokenize":
        cmd_tokenize(*args)
    elif cmd == "generate":
        cmd_generate(*args)
    elif cmd == "nll":
        cmd_nll(*args)
    elif cmd == "logits":
        cmd_logits(*args)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
