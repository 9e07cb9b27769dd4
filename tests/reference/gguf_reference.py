#!/usr/bin/env python3
"""GGUF references from the `gguf` Python package and Hugging Face transformers (the reference
environment, tools/setup-reference.sh). Used by perpcomp's GGUF tests (tests/model/gguf_*).

  gguf_reference.py quants OUT_DIR [--seed S]
      Writes OUT_DIR/quants.gguf (gguf.GGUFWriter) holding, for every type perpcomp dequantizes,
      tensors quantized by gguf.quants.quantize where the package can quantize that type and
      tensors of random blocks with finite f16 scales (every type; the only kind for the K-quants,
      which the package cannot quantize), and OUT_DIR/<tensor>.f32: gguf.quants.dequantize of each
      (raw little-endian float32, row-major). OUT_DIR/manifest.json lists them.
  gguf_reference.py make-gguf ARCH OUT_DIR [--type F32|Q8_0|Q4_K...] [--seed S] [--tied] [--spm]
      A seeded random model of ARCH (llama, qwen2, qwen3, gpt2, gptneox) with a small tokenizer, written
      twice: OUT_DIR/hf/ (config.json + model.safetensors, Hugging Face names and layout) and
      OUT_DIR/model.gguf as llama.cpp's convert_hf_to_gguf.py lays it out (its tensor names, the q/k
      row permutation of llama, GPT-2's Conv1D weights as (out, in), GPT-NeoX's qkv as [q; k; v]),
      matrices quantized to --type (F32 default: then the GGUF holds exactly the hf/ values).
      --spm: a sentencepiece-style vocabulary (tokenizer.ggml.model llama, scores, no merges).
      qwen3: head_dim 32 with 4 heads of a 64-wide model (attention.key_length differs from
      embedding_length / head_count) and random per-head q_norm / k_norm. For a quantized --type,
      qwen2 and qwen3 also get OUT_DIR/hf-deq/: hf/ with every quantized matrix replaced by
      gguf.quants.dequantize of what the GGUF holds (their GGUF layout is Hugging Face's).
  gguf_reference.py hf-logits HF_DIR TOKENS OUT
      As logits, from transformers' own forward of the Hugging Face folder HF_DIR
      (AutoModelForCausalLM.from_pretrained(HF_DIR, dtype=float32)).
  gguf_reference.py state GGUF_FILE OUT_DIR
      transformers' GGUF loading of the file (from_pretrained(..., gguf_file=...)), its state dict
      saved as OUT_DIR/model.safetensors.
  gguf_reference.py tokenize GGUF_FILE TEXTS OUT
      transformers' own GGUF tokenizer conversion (AutoTokenizer.from_pretrained(dir,
      gguf_file=...)): TEXTS is a JSON list of strings; OUT a JSON list of id lists (no special
      tokens added).
  gguf_reference.py tokenize-json TOKENIZER_JSON TEXTS OUT
      The same through Hugging Face tokenizers' Tokenizer.from_file (does our tokenizer.json load,
      and give the same ids there).
  gguf_reference.py generate GGUF_FILE PROMPT_IDS N OUT
      Greedy decoding of N tokens (argmax at every step, KV cache, no stop at end-of-sequence) with
      AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., dtype=float32); PROMPT_IDS
      space-separated; OUT: JSON list of the new ids.
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


def cmd_tokenize_json(tokenizer_json, texts_path, out):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_json)
    with open(texts_path, encoding="utf-8") as fh:
        texts = json.load(fh)
    with open(out, "w") as fh:
        json.dump([tok.encode(t, add_special_tokens=False).ids for t in texts], fh)


def _model(gguf_file):
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(int(os.environ.get("PERPCOMP_REF_THREADS", "1")))
    d, f = _load_dir(gguf_file)
    m = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32)
    m.eval()
    return m


def cmd_generate(gguf_file, prompt, n, out):
    """Greedy decoding with the KV cache, end-of-sequence tokens included (no stopping, no logit
    processors: generate()'s min_new_tokens would ban the EOS token)."""
    import torch
    m = _model(gguf_file)
    ids = torch.tensor([[int(t) for t in prompt.split()]])
    new, past = [], None
    with torch.no_grad():
        x = ids
        for _ in range(int(n)):
            o = m(x, past_key_values=past, use_cache=True)
            past = o.past_key_values
            nxt = int(o.logits[0, -1].argmax())
            new.append(nxt)
            x = torch.tensor([[nxt]])
    with open(out, "w") as fh:
        json.dump(new, fh)


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


def cmd_logits(gguf_file, tokens_path, out, model=None):
    import torch
    m = model if model is not None else _model(gguf_file)
    wins = _windows(tokens_path)
    with torch.no_grad():
        logits = [m(torch.tensor([w])).logits[0].float().numpy() for w in wins]
    arr = np.stack(logits).astype("<f4")
    arr.tofile(out)
    with open(out + ".json", "w") as fh:
        json.dump({"shape": list(arr.shape)}, fh)


def cmd_hf_logits(hf_dir, tokens_path, out):
    import torch
    from transformers import AutoModelForCausalLM
    torch.set_num_threads(int(os.environ.get("PERPCOMP_REF_THREADS", "1")))
    m = AutoModelForCausalLM.from_pretrained(hf_dir, dtype=torch.float32)
    m.eval()
    cmd_logits(None, tokens_path, out, model=m)


def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


TOK_TEXT = ("the quick brown fox jumps over the lazy dog. then the other one went there and they "
            "thought that this was the best thing in the world, so they ran home. 1234 5678!")


def _train_merges(words, n):
    """A few rounds of BPE over `words` (lists of symbols): the merges in order."""
    merges = []
    for _ in range(n):
        pairs = {}
        for w in words:
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + 1
        if not pairs:
            break
        (a, b), _c = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        new = []
        for w in words:
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            new.append(out)
        words = new
    return merges


def _tokenizer_bpe(V):
    b2u = _bytes_to_unicode()
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] + [b2u[b] for b in range(256)]
    import re
    words = [[b2u[c] for c in w.encode()] for w in re.findall(r" ?\w+| ?[^\s\w]+|\s+", TOK_TEXT)]
    merges = _train_merges(words, V - len(tokens))
    tokens += [a + b for a, b in merges]
    assert len(tokens) == V, len(tokens)
    types = [3, 3, 3] + [1] * (V - 3)
    return {"model": "gpt2", "tokens": tokens, "types": types, "merges": [f"{a} {b}" for a, b in merges],
            "bos": 0, "eos": 0, "unk": None}


