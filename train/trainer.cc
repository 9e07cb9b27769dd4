#include "train/trainer.h"

#include <torch/optim/adamw.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "calibration/calib_set.h"
#include "calibration/windows.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"
#include "core/text.h"
#include "metrics/perplexity.h"
#include "model/model.h"
#include "model/sizes.h"
#include "model/tokenizer/bpe_trainer.h"
#include "model/tokenizer/tokenizer.h"

namespace pc {

void TrainOptions::Validate() const {
  const std::vector<std::string> types = SupportedModelTypes();
  PC_CHECK(std::find(types.begin(), types.end(), arch) != types.end(), "--arch '", arch,
           "' is not supported for training (", Join(types, ", "), ")");
  PC_CHECK(!text.empty(), "--text: give at least one training file");
  PC_CHECK(layers >= 1 && hidden >= 8 && heads >= 1 && hidden % heads == 0, "--layers/--hidden/--heads: need ",
           "layers >= 1 and hidden a multiple of heads (got ", layers, ", ", hidden, ", ", heads, ")");
  PC_CHECK((hidden / heads) % 2 == 0, "--hidden / --heads must be even (rotary embeddings), got ", hidden / heads);
  PC_CHECK(kv_heads >= 0 && (kv_heads == 0 || heads % kv_heads == 0), "--kv-heads ", kv_heads,
           " must divide --heads ", heads);
  PC_CHECK(context >= 4, "--context must be at least 4, got ", context);
  PC_CHECK(steps >= 1 && batch >= 1, "--steps and --batch must be positive");
  PC_CHECK(warmup >= 0 && warmup <= steps, "--warmup must lie in 0..--steps");
  PC_CHECK(lr > 0 && min_lr_ratio >= 0 && min_lr_ratio <= 1, "--lr must be positive and --min-lr-ratio in [0, 1]");
  PC_CHECK(grad_clip >= 0 && weight_decay >= 0, "--grad-clip and --weight-decay must not be negative");
  PC_CHECK(std::isfinite(parallel_scale), "--parallel-scale must be finite");
  PC_CHECK(rotary_pct > 0 && rotary_pct <= 1, "--rotary-pct must lie in (0, 1], got ", rotary_pct);
  PC_CHECK(!out.empty(), "--out is required");
}

namespace {

std::vector<int64_t> Stream(const Tokenizer& tok, const std::vector<std::string>& docs, int64_t sep) {
  std::vector<int64_t> s;
  for (const auto& d : docs) {
    if (sep >= 0) s.push_back(sep);
    for (int32_t id : tok.Encode(d)) s.push_back(id);
  }
  return s;
}

std::vector<std::string> ReadDocs(const std::string& path, const TrainOptions& o) {
  std::vector<std::string> docs = ReadDocuments(path, o.text_field, "--text");
  if (!o.doc_per_line) return docs;
  std::vector<std::string> lines;
  for (const auto& d : docs) {
    for (auto& l : Split(d, '\n')) {
      if (!Trim(l).empty()) lines.push_back(l);
    }
  }
  return lines;
}

}  // namespace

// The config.json of a fresh model of o.arch, written with its table's keys (ConfigJsonFor).
nlohmann::json TrainConfigJson(const TrainOptions& o, int64_t vocab, int64_t bos, int64_t eos) {
  ModelConfig c;
  c.arch = &ArchSpecFor(o.arch);
  const ArchSpec& a = *c.arch;
  c.model_type = a.model_type;
  c.vocab_size = vocab;
  c.hidden = o.hidden;
  c.layers = o.layers;
  c.heads = o.heads;
  c.kv_heads = *a.keys.kv_heads && o.kv_heads > 0 ? o.kv_heads : o.heads;
  c.head_dim = o.hidden / o.heads;
  // A gated MLP of 8/3 × hidden (rounded up to 8) has the parameters of a plain one of 4 × hidden.
  c.intermediate = o.intermediate > 0 ? o.intermediate
                                      : (a.mlp == MlpKind::kGated ? (8 * o.hidden / 3 + 7) / 8 * 8 : 4 * o.hidden);
  c.max_pos = o.context;
  c.embed_dim = o.hidden;
  c.norm_eps = 1e-5;
  c.act = ParseAct(a.defaults.act, "--arch " + o.arch);
  c.tie_embeddings = false;
  c.rope_theta = 10000.0;
  c.rotary_dim = *a.keys.rotary_pct ? static_cast<int64_t>(c.head_dim * o.rotary_pct) : c.head_dim;
  c.parallel_residual = o.parallel_residual;
  c.bos_id = bos;
  c.eos_id = eos;
  c.parallel_scale = o.parallel_scale;
  nlohmann::json j = ConfigJsonFor(c);
  j["torch_dtype"] = "float32";
  return j;
}

TrainOptions DemoTrainOptions(const std::string& arch, const std::string& corpus, int64_t steps) {
  TrainOptions o;
  o.arch = arch;
  o.text = {fs::Join(corpus, "train.txt")};
  o.valid = fs::Join(corpus, "valid.txt");
  o.vocab_size = 600;
  o.layers = 4;
  o.hidden = 96;
  o.heads = 4;
  o.context = 64;
  o.steps = steps;
  o.batch = 32;
  o.lr = 5e-3;
  o.warmup = std::min<int64_t>(50, steps);
  o.eval_every = std::max<int64_t>(1, steps / 3);
  o.eval_windows = 64;
  o.rotary_pct = 1.0;
  o.parallel_residual = false;
  o.seed = 0;
  return o;
}

namespace {

// GPT-2 style initialisation: N(0, 0.02), residual output projections scaled by 1/sqrt(2 layers).
std::map<std::string, at::Tensor> InitTensors(const ModelConfig& c) {
  std::map<std::string, at::Tensor> t;
  const ArchSpec& a = *c.arch;
  const double std = 0.02, out_std = 0.02 / std::sqrt(2.0 * c.layers);
  auto normal = [](std::vector<int64_t> shape, double s) { return at::randn(shape) * s; };
  t[WeightOf(a.embed.hf)] = normal({c.vocab_size, c.hidden}, std);
  t[WeightOf(a.lm_head.hf)] = normal({c.vocab_size, c.hidden}, std);
  if (a.pos == PosKind::kLearned) t[WeightOf(a.pos_embed.hf)] = normal({c.max_pos + a.pos_offset, c.hidden}, std);
  const bool ln = a.norm == NormKind::kLayerNorm;
  auto norm = [&](const std::string& name) {
    t[name + ".weight"] = at::ones({c.hidden});
    if (ln) t[name + ".bias"] = at::zeros({c.hidden});
  };
  norm(a.final_norm.hf);
  for (int l = 0; l < c.layers; ++l) {
    norm(ExpandName(a.attn_norm.hf, l));
    norm(ExpandName(a.mlp_norm.hf, l));
    if (a.qk_norm) {
      t[WeightOf(ExpandName(a.q_norm.hf, l))] = at::ones({c.head_dim});
      t[WeightOf(ExpandName(a.k_norm.hf, l))] = at::ones({c.head_dim});
    }
    for (const auto& spec : a.linears) {
      const LinearDims dims = BlockLinearDims(c, spec.role);
      const std::vector<int64_t> shape{dims.out, dims.in};
      bool residual_out = spec.role == Role::kO || spec.role == Role::kDown;
      std::string name = ExpandName(spec.name.hf, l);
      at::Tensor w = normal(shape, residual_out ? out_std : std);
      t[name + ".weight"] = a.conv1d ? w.t().contiguous() : w;  // checkpoint layout
      if (ln || spec.bias == BiasRule::kRequired) t[name + ".bias"] = at::zeros({shape[0]});
    }
  }
  return t;
}

// Scales all gradients so that their joint L2 norm is at most max_norm.
void ClipGradNorm(const std::vector<at::Tensor>& params, double max_norm) {
  at::NoGradGuard no_grad;
  double total = 0;
  for (const auto& p : params) {
    if (p.grad().defined()) total += p.grad().pow(2).sum().item<double>();
  }
  total = std::sqrt(total);
  if (total > max_norm) {
    for (const auto& p : params) {
      if (p.grad().defined()) p.grad().mul_(max_norm / (total + 1e-6));
    }
  }
}

double EvalLoss(Model& model, const at::Tensor& windows) {
  at::NoGradGuard no_grad;
  return EvaluatePerplexity(model, windows, 16).mean_nll;
}

}  // namespace

TrainResult TrainModel(const TrainOptions& o) {
  o.Validate();
  fs::CheckOutputPath(o.out, o.overwrite, "--out");
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> docs;
  for (const auto& path : o.text) {
    auto d = ReadDocs(path, o);
    docs.insert(docs.end(), d.begin(), d.end());
  }
  PC_CHECK(!docs.empty(), "--text: no documents in ", Join(o.text, ", "));
  std::unique_ptr<Tokenizer> tok;
  if (!o.tokenizer.empty()) {
    tok = LoadTokenizer(o.tokenizer);
  } else {
    BpeTrainerOptions bo;
    bo.vocab_size = static_cast<int32_t>(o.vocab_size);
    bo.Validate();
    ByteLevelBpeTrainer trainer(bo);
    for (const auto& d : docs) trainer.AddText(d);
    BpeTrainResult br = trainer.Train();
    if (br.stopped_early) {
      log::Warn("train", "the BPE stopped at ", br.tokenizer->vocab_size(), " tokens: no pair occurs twice more");
    }
    tok = std::move(br.tokenizer);
  }
  const int64_t sep = tok->eos_id() >= 0 ? tok->eos_id() : tok->bos_id();
  std::vector<int64_t> stream = Stream(*tok, docs, sep);
  std::vector<int64_t> valid;
  if (!o.valid.empty()) {
    valid = Stream(*tok, ReadDocs(o.valid, o), sep);
  } else {
    size_t cut = stream.size() - stream.size() / 20;
    valid.assign(stream.begin() + cut, stream.end());
    stream.resize(cut);
  }
  const int64_t T = o.context;
  PC_CHECK(static_cast<int64_t>(stream.size()) > T + 1, "--context ", T, " is longer than the training data (",
           stream.size(), " tokens)");
  PC_CHECK(static_cast<int64_t>(valid.size()) >= T, "held-out text has ", valid.size(),
           " tokens, fewer than one window of --context ", T);

  at::manual_seed(o.seed);
  ModelConfig config = ParseModelConfig(TrainConfigJson(o, tok->vocab_size(), tok->bos_id() >= 0 ? tok->bos_id() : sep, sep),
                                        "training config");
  auto model = Model::FromTensors(config, InitTensors(config));
  std::vector<at::Tensor> params = model->Parameters();
  std::vector<at::Tensor> decay, no_decay;
  for (auto& p : params) {
    p.requires_grad_(true);
    (p.dim() >= 2 ? decay : no_decay).push_back(p);
  }
  torch::optim::AdamW opt({torch::optim::OptimizerParamGroup(decay, std::make_unique<torch::optim::AdamWOptions>(
                               torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).weight_decay(o.weight_decay))),
                           torch::optim::OptimizerParamGroup(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                               torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).weight_decay(0.0)))},
                          torch::optim::AdamWOptions(o.lr));
  TokenWindows valid_windows;
  valid_windows.tokens = at::from_blob(valid.data(), {static_cast<int64_t>(valid.size()) / T, T}, at::kLong)
                             .narrow(0, 0, std::min<int64_t>(o.eval_windows, static_cast<int64_t>(valid.size()) / T))
                             .clone();
  // Unigram baseline: the training token distribution (add-one smoothed) on the held-out tokens.
  std::vector<double> counts(tok->vocab_size(), 1.0);
  for (int64_t id : stream) counts[id] += 1;
  at::Tensor c = at::tensor(counts, at::kDouble);
  at::Tensor logp = (c / c.sum()).log();
  at::Tensor vt = valid_windows.tokens.narrow(1, 1, T - 1).reshape({-1});
  TrainResult r;
  r.unigram_valid_loss = -logp.index_select(0, vt).mean().item<double>();
  r.parameters = model->ParameterCount();
  r.log = nlohmann::json::array();

  std::mt19937_64 rng(o.seed + 1);
  const uint64_t starts = stream.size() - T;
  std::optional<Progress> progress;
  if (o.show_progress) progress.emplace("train", o.steps, "steps");
  double ema = 0;
  for (int64_t step = 1; step <= o.steps; ++step) {
    double lr = o.lr;
    if (step <= o.warmup && o.warmup > 0) {
      lr = o.lr * static_cast<double>(step) / o.warmup;
    } else {
      double progress_frac = o.steps > o.warmup ? static_cast<double>(step - o.warmup) / (o.steps - o.warmup) : 1.0;
      lr = o.lr * (o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + std::cos(M_PI * progress_frac)));
    }
    for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    at::Tensor batch = at::empty({o.batch, T}, at::kLong);
    int64_t* b = batch.data_ptr<int64_t>();
    for (int64_t i = 0; i < o.batch; ++i) {
      uint64_t s = UniformBelow(starts, rng);
      std::copy(stream.begin() + s, stream.begin() + s + T, b + i * T);
    }
    opt.zero_grad();
    at::Tensor logits = model->Forward(batch);
    at::Tensor lp = at::log_softmax(logits.narrow(1, 0, T - 1), -1);
    at::Tensor loss = -lp.gather(-1, batch.narrow(1, 1, T - 1).unsqueeze(-1)).mean();
    loss.backward();
    if (o.grad_clip > 0) ClipGradNorm(params, o.grad_clip);
    opt.step();
    double l = loss.item<double>();
    PC_CHECK(std::isfinite(l), "train: the loss became ", l, " at step ", step, " (try a lower --lr)");
    ema = step == 1 ? l : 0.95 * ema + 0.05 * l;
    r.tokens_seen += o.batch * T;
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (progress) progress->Add(1, Str("loss ", FormatDouble(ema, 4), " lr ", FormatDouble(lr, 3), " ",
                        static_cast<int64_t>(r.tokens_seen / std::max(secs, 1e-9)), " tok/s"));
    if (step % o.eval_every == 0 || step == o.steps) {
      double vl = EvalLoss(*model, valid_windows.tokens);
      r.log.push_back({{"step", step}, {"lr", lr}, {"train_loss", ema}, {"valid_loss", vl},
                       {"tokens_per_s", r.tokens_seen / std::max(secs, 1e-9)}, {"seconds", secs}});
      std::string line = Str(o.arch, " step ", step, "/", o.steps, ": train loss ", FormatDouble(ema, 4),
                             ", held-out loss ", FormatDouble(vl, 4), ", ",
                             static_cast<int64_t>(r.tokens_seen / std::max(secs, 1e-9)), " tokens/s");
      if (!progress) log::Info("train", line);
      else if (!Progress::Enabled()) log::Verbose("train", line);
      r.final_valid_loss = vl;
    }
  }
  if (progress) progress->Finish();
  r.final_train_loss = ema;
  for (auto& p : params) p.requires_grad_(false);
  SaveOptions so;
  so.overwrite = o.overwrite;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json summary = {{"arch", o.arch}, {"parameters", r.parameters}, {"steps", o.steps}, {"batch", o.batch},
                            {"context", o.context}, {"lr", o.lr}, {"seed", o.seed}, {"parallel_scale", o.parallel_scale}, {"rotary_pct", o.rotary_pct},
                            {"parallel_residual", o.parallel_residual},
                            {"final_valid_loss", r.final_valid_loss}, {"unigram_valid_loss", r.unigram_valid_loss},
                            {"tokens_seen", r.tokens_seen}, {"seconds", r.seconds}, {"log", r.log},
                            {"text", o.text}, {"vocab_size", tok->vocab_size()}};
  model->Save(o.out, so, [&](const std::string& dir) {
    SaveTokenizerFiles(*tok, dir);
    fs::WriteFileAtomic(fs::Join(dir, "train_log.json"), summary.dump(2) + "\n");
  });
  return r;
}

}  // namespace pc
