// perpcomp info --model DIR: architecture, parameters, dtype, every linear with its shape.
#include <cstdio>
#include <iostream>

#include "core/error.h"
#include "core/strings.h"
#include "core/tensor_util.h"
#include "model/model.h"
#include "tools/cli.h"

namespace pc::cli {

int RunInfo(const std::vector<std::string>& args) {
  CommonOptions common;
  std::string model_dir;
  po::options_description desc("options");
  desc.add_options()("model", po::value<std::string>(&model_dir)->required(), "Hugging Face model folder");
  AddCommonOptions(desc, common);
  po::variables_map vm;
  if (!Parse("info", "--model DIR", desc, args, vm, nullptr, &common)) return 0;

  LoadOptions lo;
  lo.load_blocks = false;  // shapes come from the config and the checkpoint headers
  auto model = Model::Load(model_dir, lo);
  const ModelConfig& c = model->config();
  auto ck = Checkpoint::Open(model_dir);
  std::map<std::string, int> dtypes;
  for (const auto& n : ck->Names()) dtypes[StDTypeName(ck->Info(n).dtype)]++;
  std::string dtype_text;
  for (const auto& [k, v] : dtypes) dtype_text += (dtype_text.empty() ? "" : ", ") + k + " (" + std::to_string(v) + ")";
  std::printf("model:        %s\n", model_dir.c_str());
  std::printf("architecture: %s (%s, %s, %s)\n", c.model_type.c_str(),
              model->arch().norm == NormKind::kRmsNorm ? "RMSNorm" : "LayerNorm",
              model->arch().pos == PosKind::kRope ? "RoPE" : "learned positions",
              c.parallel_residual ? "parallel residual" : (c.pre_norm ? "pre-norm" : "post-norm"));
  std::printf("parameters:   %lld (%s on disk)\n", static_cast<long long>(model->ParameterCount()),
              HumanBytes(static_cast<double>(ck->TotalBytes())).c_str());
  std::printf("dtype:        %s\n", dtype_text.c_str());
  std::printf("layers %lld, hidden %lld, heads %lld (kv %lld, head_dim %lld), intermediate %lld, vocab %lld, "
              "context %lld, activation %s, tied head %s\n",
              (long long)c.layers, (long long)c.hidden, (long long)c.heads, (long long)c.kv_heads,
              (long long)c.head_dim, (long long)c.intermediate, (long long)c.vocab_size, (long long)c.max_pos,
              ActName(c.act), c.tie_embeddings ? "yes" : "no");
  if (c.parallel_scale != 1.0) std::printf("parallel scale: %g\n", c.parallel_scale);
  if (c.rope.type != RopeType::kDefault) {
    std::printf("rope scaling: %s, factor %g, theta %g%s\n", RopeTypeName(c.rope.type), c.rope.factor, c.rope_theta,
                c.rope.original_max_pos > 0 ? Str(", original context ", c.rope.original_max_pos).c_str() : "");
  }
  if (model->arch().qk_norm) std::printf("q/k norm:     per-head RMSNorm before RoPE\n");
  std::printf("\nlinear layers (out x in):\n");
  int64_t total = 0;
  for (int l = 0; l < model->num_layers(); ++l) {
    model->LoadBlock(l);
    for (const Linear& lin : model->block(l).linears) {
      std::printf("  %-52s %-5s %6lld x %-6lld%s\n", lin.name.c_str(), RoleName(lin.role),
                  (long long)lin.out_features(), (long long)lin.in_features(), lin.bias.defined() ? "  +bias" : "");
      ++total;
    }
    model->UnloadBlock(l);
  }
  Linear& head = model->lm_head();
  std::printf("  %-52s %-5s %6lld x %-6lld%s\n", head.name.c_str(), "head", (long long)head.out_features(),
              (long long)head.in_features(), c.tie_embeddings ? "  (tied to the embedding)" : "");
  std::printf("%lld linear layers in blocks, plus the head\n", static_cast<long long>(total));
  return 0;
}

}  // namespace pc::cli
