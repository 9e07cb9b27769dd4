#!/usr/bin/env python3
"""Hugging Face transformers as the oracle of perpcomp's model tests. Runs in the reference
environment (tools/setup-reference.sh), never in Debian's python3.

  hf_oracle.py parity-set TOKENS OUT MODEL_TYPE...
      for every MODEL_TYPE, every variant in SMALL and every dtype (f32, f16, bf16): makes a
      model (below) in OUT/<type>-<variant>-<dtype> and runs the forward (below) into
      OUT/<type>-<variant>-<dtype>.oracle; OUT/index.json lists them. Exits 3 for a model_type
      with no small config here (add one to SMALL).
  hf_oracle.py rope-set TOKENS OUT
      the same for the RoPE scaling variants in ROPE (linear, dynamic, llama3, yarn), f32.
  hf_oracle.py make-models TOKENIZER_DIR OUT MODEL_TYPE...
      the first variant of each MODEL_TYPE in f32, into OUT/<type>, with the tokenizer files of
      TOKENIZER_DIR (a 1000-token GPT-2 tokenizer) beside it.
  hf_oracle.py forward TOKENS MODEL_DIR...
      the forward of each MODEL_DIR into MODEL_DIR.oracle.
  hf_oracle.py awq-consumer TOKENS AWQ_DIR...
      each AWQ_DIR (an AutoAWQ GEMM folder, perpcomp's `--format awq-gemm`) converted by
      compressed-tensors' AutoAWQConverter (compressed_tensors.entrypoints.convert, the converter
      llm-compressor's project ships for AutoAWQ checkpoints) into AWQ_DIR-ct, a pack-quantized
      compressed-tensors folder, and the forward (below) of that folder into AWQ_DIR-ct.oracle:
      transformers loads it through its compressed-tensors integration and decompresses the
      weights on CPU.

A model: transformers builds it from a small config (AutoConfig.for_model +
AutoModelForCausalLM.from_config), its parameters are re-drawn from a seeded normal so that
norms and biases are not the trivial 1/0 of the default init, and save_pretrained writes it in
the dtype, as users' checkpoints are written.

The forward: AutoModelForCausalLM.from_pretrained(MODEL_DIR) in float32 with eager attention on
TOKENS (one window per line, ids separated by spaces). Writes X.oracle (float32 logits
(windows, T, V), little endian) and X.oracle.json: shape, transformers' own mean next-token NLL
(labels=input_ids), and how the folder loaded: transformers' loading info (missing, unexpected,
mismatched keys, errors), checkpoint tensors it drops silently (the class's
_keys_to_ignore_on_load_unexpected), and every warning transformers logged while loading.
"""
import argparse
import json
import logging
import os
import re
import shutil
import sys
import warnings

import torch

# The vocabulary of ../shared/data/models/tiny-random-gpt2's tokenizer, which make-models copies
# into its folders (perpcomp compress calibrates on text); the parity test's ids are bytes.
VOCAB = 1000

# Per model_type: the small config every variant starts from, and the variants (config changes).
SMALL = {
    "llama": (
        dict(vocab_size=VOCAB, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, max_position_embeddings=256, rope_theta=500.0, rms_norm_eps=1e-5,
             tie_word_embeddings=False, hidden_act="silu", bos_token_id=1, eos_token_id=2),
        {"base": {}, "tied": dict(tie_word_embeddings=True), "mha": dict(num_key_value_heads=6)},
    ),
    "mistral": (
        dict(vocab_size=VOCAB, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=3, max_position_embeddings=256, rope_theta=500.0, rms_norm_eps=1e-5,
             sliding_window=16, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2),
        {"base": {}},
    ),
    "qwen2": (
        dict(vocab_size=VOCAB, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, max_position_embeddings=256, rope_theta=500.0, rms_norm_eps=1e-5,
             use_sliding_window=False, sliding_window=16, max_window_layers=1, tie_word_embeddings=False,
             bos_token_id=1, eos_token_id=2),
        {"base": {}, "window": dict(use_sliding_window=True), "tied": dict(tie_word_embeddings=True)},
    ),
    "qwen3": (
        # head_dim 16 differs from hidden_size / num_attention_heads = 8.
        dict(vocab_size=VOCAB, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
             num_key_value_heads=2, head_dim=16, max_position_embeddings=256, rope_theta=500.0, rms_norm_eps=1e-5,
             use_sliding_window=False, sliding_window=16, max_window_layers=1, tie_word_embeddings=False,
             bos_token_id=1, eos_token_id=2),
        {"base": {}, "tied": dict(tie_word_embeddings=True), "bias": dict(attention_bias=True)},
    ),
    "gpt2": (
        dict(vocab_size=VOCAB, n_embd=48, n_layer=2, n_head=4, n_positions=256, layer_norm_epsilon=1e-5,
             activation_function="gelu_new", bos_token_id=0, eos_token_id=0),
        {"base": {}, "layer_scale": dict(scale_attn_by_inverse_layer_idx=True)},
    ),
    "gpt_neox": (
        dict(vocab_size=VOCAB, hidden_size=48, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=256, rotary_pct=0.5, rotary_emb_base=10000, layer_norm_eps=1e-5,
             hidden_act="gelu", use_parallel_residual=True, tie_word_embeddings=False, bos_token_id=0,
             eos_token_id=0),
        {"base": {}, "sequential": dict(use_parallel_residual=False)},
    ),
    "opt": (
        dict(vocab_size=VOCAB, hidden_size=48, ffn_dim=192, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=256, do_layer_norm_before=True, word_embed_proj_dim=48,
             activation_function="relu", enable_bias=True, pad_token_id=1, bos_token_id=2, eos_token_id=2),
        {"base": {}, "post_ln": dict(do_layer_norm_before=False, word_embed_proj_dim=32)},
    ),
}

