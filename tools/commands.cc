#include "tools/commands.h"

namespace pc::cli {

// The entry points of the verbs (tools/cmd_*.cc); `perpcomp --help` lists the verbs in the order of
// Commands() below, not of these declarations.
#define PC_DECLARE_COMMAND(fn) int fn(const std::vector<std::string>& args);
PC_DECLARE_COMMAND(RunVersion)
PC_DECLARE_COMMAND(RunCorpus)
PC_DECLARE_COMMAND(RunInfo)
PC_DECLARE_COMMAND(RunConvert)
PC_DECLARE_COMMAND(RunGenerate)
PC_DECLARE_COMMAND(RunEval)
PC_DECLARE_COMMAND(RunKld)
PC_DECLARE_COMMAND(RunMeasure)
PC_DECLARE_COMMAND(RunCompressCmd)
PC_DECLARE_COMMAND(RunSensitivityCmd)
PC_DECLARE_COMMAND(RunAllocate)
PC_DECLARE_COMMAND(RunTrain)
PC_DECLARE_COMMAND(RunSweepCmd)
PC_DECLARE_COMMAND(RunMerge)
PC_DECLARE_COMMAND(RunDemo)
PC_DECLARE_COMMAND(RunRank)
PC_DECLARE_COMMAND(RunProbe)
#undef PC_DECLARE_COMMAND

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"demo", "the main job on an embedded default: corpus, two trained models, a sweep, a report", RunDemo},
      {"info", "architecture, parameters, dtype and every linear layer of a model", RunInfo},
      {"convert", "convert a llama2.c checkpoint and tokenizer into a Hugging Face folder", RunConvert},
      {"generate", "generate text with a KV cache (temperature 0: greedy)", RunGenerate},
      {"eval", "perplexity on a text (and, with --reference, KL and agreement)", RunEval},
      {"kld", "save a base model's next-token distributions (--save-base), then KL, delta p, top-token and pair flips of any model against them (--base)", RunKld},
      {"measure", "directional (iso/parallel/perpendicular) error of a compressed model at every site, into HDF5", RunMeasure},
      {"compress", "compress a model with a recipe and calibration data (--dry-run prints the plan)", RunCompressCmd},
      {"sensitivity", "the measured cost of every candidate setting for every block linear, compressed alone (iso/parallel/perpendicular, local and accumulated, KL), into HDF5", RunSensitivityCmd},
      {"allocate", "the per-linear settings minimising a predictor's damage under a bits or sparsity budget: a recipe, llm-compressor and llama-quantize exports", RunAllocate},
      {"sweep", "compress, measure and evaluate every run of a sweep file (resumable, sharded) into one HDF5 file", RunSweepCmd},
      {"merge", "join sweep results files (shards) made under the same conventions", RunMerge},
      {"train", "train a small gpt_neox or llama model from scratch (BPE tokenizer included)", RunTrain},
      {"rank", "correlate every error predictor with downstream loss across a sweep's runs; HTML report", RunRank},
      {"probe", "the seeds' experiments: decompose, scale (parallel/perpendicular) and perturb (magnitude vs direction)",
       RunProbe},
      {"corpus", "generate the synthetic agreement corpus (train/valid text, minimal pairs, depths)", RunCorpus},
      {"version", "print the version and the libraries in use", RunVersion},
  };
  return commands;
}

}  // namespace pc::cli
