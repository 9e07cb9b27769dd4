#!/usr/bin/env python3
"""Eager reference forwards written from each architecture's published description
(Hugging Face modeling files' semantics), in Debian's python3-torch. No Hugging Face
libraries. Used by perpcomp's reference-parity tests.

  hf_reference.py make-model ARCH OUT_DIR [--seed S] [--dtype f32|bf16|f16] [--variant V]
      writes a seeded random Hugging Face folder (config.json + model.safetensors) of ARCH
      (llama, mistral, qwen2, gpt2, gpt_neox, opt) with non-trivial weights.
  hf_reference.py logits MODEL_DIR TOKENS OUT
      TOKENS: text file, one window per line, ids separated by spaces; OUT: float32 raw
      logits (windows, T, V) little endian, with a JSON sidecar OUT.json giving the shape.
  hf_reference.py llama2c-logits MODEL.bin TOKENS OUT
      llama2.c's own math (adjacent-pair RoPE) on its .bin file.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch

DT = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "F64": torch.float64}
DT_NAME = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


# ---------------------------------------------------------------- safetensors (by hand)
def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        raw = bytearray(data[base + b:base + e])
        dt = DT[info["dtype"]]
        if dt == torch.bfloat16:
            t = torch.frombuffer(raw, dtype=torch.int16).view(torch.bfloat16)
        else:
            t = torch.frombuffer(raw, dtype=dt) if len(raw) else torch.empty(0, dtype=dt)
        out[name] = t.reshape(info["shape"]).clone()
    return out


def load_dir(d):
    idx = os.path.join(d, "model.safetensors.index.json")
    if os.path.exists(idx):
        files = sorted(set(json.load(open(idx))["weight_map"].values()))
        t = {}
        for f in files:
            t.update(read_safetensors(os.path.join(d, f)))
        return t
    return read_safetensors(os.path.join(d, "model.safetensors"))


def write_safetensors(path, tensors):
    header, chunks, off = {}, [], 0
    for name, t in tensors.items():
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            b = t.view(torch.int16).numpy().tobytes()
        else:
            b = t.numpy().tobytes()
        header[name] = {"dtype": DT_NAME[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        chunks.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for c in chunks:
            f.write(c)


# ---------------------------------------------------------------- building blocks
def rms_norm(x, w, eps):
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rope_cos_sin(T, dim, theta):
    inv = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.int64).double() / dim))
    inv = inv.float()
    pos = torch.arange(T).float()
    freqs = torch.outer(pos, inv)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos(), emb.sin()


def act(name, x):
    if name in ("silu", "swish"):
        return torch.nn.functional.silu(x)
    if name == "gelu":
        return torch.nn.functional.gelu(x)
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "relu":
        return torch.relu(x)
    raise ValueError(name)


def attention(q, k, v, scale, window=None):
    # q (B,H,T,hd), k/v (B,KV,T,hd)
    H, KV = q.shape[1], k.shape[1]
    if H != KV:
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
    T = q.shape[2]
    s = (q @ k.transpose(-1, -2)) * scale
    i = torch.arange(T)[:, None]
    j = torch.arange(T)[None, :]
    allowed = j <= i
    if window:
        allowed = allowed & (j > i - window)
    s = s.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(s.float(), dim=-1).to(q.dtype)
    return p @ v


def lin(x, t, name, bias=True):
    y = x @ t[name + ".weight"].T
    if bias and (name + ".bias") in t:
        y = y + t[name + ".bias"]
    return y


# ---------------------------------------------------------------- forwards
def forward_llama(c, t, ids):
    B, T = ids.shape
    H, hd = c["num_attention_heads"], c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    KV = c.get("num_key_value_heads") or H
    eps = c.get("rms_norm_eps", 1e-6)
    cos, sin = rope_cos_sin(T, hd, c.get("rope_theta", 10000.0))
    window = None
    if c["model_type"] == "mistral":
        window = c.get("sliding_window")
    if c["model_type"] == "qwen2" and c.get("use_sliding_window"):
        window = c.get("sliding_window")
    h = t["model.embed_tokens.weight"][ids]
    for L in range(c["num_hidden_layers"]):
        p = f"model.layers.{L}."
        x = rms_norm(h, t[p + "input_layernorm.weight"], eps)
        q = lin(x, t, p + "self_attn.q_proj").view(B, T, H, hd).transpose(1, 2)
        k = lin(x, t, p + "self_attn.k_proj").view(B, T, KV, hd).transpose(1, 2)
        v = lin(x, t, p + "self_attn.v_proj").view(B, T, KV, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        w = window if (window and L >= c.get("max_window_layers", 0)) else None
        a = attention(q, k, v, 1.0 / math.sqrt(hd), w).transpose(1, 2).reshape(B, T, H * hd)
        h = h + lin(a, t, p + "self_attn.o_proj")
        x = rms_norm(h, t[p + "post_attention_layernorm.weight"], eps)
        m = act(c.get("hidden_act", "silu"), lin(x, t, p + "mlp.gate_proj")) * lin(x, t, p + "mlp.up_proj")
        h = h + lin(m, t, p + "mlp.down_proj")
    h = rms_norm(h, t["model.norm.weight"], eps)
    head = t.get("lm_head.weight", t["model.embed_tokens.weight"]) if not c.get("tie_word_embeddings", False) \
        else t["model.embed_tokens.weight"]
    return h @ head.T


def forward_gpt2(c, t, ids):
    B, T = ids.shape
    d, H = c["n_embd"], c["n_head"]
    hd = d // H
    eps = c.get("layer_norm_epsilon", 1e-5)
    pre = "transformer." if "transformer.wte.weight" in t else ""
    h = t[pre + "wte.weight"][ids] + t[pre + "wpe.weight"][torch.arange(T)]
    for L in range(c["n_layer"]):
        p = f"{pre}h.{L}."
        x = layer_norm(h, t[p + "ln_1.weight"], t[p + "ln_1.bias"], eps)
        qkv = x @ t[p + "attn.c_attn.weight"] + t[p + "attn.c_attn.bias"]  # Conv1D: [in, out]
        q, k, v = qkv.split(d, dim=2)
        q = q.view(B, T, H, hd).transpose(1, 2)
        k = k.view(B, T, H, hd).transpose(1, 2)
        v = v.view(B, T, H, hd).transpose(1, 2)
        scale = 1.0 / math.sqrt(hd) if c.get("scale_attn_weights", True) else 1.0
        if c.get("scale_attn_by_inverse_layer_idx", False):
            scale /= float(L + 1)
        a = attention(q, k, v, scale).transpose(1, 2).reshape(B, T, d)
        h = h + (a @ t[p + "attn.c_proj.weight"] + t[p + "attn.c_proj.bias"])
        x = layer_norm(h, t[p + "ln_2.weight"], t[p + "ln_2.bias"], eps)
        m = act(c.get("activation_function", "gelu_new"), x @ t[p + "mlp.c_fc.weight"] + t[p + "mlp.c_fc.bias"])
        h = h + (m @ t[p + "mlp.c_proj.weight"] + t[p + "mlp.c_proj.bias"])
    h = layer_norm(h, t[pre + "ln_f.weight"], t[pre + "ln_f.bias"], eps)
    return h @ t[pre + "wte.weight"].T


def forward_neox(c, t, ids):
    B, T = ids.shape
    d, H = c["hidden_size"], c["num_attention_heads"]
    hd = d // H
    rd = int(hd * c.get("rotary_pct", 0.25))
    eps = c.get("layer_norm_eps", 1e-5)
    cos, sin = rope_cos_sin(T, rd, c.get("rotary_emb_base", c.get("rope_theta", 10000)))
    h = t["gpt_neox.embed_in.weight"][ids]
    for L in range(c["num_hidden_layers"]):
        p = f"gpt_neox.layers.{L}."
        x = layer_norm(h, t[p + "input_layernorm.weight"], t[p + "input_layernorm.bias"], eps)
        qkv = lin(x, t, p + "attention.query_key_value").view(B, T, H, 3 * hd).permute(0, 2, 1, 3)
        q, k, v = qkv[..., :hd], qkv[..., hd:2 * hd], qkv[..., 2 * hd:]
        qr, qp = q[..., :rd], q[..., rd:]
        kr, kp = k[..., :rd], k[..., rd:]
        q = torch.cat((qr * cos + rotate_half(qr) * sin, qp), dim=-1)
        k = torch.cat((kr * cos + rotate_half(kr) * sin, kp), dim=-1)
        a = attention(q, k, v, 1.0 / math.sqrt(hd)).transpose(1, 2).reshape(B, T, d)
        a = lin(a, t, p + "attention.dense")
        act_name = c.get("hidden_act", "gelu")
        if c.get("use_parallel_residual", True):
            x2 = layer_norm(h, t[p + "post_attention_layernorm.weight"], t[p + "post_attention_layernorm.bias"], eps)
            m = lin(act(act_name, lin(x2, t, p + "mlp.dense_h_to_4h")), t, p + "mlp.dense_4h_to_h")
            h = h + a + m
        else:
            h = h + a
            x2 = layer_norm(h, t[p + "post_attention_layernorm.weight"], t[p + "post_attention_layernorm.bias"], eps)
            h = h + lin(act(act_name, lin(x2, t, p + "mlp.dense_h_to_4h")), t, p + "mlp.dense_4h_to_h")
    h = layer_norm(h, t["gpt_neox.final_layer_norm.weight"], t["gpt_neox.final_layer_norm.bias"], eps)
    return h @ t["embed_out.weight"].T


def forward_opt(c, t, ids):
    B, T = ids.shape
    d, H = c["hidden_size"], c["num_attention_heads"]
    hd = d // H
    eps = 1e-5
    pre_ln = c.get("do_layer_norm_before", True)
    p0 = "model.decoder."
    h = t[p0 + "embed_tokens.weight"][ids]
    if (p0 + "project_in.weight") in t:
        h = h @ t[p0 + "project_in.weight"].T
    h = h + t[p0 + "embed_positions.weight"][torch.arange(T) + 2]
    for L in range(c["num_hidden_layers"]):
        p = f"{p0}layers.{L}."
        r = h
        x = layer_norm(h, t[p + "self_attn_layer_norm.weight"], t[p + "self_attn_layer_norm.bias"], eps) if pre_ln else h
        q = (lin(x, t, p + "self_attn.q_proj") * hd ** -0.5).view(B, T, H, hd).transpose(1, 2)
        k = lin(x, t, p + "self_attn.k_proj").view(B, T, H, hd).transpose(1, 2)
        v = lin(x, t, p + "self_attn.v_proj").view(B, T, H, hd).transpose(1, 2)
        a = attention(q, k, v, 1.0).transpose(1, 2).reshape(B, T, d)
        h = r + lin(a, t, p + "self_attn.out_proj")
        if not pre_ln:
            h = layer_norm(h, t[p + "self_attn_layer_norm.weight"], t[p + "self_attn_layer_norm.bias"], eps)
        r = h
        x = layer_norm(h, t[p + "final_layer_norm.weight"], t[p + "final_layer_norm.bias"], eps) if pre_ln else h
        x = lin(act(c.get("activation_function", "relu"), lin(x, t, p + "fc1")), t, p + "fc2")
        h = r + x
        if not pre_ln:
            h = layer_norm(h, t[p + "final_layer_norm.weight"], t[p + "final_layer_norm.bias"], eps)
    if pre_ln and (p0 + "final_layer_norm.weight") in t:
        h = layer_norm(h, t[p0 + "final_layer_norm.weight"], t[p0 + "final_layer_norm.bias"], eps)
    if (p0 + "project_out.weight") in t:
        h = h @ t[p0 + "project_out.weight"].T
    return h @ t.get("lm_head.weight", t[p0 + "embed_tokens.weight"]).T


FORWARDS = {"llama": forward_llama, "mistral": forward_llama, "qwen2": forward_llama,
            "gpt2": forward_gpt2, "gpt_neox": forward_neox, "opt": forward_opt}


# ---------------------------------------------------------------- random models
def make_model(arch, out, seed=0, dtype="f32", variant=""):
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, std=0.35):
        return (torch.randn(*shape, generator=g) * std)

    def norm_w(n):
        return 1.0 + 0.2 * torch.randn(n, generator=g)

    V, d, L = 97, 48, 3
    t = {}
    if arch in ("llama", "mistral", "qwen2"):
        H, KV, I = 6, (2 if arch != "mistral" else 3), 80
        hd = d // H
        c = {"model_type": arch, "architectures": ["X"], "vocab_size": V, "hidden_size": d,
             "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": KV,
             "intermediate_size": I, "max_position_embeddings": 128, "rms_norm_eps": 1e-5,
             "rope_theta": 500.0, "hidden_act": "silu", "tie_word_embeddings": variant == "tied",
             "bos_token_id": 1, "eos_token_id": 2}
        if arch == "mistral":
            c["sliding_window"] = 7
        if arch == "qwen2":
            c["use_sliding_window"] = variant == "window"
            c["sliding_window"] = 5
            c["max_window_layers"] = 1
        t["model.embed_tokens.weight"] = rnd(V, d, std=1.0)
        for l in range(L):
            p = f"model.layers.{l}."
            t[p + "input_layernorm.weight"] = norm_w(d)
            t[p + "post_attention_layernorm.weight"] = norm_w(d)
            t[p + "self_attn.q_proj.weight"] = rnd(H * hd, d)
            t[p + "self_attn.k_proj.weight"] = rnd(KV * hd, d)
            t[p + "self_attn.v_proj.weight"] = rnd(KV * hd, d)
            if arch == "qwen2":
                t[p + "self_attn.q_proj.bias"] = rnd(H * hd, std=0.1)
                t[p + "self_attn.k_proj.bias"] = rnd(KV * hd, std=0.1)
                t[p + "self_attn.v_proj.bias"] = rnd(KV * hd, std=0.1)
            t[p + "self_attn.o_proj.weight"] = rnd(d, H * hd)
            t[p + "mlp.gate_proj.weight"] = rnd(I, d)
            t[p + "mlp.up_proj.weight"] = rnd(I, d)
            t[p + "mlp.down_proj.weight"] = rnd(d, I, std=0.2)
        t["model.norm.weight"] = norm_w(d)
        if variant != "tied":
            t["lm_head.weight"] = rnd(V, d, std=0.5)
    elif arch == "gpt2":
        H, I = 4, 4 * d
        c = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": V, "n_embd": d,
             "n_layer": L, "n_head": H, "n_inner": None, "n_positions": 64, "n_ctx": 64,
             "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new",
             "scale_attn_by_inverse_layer_idx": variant == "layer_scale", "bos_token_id": 0, "eos_token_id": 0}
        t["transformer.wte.weight"] = rnd(V, d, std=1.0)
        t["transformer.wpe.weight"] = rnd(64, d, std=0.3)
        for l in range(L):
            p = f"transformer.h.{l}."
            for n in ("ln_1", "ln_2"):
                t[p + n + ".weight"] = norm_w(d)
                t[p + n + ".bias"] = rnd(d, std=0.1)
            t[p + "attn.c_attn.weight"] = rnd(d, 3 * d)
            t[p + "attn.c_attn.bias"] = rnd(3 * d, std=0.1)
            t[p + "attn.c_proj.weight"] = rnd(d, d)
            t[p + "attn.c_proj.bias"] = rnd(d, std=0.1)
            t[p + "mlp.c_fc.weight"] = rnd(d, I)
            t[p + "mlp.c_fc.bias"] = rnd(I, std=0.1)
            t[p + "mlp.c_proj.weight"] = rnd(I, d, std=0.2)
            t[p + "mlp.c_proj.bias"] = rnd(d, std=0.1)
        t["transformer.ln_f.weight"] = norm_w(d)
        t["transformer.ln_f.bias"] = rnd(d, std=0.1)
    elif arch == "gpt_neox":
        H, I = 4, 4 * d
        hd = d // H
        c = {"model_type": "gpt_neox", "architectures": ["GPTNeoXForCausalLM"], "vocab_size": V,
             "hidden_size": d, "num_hidden_layers": L, "num_attention_heads": H, "intermediate_size": I,
             "max_position_embeddings": 128, "rotary_pct": 0.5, "rotary_emb_base": 10000,
             "layer_norm_eps": 1e-5, "hidden_act": "gelu", "use_parallel_residual": variant != "sequential",
             "tie_word_embeddings": False, "bos_token_id": 0, "eos_token_id": 0}
        t["gpt_neox.embed_in.weight"] = rnd(V, d, std=1.0)
        for l in range(L):
            p = f"gpt_neox.layers.{l}."
            for n in ("input_layernorm", "post_attention_layernorm"):
                t[p + n + ".weight"] = norm_w(d)
                t[p + n + ".bias"] = rnd(d, std=0.1)
            t[p + "attention.query_key_value.weight"] = rnd(3 * d, d)
            t[p + "attention.query_key_value.bias"] = rnd(3 * d, std=0.1)
            t[p + "attention.dense.weight"] = rnd(d, d)
            t[p + "attention.dense.bias"] = rnd(d, std=0.1)
            t[p + "mlp.dense_h_to_4h.weight"] = rnd(I, d)
            t[p + "mlp.dense_h_to_4h.bias"] = rnd(I, std=0.1)
            t[p + "mlp.dense_4h_to_h.weight"] = rnd(d, I, std=0.2)
            t[p + "mlp.dense_4h_to_h.bias"] = rnd(d, std=0.1)
            t[p + "attention.rotary_emb.inv_freq"] = torch.ones(hd // 4)  # a buffer real checkpoints carry
        t["gpt_neox.final_layer_norm.weight"] = norm_w(d)
        t["gpt_neox.final_layer_norm.bias"] = rnd(d, std=0.1)
        t["embed_out.weight"] = rnd(V, d, std=0.5)
    elif arch == "opt":
        H, I = 4, 4 * d
        post = variant == "post_ln"
        ed = 32 if post else d
        c = {"model_type": "opt", "architectures": ["OPTForCausalLM"], "vocab_size": V, "hidden_size": d,
             "num_hidden_layers": L, "num_attention_heads": H, "ffn_dim": I, "max_position_embeddings": 64,
             "do_layer_norm_before": not post, "word_embed_proj_dim": ed, "activation_function": "relu",
             "enable_bias": True, "bos_token_id": 2, "eos_token_id": 2, "pad_token_id": 1}
        p0 = "model.decoder."
        t[p0 + "embed_tokens.weight"] = rnd(V, ed, std=1.0)
        t[p0 + "embed_positions.weight"] = rnd(66, d, std=0.3)
        if post:
            t[p0 + "project_in.weight"] = rnd(d, ed)
            t[p0 + "project_out.weight"] = rnd(ed, d)
        for l in range(L):
            p = f"{p0}layers.{l}."
            for n in ("self_attn_layer_norm", "final_layer_norm"):
                t[p + n + ".weight"] = norm_w(d)
                t[p + n + ".bias"] = rnd(d, std=0.1)
            for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
                t[p + "self_attn." + n + ".weight"] = rnd(d, d)
                t[p + "self_attn." + n + ".bias"] = rnd(d, std=0.1)
            t[p + "fc1.weight"] = rnd(I, d)
            t[p + "fc1.bias"] = rnd(I, std=0.1)
            t[p + "fc2.weight"] = rnd(d, I, std=0.2)
            t[p + "fc2.bias"] = rnd(d, std=0.1)
        if not post:
            t[p0 + "final_layer_norm.weight"] = norm_w(d)
            t[p0 + "final_layer_norm.bias"] = rnd(d, std=0.1)
    else:
        raise SystemExit("unknown arch " + arch)
    tdt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    t = {k: v.to(tdt) for k, v in t.items()}
    c["torch_dtype"] = {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[dtype]
    os.makedirs(out, exist_ok=True)
    json.dump(c, open(os.path.join(out, "config.json"), "w"), indent=2)
    write_safetensors(os.path.join(out, "model.safetensors"), t)


def read_tokens(path):
    rows = [list(map(int, line.split())) for line in open(path) if line.strip()]
    return torch.tensor(rows, dtype=torch.long)


def write_out(out, logits):
    arr = logits.detach().float().contiguous().numpy().astype("<f4")
    arr.tofile(out)
    json.dump({"shape": list(arr.shape)}, open(out + ".json", "w"))


def logits_cmd(model_dir, tokens, out):
    c = json.load(open(os.path.join(model_dir, "config.json")))
    t = load_dir(model_dir)
    t = {k: v.float() for k, v in t.items()}  # reference in float32 whatever is stored
    with torch.no_grad():
        write_out(out, FORWARDS[c["model_type"]](c, t, read_tokens(tokens)))


def llama2c_logits(path, tokens, out):
    raw = open(path, "rb").read()
    dim, hidden, L, H, KV, V, S = struct.unpack("<7i", raw[:28])
    shared = V > 0
    V = abs(V)
    f = np.frombuffer(raw[28:], dtype="<f4")
    o = 0

    def take(*shape):
        nonlocal o
        n = int(np.prod(shape))
        a = torch.from_numpy(f[o:o + n].copy()).reshape(shape)
        o += n
        return a

    hs = dim // H
    emb = take(V, dim)
    rms_att = take(L, dim)
    wq = take(L, dim, dim)
    wk = take(L, KV * hs, dim)
    wv = take(L, KV * hs, dim)
    wo = take(L, dim, dim)
    rms_ffn = take(L, dim)
    w1 = take(L, hidden, dim)
    w2 = take(L, dim, hidden)
    w3 = take(L, hidden, dim)
    rms_final = take(dim)
    take(S, hs // 2)
    take(S, hs // 2)
    wcls = emb if shared else take(V, dim)
    ids = read_tokens(tokens)
    B, T = ids.shape

    def rms(x, w):
        return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))

    # adjacent-pair rotation, llama2.c run.c: freq = 1 / 10000^(head_dim / head_size) for even head_dim
    pos = torch.arange(T).float()
    i = torch.arange(0, hs, 2).float()
    freq = 1.0 / torch.pow(10000.0, i / hs)
    ang = torch.outer(pos, freq)  # (T, hs/2)
    cr, ci = ang.cos(), ang.sin()

    def rot(x):  # x (B,h,T,hs)
        x0, x1 = x[..., 0::2], x[..., 1::2]
        y0 = x0 * cr - x1 * ci
        y1 = x0 * ci + x1 * cr
        return torch.stack((y0, y1), dim=-1).flatten(-2)

    x = emb[ids]
    for l in range(L):
        a = rms(x, rms_att[l])
        q = (a @ wq[l].T).view(B, T, H, hs).transpose(1, 2)
        k = (a @ wk[l].T).view(B, T, KV, hs).transpose(1, 2)
        v = (a @ wv[l].T).view(B, T, KV, hs).transpose(1, 2)
        q, k = rot(q), rot(k)
        att = attention(q, k, v, 1.0 / math.sqrt(hs)).transpose(1, 2).reshape(B, T, dim)
        x = x + att @ wo[l].T
        b = rms(x, rms_ffn[l])
        x = x + (torch.nn.functional.silu(b @ w1[l].T) * (b @ w3[l].T)) @ w2[l].T
    x = rms(x, rms_final)
    write_out(out, x @ wcls.T)


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    cmd = argv[1]
    if cmd == "make-model":
        args = argv[2:]
        opts = {"--seed": "0", "--dtype": "f32", "--variant": ""}
        pos = []
        it = iter(args)
        for a in it:
            if a in opts:
                opts[a] = next(it)
            else:
                pos.append(a)
        make_model(pos[0], pos[1], int(opts["--seed"]), opts["--dtype"], opts["--variant"])
    elif cmd == "logits":
        logits_cmd(*argv[2:5])
    elif cmd == "llama2c-logits":
        llama2c_logits(*argv[2:5])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
