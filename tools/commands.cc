#include "tools/commands.h"

namespace pc::cli {

// One line per verb, in the order `perpcomp --help` lists them.
#define PC_DECLARE_COMMAND(fn) int fn(const std::vector<std::string>& args);
PC_DECLARE_COMMAND(RunVersion)
PC_DECLARE_COMMAND(RunCorpus)
PC_DECLARE_COMMAND(RunInfo)
PC_DECLARE_COMMAND(RunConvert)
PC_DECLARE_COMMAND(RunGenerate)
PC_DECLARE_COMMAND(RunEval)
PC_DECLARE_COMMAND(RunMeasure)
PC_DECLARE_COMMAND(RunCompressCmd)
PC_DECLARE_COMMAND(RunTrain)
#undef PC_DECLARE_COMMAND

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"info", "architecture, parameters, dtype and every linear layer of a model", RunInfo},
      {"convert", "convert a llama2.c checkpoint and tokenizer into a Hugging Face folder", RunConvert},
      {"generate", "generate text with a KV cache (temperature 0: greedy)", RunGenerate},
      {"eval", "perplexity on a text (and, with --reference, KL and agreement)", RunEval},
      {"measure", "directional (iso/parallel/perpendicular) error of a compressed model at every site, into HDF5", RunMeasure},
      {"compress", "compress a model with a recipe and calibration data (--dry-run prints the plan)", RunCompressCmd},
      {"train", "train a small gpt_neox or llama model from scratch (BPE tokenizer included)", RunTrain},
      {"corpus", "generate the synthetic agreement corpus (train/valid text, minimal pairs, depths)", RunCorpus},
      {"version", "print the version and the libraries in use", RunVersion},
  };
  return commands;
}

}  // namespace pc::cli
