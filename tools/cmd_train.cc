// perpcomp train --arch MODEL_TYPE --text FILE... --out DIR
#include <cstdio>

#include "core/error.h"
#include "tools/cli.h"
#include "train/trainer.h"

namespace pc::cli {

int RunTrain(const std::vector<std::string>& args) {
  CommonOptions common;
  TrainOptions o;
  po::options_description desc("options");
  desc.add_options()
    ("arch", po::value<std::string>(&o.arch)->default_value(o.arch), "a model_type of the architecture table: gpt_neox (LayerNorm), llama (RMSNorm), mistral, qwen2, qwen3, gpt2, opt")
    ("text", po::value<std::vector<std::string>>(&o.text)->multitoken(), "training text files (plain or *.jsonl)")
    ("valid", po::value<std::string>(&o.valid), "held-out text (default: the last 5% of the training tokens)")
    ("text-field", po::value<std::string>(&o.text_field)->default_value(o.text_field), "JSON-lines text field")
    ("doc-per-line", po::bool_switch(&o.doc_per_line), "every non-empty line is a document (separated by end-of-text)")
    ("tokenizer", po::value<std::string>(&o.tokenizer), "use this tokenizer.json / folder instead of training a BPE")
    ("vocab-size", po::value<int64_t>(&o.vocab_size)->default_value(o.vocab_size), "BPE vocabulary (>= 257)")
    ("layers", po::value<int64_t>(&o.layers)->default_value(o.layers), "decoder layers")
    ("hidden", po::value<int64_t>(&o.hidden)->default_value(o.hidden), "hidden size")
    ("heads", po::value<int64_t>(&o.heads)->default_value(o.heads), "attention heads")
    ("kv-heads", po::value<int64_t>(&o.kv_heads)->default_value(0), "key/value heads (llama; 0: = heads)")
    ("intermediate", po::value<int64_t>(&o.intermediate)->default_value(0), "MLP width (0: 4x hidden, llama 8/3x)")
    ("context", po::value<int64_t>(&o.context)->default_value(o.context), "context length (training windows)")
    ("steps", po::value<int64_t>(&o.steps)->default_value(o.steps), "optimizer steps")
    ("batch", po::value<int64_t>(&o.batch)->default_value(o.batch), "windows per step")
    ("lr", po::value<double>(&o.lr)->default_value(o.lr), "peak learning rate")
    ("min-lr-ratio", po::value<double>(&o.min_lr_ratio)->default_value(o.min_lr_ratio), "final lr / peak lr (cosine)")
    ("warmup", po::value<int64_t>(&o.warmup)->default_value(o.warmup), "linear warmup steps")
    ("weight-decay", po::value<double>(&o.weight_decay)->default_value(o.weight_decay), "AdamW weight decay (matrices)")
    ("grad-clip", po::value<double>(&o.grad_clip)->default_value(o.grad_clip), "gradient norm clip (0: off)")
    ("eval-every", po::value<int64_t>(&o.eval_every)->default_value(o.eval_every), "held-out loss every N steps")
    ("parallel-scale", po::value<double>(&o.parallel_scale)->default_value(1.0),
     "scale A of the parallel part of every update: A*D_par + D_perp (1: plain)")
    ("rotary-pct", po::value<double>(&o.rotary_pct)->default_value(o.rotary_pct), "gpt_neox: rotated share of each head (Pythia 0.25)")
    ("parallel-residual", po::bool_switch(&o.parallel_residual), "gpt_neox: attention and MLP in parallel (Pythia's form)")
    ("seed", po::value<uint64_t>(&o.seed)->default_value(0), "seed (initialisation and data order)")
    ("out", po::value<std::string>(&o.out), "output Hugging Face folder")
    ("overwrite", po::bool_switch(&o.overwrite), "replace an existing --out");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("train", "--arch MODEL_TYPE --text FILE... --out DIR [options]", desc, args, vm, nullptr, &common)) {
    return 0;
  }
  TrainResult r = TrainModel(o);
  std::printf("wrote %s: %lld parameters, %lld tokens in %.1f s; held-out loss %.4f (ppl %.2f), unigram %.4f (ppl %.2f)\n",
              o.out.c_str(), (long long)r.parameters, (long long)r.tokens_seen, r.seconds, r.final_valid_loss,
              std::exp(r.final_valid_loss), r.unigram_valid_loss, std::exp(r.unigram_valid_loss));
  return 0;
}

}  // namespace pc::cli
