#!/usr/bin/env python3
"""Hugging Face transformers itself as the reference (run with the reference environment's python).

  transformers_ref.py make-model CONFIG_JSON OUT_DIR [--seed N] [--legacy-rope]
      Builds the model transformers' AutoConfig / AutoModelForCausalLM make from the config object in
      CONFIG_JSON (model_type plus whatever keys the test sets), gives every parameter seeded random
      values (weights N(0, 0.2), norm weights 1 + N(0, 0.1), biases N(0, 0.05)) so that the logits are
      far from uniform, and writes it with save_pretrained in float32. --legacy-rope rewrites the saved
      config.json in the transformers 4 form: `rope_scaling` (with `type` instead of `rope_type`) and a
      top-level `rope_theta` in place of transformers 5's `rope_parameters`.
  transformers_ref.py batch JOBS_JSON
      Both of the above for a list of jobs in one process (the import costs more than a tiny model):
      [{"config": {...}, "dir": ..., "seed": N, "legacy_rope": bool, "tokens": ..., "out": ...}, ...].
  transformers_ref.py logits MODEL_DIR TOKENS OUT
      Loads MODEL_DIR with AutoModelForCausalLM.from_pretrained (float32, eager attention), runs one
      forward over all windows of TOKENS (one line of ids per window) and writes the logits as OUT
      (little-endian float32) plus OUT.json with the shape (the format of hf_reference.py).
"""
import argparse
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402


def make_model(config_json, out, seed, legacy_rope):
    spec = json.load(open(config_json))
    model_type = spec.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **spec)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(config, torch_dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "ln_" in name:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g) if name.endswith("weight")
                        else 0.05 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
    model.save_pretrained(out, safe_serialization=True)
    if legacy_rope:
        path = os.path.join(out, "config.json")
        c = json.load(open(path))
        rope = c.pop("rope_parameters")
        c["rope_theta"] = rope.pop("rope_theta")
        rope["type"] = rope.pop("rope_type")
        c["rope_scaling"] = rope
        json.dump(c, open(path, "w"), indent=2)


def read_tokens(path):
    rows = [list(map(int, line.split())) for line in open(path) if line.strip()]
    return torch.tensor(rows, dtype=torch.long)


def logits(model_dir, tokens, out):
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32,
                                                              attn_implementation="eager")
    model.eval()
    with torch.no_grad():
        y = model(read_tokens(tokens)).logits
    arr = y.float().contiguous().numpy().astype("<f4")
    arr.tofile(out)
    json.dump({"shape": list(arr.shape), "transformers": transformers.__version__}, open(out + ".json", "w"))


def batch(jobs_json):
    for job in json.load(open(jobs_json)):
        config_json = job["dir"] + ".config.json"
        json.dump(job["config"], open(config_json, "w"))
        make_model(config_json, job["dir"], job.get("seed", 0), job.get("legacy_rope", False))
        logits(job["dir"], job["tokens"], job["out"])


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make-model")
    m.add_argument("config_json")
    m.add_argument("out")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--legacy-rope", action="store_true")
    b = sub.add_parser("batch")
    b.add_argument("jobs_json")
    lg = sub.add_parser("logits")
    lg.add_argument("model_dir")
    lg.add_argument("tokens")
    lg.add_argument("out")
    a = ap.parse_args()
    if a.cmd == "make-model":
        make_model(a.config_json, a.out, a.seed, a.legacy_rope)
    elif a.cmd == "batch":
        batch(a.jobs_json)
    else:
        logits(a.model_dir, a.tokens, a.out)


if __name__ == "__main__":
    main()