def _tokenizer_spm(V):
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = [2, 3, 3] + [6] * 256
    words = [list("\u2581" + w) for w in TOK_TEXT.split(" ")]
    merges = _train_merges(words, V - len(tokens) - 30)
    singles = sorted({c for w in words for c in w})
    tokens += singles + [a + b for a, b in merges]
    tokens = tokens[:V] + [f"\u2581x{k}" for k in range(V - len(tokens))]
    types += [1] * (V - len(types))
    scores = [0.0] * 259 + [-float(i) for i in range(V - 259)]
    return {"model": "llama", "tokens": tokens, "types": types, "scores": scores, "bos": 1, "eos": 2, "unk": 0}


def cmd_make_gguf(arch, out_dir, qtype_name, seed, tied, spm):
    import gguf
    from gguf.constants import GGMLQuantizationType as T
    from safetensors.numpy import save_file
    rng = np.random.default_rng(seed)
    V, d, L, H, I = 320, 64, 2, 4, 128
    llama_like = arch in ("llama", "qwen2", "qwen3")
    KV = 2 if llama_like else H
    hd = 32 if arch == "qwen3" else d // H
    f32 = np.float32

    def rnd(*shape, std=0.3):
        return (rng.standard_normal(shape) * std).astype(f32)

    def norm_w(n):
        return (1.0 + 0.2 * rng.standard_normal(n)).astype(f32)

    t, c = {}, {}
    if llama_like:
        c = {"model_type": arch, "vocab_size": V, "hidden_size": d, "num_hidden_layers": L,
             "num_attention_heads": H, "num_key_value_heads": KV, "intermediate_size": I,
             "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 5000.0, "hidden_act": "silu",
             "tie_word_embeddings": tied}
        if arch == "qwen3":
            c.update({"head_dim": hd, "attention_bias": False, "use_sliding_window": False})
        t["model.embed_tokens.weight"] = rnd(V, d, std=1.0)
        for l in range(L):
            p = f"model.layers.{l}."
            t[p + "input_layernorm.weight"] = norm_w(d)
            t[p + "post_attention_layernorm.weight"] = norm_w(d)
            t[p + "self_attn.q_proj.weight"] = rnd(H * hd, d)
            t[p + "self_attn.k_proj.weight"] = rnd(KV * hd, d)
            t[p + "self_attn.v_proj.weight"] = rnd(KV * hd, d)
            if arch == "qwen2":
                for n, rows in (("q", H * hd), ("k", KV * hd), ("v", KV * hd)):
                    t[p + f"self_attn.{n}_proj.bias"] = rnd(rows, std=0.1)
            if arch == "qwen3":
                t[p + "self_attn.q_norm.weight"] = norm_w(hd)
                t[p + "self_attn.k_norm.weight"] = norm_w(hd)
            t[p + "self_attn.o_proj.weight"] = rnd(d, H * hd)
            t[p + "mlp.gate_proj.weight"] = rnd(I, d)
            t[p + "mlp.up_proj.weight"] = rnd(I, d)
            t[p + "mlp.down_proj.weight"] = rnd(d, I, std=0.2)
        t["model.norm.weight"] = norm_w(d)
        if not tied:
            t["lm_head.weight"] = rnd(V, d, std=0.5)
    elif arch == "gpt2":
        # transformers' GGUF loading of GPT-2 ignores feed_forward_length and context_length (it
        # keeps n_inner = 4 n_embd and n_positions = 1024): use those sizes so that it loads right.
        I = 4 * d
        c = {"model_type": "gpt2", "vocab_size": V, "n_embd": d, "n_layer": L, "n_head": H, "n_inner": I,
             "n_positions": 1024, "n_ctx": 1024, "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
             "tie_word_embeddings": True}
        t["transformer.wte.weight"] = rnd(V, d, std=1.0)
        t["transformer.wpe.weight"] = rnd(1024, d, std=0.3)
        for l in range(L):
            p = f"transformer.h.{l}."
            for n in ("ln_1", "ln_2"):
                t[p + n + ".weight"] = norm_w(d)
                t[p + n + ".bias"] = rnd(d, std=0.1)
            for n, shape in (("attn.c_attn", (d, 3 * d)), ("attn.c_proj", (d, d)), ("mlp.c_fc", (d, I)),
                             ("mlp.c_proj", (I, d))):
                t[p + n + ".weight"] = rnd(*shape)
                t[p + n + ".bias"] = rnd(shape[1], std=0.1)
        t["transformer.ln_f.weight"] = norm_w(d)
        t["transformer.ln_f.bias"] = rnd(d, std=0.1)
    elif arch == "gptneox":
        c = {"model_type": "gpt_neox", "vocab_size": V, "hidden_size": d, "num_hidden_layers": L,
             "num_attention_heads": H, "intermediate_size": I, "max_position_embeddings": 256, "rotary_pct": 0.5,
             "rotary_emb_base": 10000.0, "layer_norm_eps": 1e-5, "hidden_act": "gelu",
             "use_parallel_residual": True, "tie_word_embeddings": False}
        t["gpt_neox.embed_in.weight"] = rnd(V, d, std=1.0)
        for l in range(L):
            p = f"gpt_neox.layers.{l}."
            for n in ("input_layernorm", "post_attention_layernorm"):
                t[p + n + ".weight"] = norm_w(d)
                t[p + n + ".bias"] = rnd(d, std=0.1)
            for n, shape in (("attention.query_key_value", (3 * d, d)), ("attention.dense", (d, d)),
                             ("mlp.dense_h_to_4h", (I, d)), ("mlp.dense_4h_to_h", (d, I))):
                t[p + n + ".weight"] = rnd(*shape)
                t[p + n + ".bias"] = rnd(shape[0], std=0.1)
        t["gpt_neox.final_layer_norm.weight"] = norm_w(d)
        t["gpt_neox.final_layer_norm.bias"] = rnd(d, std=0.1)
        t["embed_out.weight"] = rnd(V, d, std=0.5)
    else:
        raise SystemExit(f"make-gguf: unknown arch {arch}")
    tok = _tokenizer_spm(V) if spm else _tokenizer_bpe(V)
    c["bos_token_id"], c["eos_token_id"] = tok["bos"], tok["eos"]
    os.makedirs(os.path.join(out_dir, "hf"), exist_ok=True)
    with open(os.path.join(out_dir, "hf", "config.json"), "w") as fh:
        json.dump(c, fh, indent=1)
    save_file(t, os.path.join(out_dir, "hf", "model.safetensors"), metadata={"format": "pt"})

    # llama.cpp's layout (convert_hf_to_gguf.py), written by gguf.GGUFWriter.
    def permute(w, n_head):
        return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    names = {  # HF module (layer-free tail) -> GGUF
        "llama": {"model.embed_tokens": "token_embd", "model.norm": "output_norm", "lm_head": "output",
                  "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                  "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
                  "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
                  "mlp.down_proj": "ffn_down"},
        "gpt2": {"transformer.wte": "token_embd", "transformer.wpe": "position_embd", "transformer.ln_f": "output_norm",
                 "ln_1": "attn_norm", "ln_2": "ffn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output",
                 "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"},
        "gptneox": {"gpt_neox.embed_in": "token_embd", "gpt_neox.final_layer_norm": "output_norm",
                    "embed_out": "output", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm",
                    "attention.query_key_value": "attn_qkv", "attention.dense": "attn_output",
                    "mlp.dense_h_to_4h": "ffn_up", "mlp.dense_4h_to_h": "ffn_down"},
    }
    names["qwen2"] = names["llama"]
    names["qwen3"] = dict(names["llama"], **{"self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"})
    layer_prefix = {"llama": "model.layers.", "qwen2": "model.layers.", "qwen3": "model.layers.",
                    "gpt2": "transformer.h.",
                    "gptneox": "gpt_neox.layers."}[arch]
    qtype = T[qtype_name]
    w = gguf.GGUFWriter(os.path.join(out_dir, "model.gguf"), arch)
    w.add_name(f"perpcomp test {arch}")
    w.add_context_length(c.get("max_position_embeddings", c.get("n_positions")))
    w.add_embedding_length(d)
    w.add_block_count(L)
    w.add_feed_forward_length(I)
    w.add_head_count(H)
    if llama_like:
        w.add_head_count_kv(KV)
        w.add_layer_norm_rms_eps(1e-5)
        w.add_rope_freq_base(5000.0)
        if arch == "llama":
            w.add_rope_dimension_count(hd)
            w.add_vocab_size(V)
        if arch == "qwen3":
            w.add_key_length(hd)
            w.add_value_length(hd)
            w.add_rope_dimension_count(hd)
    else:
        w.add_layer_norm_eps(1e-5)
    if arch == "gptneox":
        w.add_rope_dimension_count(int(0.5 * hd))
        w.add_parallel_residual(True)
    w.add_tokenizer_model(tok["model"])
    w.add_tokenizer_pre("default")
    w.add_token_list(tok["tokens"])
    w.add_token_types(tok["types"])
    if "scores" in tok:
        w.add_token_scores(tok["scores"])
    if "merges" in tok:
        w.add_token_merges(tok["merges"])
    w.add_bos_token_id(tok["bos"])
    w.add_eos_token_id(tok["eos"])
    if tok["unk"] is not None:
        w.add_unk_token_id(tok["unk"])
    deq = {}  # hf-deq/: the Hugging Face tensors as the GGUF holds them (qwen2, qwen3)
    for name, x in t.items():
        module, kind = name.rsplit(".", 1)
        layer = None
        if module.startswith(layer_prefix):
            rest = module[len(layer_prefix):]
            layer, tail = rest.split(".", 1)
        else:
            tail = module
        gname = names[arch][tail]
        gname = (f"blk.{layer}.{gname}" if layer is not None else gname) + "." + kind
        if arch == "llama" and tail in ("self_attn.q_proj", "self_attn.k_proj"):
            x = permute(x, H if tail.endswith("q_proj") else KV)
        if arch == "gpt2" and kind == "weight" and tail in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"):
            x = x.T
        if arch == "gptneox" and tail == "attention.query_key_value":
            x = x.reshape(H, 3, hd, *x.shape[1:]).swapaxes(0, 1).reshape(x.shape)
        x = np.ascontiguousarray(x)
        if x.ndim == 2 and qtype != T.F32 and tail not in ("transformer.wpe",):
            q = gguf.quants.quantize(x, qtype)
            w.add_tensor(gname, q, raw_dtype=qtype)
            deq[name] = gguf.quants.dequantize(q, qtype).astype(f32).reshape(x.shape)
        else:
            w.add_tensor(gname, x)
            deq[name] = x
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if qtype != T.F32 and arch in ("qwen2", "qwen3"):
        os.makedirs(os.path.join(out_dir, "hf-deq"), exist_ok=True)
        with open(os.path.join(out_dir, "hf-deq", "config.json"), "w") as fh:
            json.dump(c, fh, indent=1)
        save_file(deq, os.path.join(out_dir, "hf-deq", "model.safetensors"), metadata={"format": "pt"})


