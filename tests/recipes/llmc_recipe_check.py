"""Usage: llmc_recipe_check.py RECIPE.yaml [MODEL_DIR [OUT_DIR]]

Reads an llm-compressor recipe exported by `perpcomp allocate --llm-compressor` with
llm-compressor's own parser (Recipe.create_instance) and, when a model folder is given, checks
that every target regex of the recipe matches a Linear module of the model built by transformers
from its config.json (no weights needed); with OUT_DIR, runs llm-compressor's oneshot with the
recipe on the model (data-free: weight-only quantization) and saves it there, recording which
linears came out quantized with how many bits. Prints one JSON line. Reference environment only."""
import json
import re
import sys

from llmcompressor.recipe import Recipe


def main():
    path = sys.argv[1]
    recipe = Recipe.create_instance(path)
    out = {"modifiers": [type(m).__name__ for m in recipe.modifiers]}
    targets = []
    for m in recipe.modifiers:
        groups = getattr(m, "config_groups", None) or {}
        for g in groups.values():
            targets += list(g.targets)
        t = getattr(m, "targets", None)
        if isinstance(t, list) and not groups:
            targets += t
    out["targets"] = len(targets)
    if len(sys.argv) > 2:
        import torch
        import transformers
        config = transformers.AutoConfig.from_pretrained(sys.argv[2])
        with torch.device("meta"):
            model = transformers.AutoModelForCausalLM.from_config(config)
        linears = [n for n, mod in model.named_modules() if isinstance(mod, torch.nn.Linear)]
        unmatched = [t for t in targets if t.startswith("re:") and not any(re.match(t[3:], n) for n in linears)]
        out["unmatched"] = unmatched
        out["linears"] = len(linears)
    if len(sys.argv) > 3:
        from llmcompressor import oneshot
        model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[2], torch_dtype=torch.float32)
        oneshot(model=model, recipe=path)
        bits = {}
        for n, mod in model.named_modules():
            scheme = getattr(mod, "quantization_scheme", None)
            if scheme is not None and scheme.weights is not None:
                bits[n] = scheme.weights.num_bits
        model.save_pretrained(sys.argv[3], save_compressed=False)
        out["quantized"] = bits
    print(json.dumps(out))


if __name__ == "__main__":
    main()
