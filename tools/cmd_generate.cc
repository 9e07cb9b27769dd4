// perpcomp generate --model DIR --prompt TEXT --max-new-tokens N --temperature T --seed S
#include <cstdio>
#include <iostream>

#include "calibration/windows.h"
#include "core/error.h"
#include "pipeline/run_io.h"
#include "tools/cli.h"
#include "tools/model_options.h"

namespace pc::cli {

int RunGenerate(const std::vector<std::string>& args) {
  CommonOptions common;
  pipeline::ModelOptions mo;
  std::string prompt;
  GenerateOptions go;
  bool echo = false, stop_at_eos = true;
  po::options_description desc("options");
  AddModelOptions(desc, mo);
  desc.add_options()
    ("prompt", po::value<std::string>(&prompt)->default_value(""), "prompt text (empty: start from BOS / end-of-text)")
    ("max-new-tokens", po::value<int>(&go.max_new_tokens)->default_value(128), "tokens to generate")
    ("temperature", po::value<double>(&go.temperature)->default_value(1.0), "sampling temperature (0: greedy)")
    ("top-p", po::value<double>(&go.top_p)->default_value(1.0), "nucleus sampling mass (1: off)")
    ("seed", po::value<uint64_t>(&go.seed)->default_value(0), "sampling seed")
    ("echo", po::bool_switch(&echo), "print the prompt before the generated text")
    ("ignore-eos", "keep generating after the end-of-sequence token");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("generate", "--model DIR [--prompt TEXT] [options]", desc, args, vm, nullptr, &common)) return 0;
  stop_at_eos = vm.count("ignore-eos") == 0;

  auto model = pipeline::LoadModel(mo);
  auto tok = pipeline::LoadModelTokenizer(mo.model);
  std::vector<int64_t> ids = TokenizeStream(*tok, prompt);
  if (ids.empty()) ids.push_back(ScoringStartId(*tok));  // no BOS: start after end-of-text
  if (stop_at_eos) go.stop_id = tok->eos_id();
  std::vector<int64_t> out = Generate(*model, ids, go);
  if (!out.empty() && out.back() == go.stop_id) out.pop_back();
  std::vector<int32_t> gen(out.begin(), out.end());
  std::string text = tok->Decode(gen, /*skip_special=*/true);
  if (echo) std::fputs(prompt.c_str(), stdout);
  std::fputs(text.c_str(), stdout);
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace pc::cli
