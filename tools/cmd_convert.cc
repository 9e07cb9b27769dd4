// perpcomp convert --from llama2c --weights W.bin --tokenizer T.bin --out DIR
// perpcomp convert --from gguf --weights FILE.gguf --out DIR [--f32]
#include <iostream>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "model/gguf_convert.h"
#include "model/llama2c.h"
#include "model/tokenizer/tokenizer.h"
#include "tools/cli.h"

namespace pc::cli {

int RunConvert(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string from, weights, tokenizer, out;
  bool overwrite = false, f32 = false;
  po::options_description desc("options");
  desc.add_options()
    ("from", po::value<std::string>(&from)->default_value("llama2c"), "source format: llama2c, gguf")
    ("weights", po::value<std::string>(&weights)->required(), "llama2.c checkpoint (.bin) or GGUF file (.gguf)")
    ("tokenizer", po::value<std::string>(&tokenizer), "llama2.c tokenizer (.bin); a GGUF file carries its own")
    ("out", po::value<std::string>(&out)->required(), "output Hugging Face folder")
    ("f32", po::bool_switch(&f32), "gguf: write F16/BF16 tensors as f32 too (quantized ones always are)")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --out");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("convert",
             "--from llama2c --weights W.bin --tokenizer T.bin --out DIR | --from gguf --weights FILE.gguf --out DIR",
             desc, args, vm, nullptr, &common)) {
    return 0;
  }
  PC_CHECK(from == "llama2c" || from == "gguf", "--from '", from, "' is not supported (supported: llama2c, gguf)");
  if (from == "gguf") {
    fs::CheckNotAnInput(out, "--out", {{"--weights", weights}});
    PC_CHECK(tokenizer.empty(), "--tokenizer is for --from llama2c; a GGUF file carries its own tokenizer");
    GgufConvertOptions options;
    options.f32 = f32;
    ConvertGgufToFolder(weights, out, options, overwrite);
    return 0;
  }
  PC_CHECK(!tokenizer.empty(), "--from llama2c needs --tokenizer T.bin");
  PC_CHECK(!f32, "--f32 is for --from gguf (llama2.c checkpoints are f32)");
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
