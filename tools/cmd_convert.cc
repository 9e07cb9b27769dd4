// perpcomp convert --from llama2c --weights W.bin --tokenizer T.bin --out DIR
// perpcomp convert --from gguf --weights FILE.gguf --out DIR [--f32]
// perpcomp convert --to gguf --model DIR --out FILE.gguf [--outtype f32|f16|bf16]
#include <iostream>

#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "model/gguf_convert.h"
#include "model/gguf_export.h"
#include "model/llama2c.h"
#include "model/tokenizer/tokenizer.h"
#include "tools/cli.h"

namespace pc::cli {

int RunConvert(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string from, to, weights, tokenizer, out, model_dir, outtype;
  bool overwrite = false, f32 = false;
  po::options_description desc("options");
  desc.add_options()
    ("from", po::value<std::string>(&from)->default_value("llama2c"), "source format: llama2c, gguf")
    ("to", po::value<std::string>(&to)->default_value("hf"), "output format: hf (a folder), gguf (a llama.cpp file)")
    ("model", po::value<std::string>(&model_dir), "--to gguf: the Hugging Face folder to write")
    ("outtype", po::value<std::string>(&outtype)->default_value("f16"), "--to gguf: f32 | f16 | bf16 for 2-D tensors (1-D: f32)")
    ("weights", po::value<std::string>(&weights), "llama2.c checkpoint (.bin) or GGUF file (.gguf)")
    ("tokenizer", po::value<std::string>(&tokenizer), "llama2.c tokenizer (.bin); a GGUF file carries its own")
    ("out", po::value<std::string>(&out)->required(), "output Hugging Face folder (--to gguf: the .gguf file)")
    ("f32", po::bool_switch(&f32), "gguf: write F16/BF16 tensors as f32 too (quantized ones always are)")
    ("overwrite", po::bool_switch(&overwrite), "replace an existing --out");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("convert",
             "--from llama2c --weights W.bin --tokenizer T.bin --out DIR | --from gguf --weights FILE.gguf --out DIR | "
             "--to gguf --model DIR --out FILE.gguf [--outtype f16]",
             desc, args, vm, nullptr, &common)) {
    return 0;
  }
  PC_CHECK(to == "hf" || to == "gguf", "--to '", to, "' is not supported (supported: hf, gguf)");
  if (to == "gguf") {
    PC_CHECK(!model_dir.empty(), "--to gguf needs --model DIR (a Hugging Face folder)");
    PC_CHECK(weights.empty() && tokenizer.empty() && vm["from"].defaulted(), "--to gguf reads --model DIR; ",
             "--from/--weights/--tokenizer are for converting into a folder");
    const GgmlType type = ParseGgufOuttype(outtype, "--outtype");
    fs::CheckOutputPath(out, overwrite, "--out", fs::OutputKind::kFile);
    fs::CheckNotAnInput(out, "--out", {{"--model", model_dir}});
    auto model = Model::Load(model_dir);
    GgufWriteOptions options;
    options.outtype = type;
    options.overwrite = overwrite;
    WriteGguf(*model, out, options);
    return 0;
  }
  PC_CHECK(model_dir.empty() && vm["outtype"].defaulted(), "--model and --outtype are for --to gguf");
  PC_CHECK(!weights.empty(), "convert --from ", from, " needs --weights");
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
