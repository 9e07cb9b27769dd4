// perpcomp corpus — the synthetic agreement corpus (train/corpus.h, docs/CORPUS.md).
#include <iostream>

#include "core/log.h"
#include "tools/cli.h"
#include "train/corpus.h"
#include "train/grammar.h"

namespace pc::cli {

int RunCorpus(const std::vector<std::string>& args) {
  CommonOptions common;
  corpus::CorpusOptions opts;
  std::string out;
  bool overwrite = false, print_grammar = false;
  po::options_description desc("options");
  desc.add_options()
    ("out", po::value<std::string>(&out), "output folder (required unless --print-grammar)")
    ("sentences", po::value<int64_t>(&opts.sentences)->default_value(opts.sentences), "sentences in train.txt")
    ("valid-sentences", po::value<int64_t>(&opts.valid_sentences)->default_value(opts.valid_sentences),
     "sentences in valid.txt (0: --sentences / 10, at least 1)")
    ("seed", po::value<int64_t>(&opts.seed)->default_value(opts.seed), "random seed (>= 0)")
    ("pairs-per-condition", po::value<int64_t>(&opts.pairs_per_condition)->default_value(opts.pairs_per_condition),
     "minimal pairs in each of pairs/agreement_{0,1,2}_attractor(s).jsonl")
    ("depth-samples", po::value<int64_t>(&opts.depth_samples)->default_value(opts.depth_samples),
     "sentences of valid.txt written to depths.jsonl with their parse depths")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --out folder")
    ("print-grammar", po::bool_switch(&print_grammar), "print the grammar's rules and word classes and exit");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("corpus", "--out DIR [--sentences N] [--seed S] [--pairs-per-condition K] [--overwrite]", desc, args,
             vm, nullptr, &common)) {
    return 0;
  }
  if (print_grammar) {
    std::cout << corpus::DescribeGrammar() << "\n" << corpus::DescribeLexicon();
    return 0;
  }
  PC_CHECK(!out.empty(), "--out is required: the folder to write the corpus to");
  nlohmann::ordered_json manifest = corpus::WriteCorpus(opts, out, overwrite);
  const auto& counts = manifest["counts"];
  log::Info("corpus", "train ", counts["train_sentences"].get<int64_t>(), " sentences, valid ",
            counts["valid_sentences"].get<int64_t>(), ", mean ", manifest["sentence_length"]["mean_words"].get<double>(),
            " words; 3 x ", opts.pairs_per_condition, " pairs; manifest ", out, "/corpus.json");
  return 0;
}

}  // namespace pc::cli