# RoPE scaling as Llama-3.1/3.2 and Qwen2.5 configs carry it (transformers' rope types), on the
# llama and qwen2 configs in f32: variant -> (model_type, config changes). max_position_embeddings
# (dynamic) and original_max_position_embeddings lie below the test's 64 tokens, so scaling acts.
ROPE = {
    "rope-linear": ("llama", dict(rope_parameters=dict(rope_type="linear", factor=2.0, rope_theta=500.0))),
    "rope-dynamic": ("llama", dict(max_position_embeddings=32,
                                   rope_parameters=dict(rope_type="dynamic", factor=2.0, rope_theta=500.0))),
    "rope-llama3": ("llama", dict(rope_parameters=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                       high_freq_factor=4.0, original_max_position_embeddings=32,
                                                       rope_theta=500.0))),
    "rope-yarn": ("qwen2", dict(max_position_embeddings=128, rope_parameters=dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=32,
                                                     rope_theta=500.0))),
}

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


def small_config(model_type, variant):
    from transformers import AutoConfig
    if model_type not in SMALL:
        sys.stderr.write(f"hf_oracle.py: no small config for model_type '{model_type}' (add one to SMALL)\n")
        sys.exit(3)
    base, variants = SMALL[model_type]
    if variant in ROPE and ROPE[variant][0] == model_type:
        return AutoConfig.for_model(model_type, **{**base, **ROPE[variant][1]})
    if variant not in variants:
        sys.stderr.write(f"hf_oracle.py: {model_type} has no variant '{variant}' (have: {', '.join(variants)})\n")
        sys.exit(3)
    return AutoConfig.for_model(model_type, **{**base, **variants[variant]})


def make_model(model_type, variant, dtype, out, seed):
    from transformers import AutoModelForCausalLM
    config = small_config(model_type, variant)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32, attn_implementation="eager")
    # Non-trivial values everywhere (the default init has unit norms and zero biases, which would
    # hide a norm or bias read wrongly): norms ~ 1 + N(0, 0.2), biases ~ N(0, 0.1), embeddings
    # ~ N(0, 1), other matrices ~ N(0, 0.35 / sqrt(fan_in / 48)).
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                is_norm = any(k in name for k in ("norm", "ln_", "ln_f", "layernorm"))
                if is_norm and name.endswith("weight"):
                    p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
                else:
                    p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif any(k in name for k in ("embed", "wte", "wpe")):
                p.copy_(torch.randn(p.shape, generator=g) * (0.3 if ("position" in name or "wpe" in name) else 1.0))
            else:
                fan_in = p.shape[0] if name.endswith("c_attn.weight") or ".c_" in name else p.shape[1]  # GPT-2 Conv1D: [in, out]
                p.copy_(torch.randn(p.shape, generator=g) * 0.35 / (fan_in / 48) ** 0.5)
    model = model.to(DTYPES[dtype])
    model.save_pretrained(out, safe_serialization=True)


def read_tokens(path):
    rows = [list(map(int, line.split())) for line in open(path) if line.strip()]
    return torch.tensor(rows, dtype=torch.long)


def checkpoint_names(model_dir):
    from safetensors import safe_open
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    files = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    names = set()
    for f in files:
        with safe_open(os.path.join(model_dir, f), "pt") as st:
            names.update(st.keys())
    return names


class Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def forward(model_dir, tokens_path, out):
    import transformers
    from transformers import AutoModelForCausalLM
    records = Records()
    transformers.logging.set_verbosity_warning()
    tlog = logging.getLogger("transformers")
    tlog.addHandler(records)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model, info = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32,
                                                           attn_implementation="eager", output_loading_info=True)
    tlog.removeHandler(records)
    model.eval()
    # Checkpoint tensors transformers drops without listing them as unexpected: those matching the
    # class's _keys_to_ignore_on_load_unexpected patterns.
    patterns = [re.compile(p) for p in (getattr(model, "_keys_to_ignore_on_load_unexpected", None) or [])]
    expected = set(model.state_dict().keys())
    ignored = sorted(k for k in checkpoint_names(model_dir)
                     if k not in expected and any(p.search(k) for p in patterns))
    ids = read_tokens(tokens_path)
    with torch.no_grad():
        res = model(input_ids=ids, labels=ids)
    logits = res.logits.float().contiguous()
    logits.numpy().astype("<f4").tofile(out)
    meta = {
        "shape": list(logits.shape),
        "nll": float(res.loss),
        "transformers": transformers.__version__,
        "model_class": type(model).__name__,
        "missing_keys": sorted(info.get("missing_keys", [])),
        "unexpected_keys": sorted(info.get("unexpected_keys", [])),
        "mismatched_keys": [str(m) for m in info.get("mismatched_keys", [])],
        "error_msgs": [str(m) for m in info.get("error_msgs", [])],
        "ignored_keys": ignored,
        "warnings": records.messages + [str(w.message) for w in caught],
    }
    json.dump(meta, open(out + ".json", "w"), indent=1)


def awq_consumer(awq_dir, tokens_path):
    """Converts the AutoAWQ folder awq_dir with compressed-tensors and runs transformers on it."""
    from compressed_tensors.entrypoints.convert import AutoAWQConverter, convert_checkpoint

    class Contiguous(AutoAWQConverter):
        # compressed-tensors 0.19's pack_to_int32 returns a non-contiguous slice when a row's
        # 4-bit codes do not fill whole groups of 32 (in_features not a multiple of 32, as in
        # the test's small models; real models' are), which safetensors refuses to save. The
        # values are right; only the memory layout is fixed here.
        def process(self, tensors):
            return {k: v.contiguous() for k, v in super().process(tensors).items()}

    src = awq_dir.rstrip("/")
    dst = src + "-ct"
    shutil.rmtree(dst, ignore_errors=True)
    convert_checkpoint(src, dst, Contiguous.from_pretrained(src), device="cpu")
    forward(dst, tokens_path, dst + ".oracle")


def variants_of(model_type):
    if model_type not in SMALL:
        sys.stderr.write(f"hf_oracle.py: no small config for model_type '{model_type}' (add one to SMALL)\n")
        sys.exit(3)
    return list(SMALL[model_type][1])


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("parity-set")
    p.add_argument("tokens")
    p.add_argument("out")
    p.add_argument("model_types", nargs="+")
    r = sub.add_parser("rope-set")
    r.add_argument("tokens")
    r.add_argument("out")
    m = sub.add_parser("make-models")
    m.add_argument("tokenizer_dir")
    m.add_argument("out")
    m.add_argument("model_types", nargs="+")
    f = sub.add_parser("forward")
    f.add_argument("tokens")
    f.add_argument("model_dirs", nargs="+")
    w = sub.add_parser("awq-consumer")
    w.add_argument("tokens")
    w.add_argument("awq_dirs", nargs="+")
    a = ap.parse_args()
    torch.set_num_threads(1)
    import transformers
    transformers.utils.logging.disable_progress_bar()
    if a.cmd == "parity-set":
        index = []
        for mt in a.model_types:
            for variant in variants_of(mt):
                for dtype in DTYPES:
                    d = os.path.join(a.out, f"{mt}-{variant}-{dtype}")
                    make_model(mt, variant, dtype, d, seed=len(index) + 1)
                    forward(d, a.tokens, d + ".oracle")
                    index.append({"model_type": mt, "variant": variant, "dtype": dtype, "dir": d,
                                  "oracle": d + ".oracle"})
        json.dump(index, open(os.path.join(a.out, "index.json"), "w"), indent=1)
    elif a.cmd == "rope-set":
        index = []
        for variant, (mt, _) in ROPE.items():
            d = os.path.join(a.out, f"{mt}-{variant}-f32")
            make_model(mt, variant, "f32", d, seed=50 + len(index))
            forward(d, a.tokens, d + ".oracle")
            index.append({"model_type": mt, "variant": variant, "dtype": "f32", "dir": d, "oracle": d + ".oracle"})
        json.dump(index, open(os.path.join(a.out, "index.json"), "w"), indent=1)
    elif a.cmd == "make-models":
        for i, mt in enumerate(a.model_types):
            d = os.path.join(a.out, mt)
            make_model(mt, variants_of(mt)[0], "f32", d, seed=100 + i)
            for f in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt"):
                if os.path.exists(os.path.join(a.tokenizer_dir, f)):
                    shutil.copy(os.path.join(a.tokenizer_dir, f), d)
    elif a.cmd == "awq-consumer":
        for d in a.awq_dirs:
            awq_consumer(d, a.tokens)
    else:
        for d in a.model_dirs:
            forward(d, a.tokens, d.rstrip("/") + ".oracle")


if __name__ == "__main__":
    main()
