#!/usr/bin/env python3
"""bench/metrics/random_checkpoint.py OUT_DIR [--layers N] [--seed S] [--tokenizer FILE]

Writes a random Pythia-1.4B-shaped GPT-NeoX checkpoint (24 layers, hidden 2048, 16 heads,
intermediate 8192, vocabulary 50304, untied head; ~2.8 GB of bfloat16 safetensors) for the
streaming memory bench (bench/metrics/stream_memory.sh, docs/PERFORMANCE.md "Streaming").
The values are seeded normal noise scaled like an initialisation (std 0.02, norms 1 ± 0.02);
the model is not trained and only its shapes matter. Tensors are generated and written one at
a time, so the script needs well under 1 GB. numpy only (Debian's python3).
Write it outside the repository (/tmp or ~/.cache), never into it.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--layers", type=int, default=24)
p.add_argument("--seed", type=int, default=0)
p.add_argument("--tokenizer", default="", help="tokenizer.json to copy in (the GPT-NeoX-20B one Pythia uses)")
a = p.parse_args()

V, d, H, I, L = 50304, 2048, 16, 8192, a.layers
config = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": V,
          "hidden_size": d, "num_hidden_layers": L, "num_attention_heads": H, "intermediate_size": I,
          "max_position_embeddings": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000,
          "layer_norm_eps": 1e-5, "hidden_act": "gelu", "use_parallel_residual": True,
          "tie_word_embeddings": False, "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "bfloat16"}

# name -> (shape, kind): kind "w" weight noise, "n" norm weight (1 + noise), "b" bias noise
tensors = [("gpt_neox.embed_in.weight", (V, d), "w")]
for l in range(L):
    q = f"gpt_neox.layers.{l}."
    for n in ("input_layernorm", "post_attention_layernorm"):
        tensors += [(q + n + ".weight", (d,), "n"), (q + n + ".bias", (d,), "b")]
    tensors += [(q + "attention.query_key_value.weight", (3 * d, d), "w"),
                (q + "attention.query_key_value.bias", (3 * d,), "b"),
                (q + "attention.dense.weight", (d, d), "w"), (q + "attention.dense.bias", (d,), "b"),
                (q + "mlp.dense_h_to_4h.weight", (I, d), "w"), (q + "mlp.dense_h_to_4h.bias", (I,), "b"),
                (q + "mlp.dense_4h_to_h.weight", (d, I), "w"), (q + "mlp.dense_4h_to_h.bias", (d,), "b")]
tensors += [("gpt_neox.final_layer_norm.weight", (d,), "n"), ("gpt_neox.final_layer_norm.bias", (d,), "b"),
            ("embed_out.weight", (V, d), "w")]

header, offset = {}, 0
for name, shape, _ in tensors:
    n = int(np.prod(shape)) * 2
    header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + n]}
    offset += n
blob = json.dumps(header, separators=(",", ":")).encode()
blob += b" " * (-len(blob) % 8)

os.makedirs(a.out, exist_ok=True)
rng = np.random.default_rng(a.seed)
tmp = os.path.join(a.out, "model.safetensors.tmp")
with open(tmp, "wb") as f:
    f.write(struct.pack("<Q", len(blob)))
    f.write(blob)
    for name, shape, kind in tensors:
        count = int(np.prod(shape))
        for start in range(0, count, 1 << 24):  # 16M values (64 MB float32) at a time
            x = rng.standard_normal(min(1 << 24, count - start), dtype=np.float32) * np.float32(0.02)
            if kind == "n":
                x += np.float32(1)
            # float32 -> bfloat16 by rounding to nearest even on the upper 16 bits
            u = x.view(np.uint32)
            u = (u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
            f.write(u.astype("<u2").tobytes())
os.replace(tmp, os.path.join(a.out, "model.safetensors"))
with open(os.path.join(a.out, "config.json"), "w") as f:
    json.dump(config, f, indent=2)
if a.tokenizer:
    shutil.copyfile(a.tokenizer, os.path.join(a.out, "tokenizer.json"))
print(f"wrote {a.out}: {len(tensors)} tensors, {offset / 1e9:.2f} GB bfloat16")