def cmd_state(gguf_file, out_dir):
    from safetensors.torch import save_file
    m = _model(gguf_file)
    os.makedirs(out_dir, exist_ok=True)
    sd = {k: v.contiguous() for k, v in m.state_dict().items()}
    # Tied heads share storage with the embedding; safetensors wants distinct tensors.
    if m.config.tie_word_embeddings:
        sd = {k: v for k, v in sd.items() if k != "lm_head.weight"}
    save_file(sd, os.path.join(out_dir, "model.safetensors"))
    with open(os.path.join(out_dir, "config.json"), "w") as fh:
        fh.write(m.config.to_json_string())


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    cmd, args = argv[1], argv[2:]
    if cmd == "quants":
        seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
        cmd_quants(args[0], seed)
    elif cmd == "make-gguf":
        qtype = args[args.index("--type") + 1] if "--type" in args else "F32"
        seed = int(args[args.index("--seed") + 1]) if "--seed" in args else 0
        cmd_make_gguf(args[0], args[1], qtype, seed, "--tied" in args, "--spm" in args)
    elif cmd == "state":
        cmd_state(*args)
    elif cmd == "tokenize":
        cmd_tokenize(*args)
    elif cmd == "tokenize-json":
        cmd_tokenize_json(*args)
    elif cmd == "generate":
        cmd_generate(*args)
    elif cmd == "nll":
        cmd_nll(*args)
    elif cmd == "logits":
        cmd_logits(*args)
    elif cmd == "hf-logits":
        cmd_hf_logits(*args)
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
