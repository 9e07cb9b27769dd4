// perpcomp convert --from llama2c --weights W.bin --tokenizer T.bin --out DIR
#include <iostream>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "model/llama2c.h"
#include "model/tokenizer/tokenizer.h"
#include "tools/cli.h"

namespace pc::cli {

int RunConvert(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string from, weights, tokenizer, out;
  bool overwrite = false;
  po::options_description desc("options");
  desc.add_options()
    ("from", po::value<std::string>(&from)->default_value("llama2c"), "source format (supported: llama2c)")
    ("weights", po::value<std::string>(&weights)->required(), "llama2.c checkpoint (.bin)")
    ("tokenizer", po::value<std::string>(&tokenizer)->required(), "llama2.c tokenizer (.bin)")
    ("out", po::value<std::string>(&out)->required(), "output Hugging Face folder")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --out");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("convert", "--from llama2c --weights W.bin --tokenizer T.bin --out DIR", desc, args, vm, nullptr,
             &common)) {
    return 0;
  }
  PC_CHECK(from == "llama2c", "--from '", from, "' is not supported (supported: llama2c)");
  fs::CheckOutputPath(out, overwrite, "--out", fs::OutputKind::kFolder);
  fs::CheckNotAnInput(out, "--out", {{"--weights", weights}, {"--tokenizer", tokenizer}});
  auto model = ConvertLlama2c(weights);
  auto tok = TokenizerFromLlama2c(tokenizer, static_cast<int32_t>(model->config().vocab_size));
  PC_CHECK(tok->vocab_size() == model->config().vocab_size, "--tokenizer '", tokenizer, "' has ", tok->vocab_size(),
           " tokens but the model's vocabulary is ", model->config().vocab_size);
  SaveOptions so;
  so.overwrite = overwrite;
  model->Save(out, so, [&](const std::string& dir) { SaveTokenizerFiles(*tok, dir); });
  log::Info("convert", "wrote ", out, " (", model->config().model_type, ", ", model->ParameterCount(),
            " parameters, vocabulary ", tok->vocab_size(), ")");
  return 0;
}

}  // namespace pc::cli
