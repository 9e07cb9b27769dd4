#include "pipeline/sensitivity.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "compress/quant_params.h"
#include "core/directional.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"
#include "model/sizes.h"
#include "model/tokenizer/tokenizer.h"
#include "recipes/candidates.h"
#include "store/file.h"

namespace pc::pipeline {

using recipes::CandidateSpec;
using recipes::CandidatesSpec;
using recipes::GroupSpec;
using recipes::ParseCandidatesFile;
using recipes::ToScalar;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kDenseBits = 16;  // a weight left as it is (fp16/bf16 storage)

// A candidate resolved against the registry: its method instance, or none (dense).
struct Candidate {
  std::string name, method, family;
  std::unique_ptr<Method> instance;  // null: dense
  nlohmann::json params;
};

// Block linears that share one setting: one linear, or a group's members in one block.
struct Unit {
  std::string name;  // the linear's name, or "model.layers.3:<group>"
  int layer = 0;
  std::vector<int> members;  // indices into Block::linears
  std::vector<std::string> member_names;
  std::vector<int64_t> member_in;  // each member's input features
  int64_t params = 0;
};

// Stored bits per weight of a quantizing setting on a linear with `in` inputs: the nominal bits
// plus, per group of g weights of a row, one 16-bit scale and (zero_point) one b-bit zero:
//   bits + (16 + (zero_point ? bits : 0)) / g,   g = group_size, or `in` for per-channel (-1).
// A setting without `bits`, or with bits 0 (sparsegpt: prune only), stores 16 bits per weight
// (pruning keeps dense storage).
double BitsPerWeight(const MethodParams& p, int64_t in) {
  if (!p.Has("bits") || p.Int("bits") <= 0) return kDenseBits;
  const double b = static_cast<double>(p.Int("bits"));
  const int64_t g0 = p.Has("group_size") ? p.Int("group_size") : -1;
  const double g = static_cast<double>(g0 <= 0 || g0 > in ? in : g0);
  const bool zp = p.Has("zero_point") && p.Bool("zero_point");
  return b + (16.0 + (zp ? b : 0.0)) / g;
}

std::vector<Candidate> ResolveCandidates(const CandidatesSpec& spec, const MethodRegistry& registry) {
  std::vector<Candidate> out;
  for (const CandidateSpec& c : spec.candidates) {
    Candidate r;
    r.name = c.name.value;
    r.method = c.method.value;
    if (c.dense()) {
      r.family = "dense";
      r.params = nlohmann::json::object();
    } else {
      const std::string where = c.method.loc.Str();
      const MethodInfo& info = registry.Get(c.method.value, where);
      std::map<std::string, ParamScalar> given;
      std::map<std::string, std::string> locs;
      for (const auto& [k, v] : c.params) {
        given[k] = ToScalar(v, "'" + k + "'");
        locs[k] = v.loc().Str();
      }
      MethodParams params = ResolveParams(info.name, info.params, given, locs, where);
      r.family = info.family;
      r.params = params.ToJson();
      r.instance = info.create(params, where);
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<Unit> BuildUnits(const CandidatesSpec& spec, const Model& model) {
  std::vector<Unit> units;
  const ArchSpec& arch = model.arch();
  for (int layer = 0; layer < model.num_layers(); ++layer) {
    std::map<int, size_t> group_unit;  // group index -> unit index
    for (size_t i = 0; i < arch.linears.size(); ++i) {
      const std::string name = ExpandName(arch.linears[i].name.hf, layer);
      const int64_t n = BlockLinearDims(model.config(), arch.linears[i].role).in *
                        BlockLinearDims(model.config(), arch.linears[i].role).out;
      int group = -1;
      for (size_t g = 0; g < spec.groups.size() && group < 0; ++g) {
        if (spec.groups[g].match.Matches(name)) group = static_cast<int>(g);
      }
      if (group >= 0 && group_unit.count(group)) {
        Unit& u = units[group_unit[group]];
        u.members.push_back(static_cast<int>(i));
        u.member_names.push_back(name);
        u.member_in.push_back(BlockLinearDims(model.config(), arch.linears[i].role).in);
        u.params += n;
        continue;
      }
      Unit u;
      u.layer = layer;
      u.members = {static_cast<int>(i)};
      u.member_names = {name};
      u.member_in = {BlockLinearDims(model.config(), arch.linears[i].role).in};
      u.params = n;
      u.name = name;
      if (group >= 0) {
        const std::string key = Str(".", layer, ".");
        u.name = Str(name.substr(0, name.find(key) + key.size() - 1), ":", spec.groups[group].name.value);
        group_unit[group] = units.size();
      }
      units.push_back(std::move(u));
    }
  }
  // A group that matches no linear is a typo in its pattern.
  for (const GroupSpec& g : spec.groups) {
    bool any = false;
    for (const Unit& u : units) {
      for (const auto& n : u.member_names) any = any || g.match.Matches(n);
    }
    PC_CHECK(any, g.match.loc().Str(), ": group '", g.name.value, "' matches no linear of this ",
             model.config().model_type, " model (linear names look like '", units.front().member_names.front(), "')");
  }
  return units;
}

// A block's tensors, to undo a candidate (methods change linears in place; AWQ also the norms).
struct BlockSnapshot {
  std::vector<at::Tensor> w, b;
  at::Tensor norms[8];
  at::Tensor act_scales;
  static at::Tensor Clone(const at::Tensor& t) { return t.defined() ? t.clone() : at::Tensor(); }
  explicit BlockSnapshot(const Block& k) {
    for (const Linear& l : k.linears) {
      w.push_back(l.weight.clone());
      b.push_back(Clone(l.bias));
    }
    const Norm* n[4] = {&k.attn_norm, &k.mlp_norm, &k.q_norm, &k.k_norm};
    for (int i = 0; i < 4; ++i) {
      norms[2 * i] = Clone(n[i]->weight);
      norms[2 * i + 1] = Clone(n[i]->bias);
    }
    act_scales = Clone(k.act_scales);
  }
  void Restore(Block& k) const {
    for (size_t i = 0; i < k.linears.size(); ++i) {
      k.linears[i].weight = w[i].clone();
      k.linears[i].bias = Clone(b[i]);
    }
    Norm* n[4] = {&k.attn_norm, &k.mlp_norm, &k.q_norm, &k.k_norm};
    for (int i = 0; i < 4; ++i) {
      n[i]->weight = Clone(norms[2 * i]);
      n[i]->bias = Clone(norms[2 * i + 1]);
    }
    k.act_scales = Clone(act_scales);
  }
};

// Σ iso, ∥, ⊥ over valid tokens and Σ‖y‖², for the error ŷ − y against y (frame "self").
struct SplitSums {
  double iso = 0, par = 0, perp = 0, dir = 0;
  int64_t tokens = 0;
  void Add(const at::Tensor& ref, const at::Tensor& out) {
    const DirectionalSplit s = SplitAgainstSelf(ref, out);
    const at::Tensor v = s.valid.to(at::kDouble);
    iso += (s.iso * v).sum().item<double>();
    par += (s.par * v).sum().item<double>();
    perp += (s.perp * v).sum().item<double>();
    dir += (s.dir_sq * v).sum().item<double>();
    tokens += s.valid.sum().item<int64_t>();
  }
  double Rel(double x) const { return dir > 0 ? x / dir : kNaN; }
};

// Mean over tokens of 1 − cos(x, y) between a block's input and output (the reference's).
double OneMinusCos(const at::Tensor& x, const at::Tensor& y) {
  const at::Tensor a = x.reshape({-1, x.size(-1)}).to(at::kDouble), b = y.reshape({-1, y.size(-1)}).to(at::kDouble);
  const at::Tensor cos = (a * b).sum(1) / (a.norm(2, 1) * b.norm(2, 1)).clamp_min(1e-300);
  return (1 - cos).mean().item<double>();
}

// The reference's next-token log-probabilities on the E measurement windows, for --kl: one
// (n, L, V) float tensor per head batch, computed once when they fit in `cache_bytes`; otherwise
// empty and recomputed beside every row's head forward. Either way SumKl adds the same terms.
struct ReferenceLogProbs {
  std::vector<at::Tensor> batches;
};

// (n, L, V) float32 next-token log-probabilities of final states h[s, s + n).
at::Tensor HeadLogProbs(Model& model, const at::Tensor& h, int64_t s, int64_t n) {
  ForwardContext c = model.MakeContext(h.size(1));
  return at::log_softmax(model.Head(h.narrow(0, s, n), c).to(at::kFloat), -1);
}

ReferenceLogProbs CacheReferenceLogProbs(Model& model, const at::Tensor& h_ref, int64_t batch, double cache_bytes,
                                         double* head_forwards, double e_frac) {
  ReferenceLogProbs r;
  const int64_t E = h_ref.size(0), L = h_ref.size(1);
  const double bytes = static_cast<double>(E) * static_cast<double>(L) * static_cast<double>(model.config().vocab_size) * 4.0;
  if (bytes > cache_bytes) {
    log::Info("sensitivity", "the reference's log-probabilities (", HumanBytes(bytes), ") exceed the KL cache of ",
              HumanBytes(cache_bytes), "; they are recomputed for every row");
    return r;
  }
  for (int64_t s = 0; s < E; s += batch) r.batches.push_back(HeadLogProbs(model, h_ref, s, std::min(batch, E - s)));
  *head_forwards += e_frac;
  return r;
}

// Σ over tokens of KL(p_ref ‖ p) from final states h_ref, h (E, L, d), head in batches; the
// reference's side from `cached` when it holds them. Adds the head forwards run to *head_forwards.
double SumKl(Model& model, const at::Tensor& h_ref, const ReferenceLogProbs& cached, const at::Tensor& h, int64_t batch,
             int64_t* tokens, double* head_forwards, double e_frac) {
  const int64_t E = h.size(0), L = h.size(1);
  double kl = 0;
  for (int64_t s = 0, k = 0; s < E; s += batch, ++k) {
    const int64_t n = std::min(batch, E - s);
    const at::Tensor lp_ref =  // (n, L, V)
        cached.batches.empty() ? HeadLogProbs(model, h_ref, s, n) : cached.batches[static_cast<size_t>(k)];
    const at::Tensor lp = HeadLogProbs(model, h, s, n);  // (n, L, V)
    kl += (lp_ref.exp() * (lp_ref - lp)).sum().item<double>();
    *tokens += n * L;
  }
  *head_forwards += (cached.batches.empty() ? 2 : 1) * e_frac;
  return kl;
}

}  // namespace

SensitivityResult RunSensitivity(const SensitivityOptions& o) {
  at::NoGradGuard no_grad;
  const auto t0 = std::chrono::steady_clock::now();
  const CandidatesSpec spec = ParseCandidatesFile(o.candidates_file);
  std::vector<Candidate> cands = ResolveCandidates(spec, MethodRegistry::Builtins());
  const bool accumulated = o.accumulated || o.kl;
  LoadOptions lo;
  lo.load_blocks = accumulated;  // later blocks run on every candidate's output
  lo.load_head = o.kl;
  auto model = Model::Load(o.model_dir, lo);
  std::vector<Unit> units = BuildUnits(spec, *model);
  store::StagedWriter out = store::File::CreateStaged(o.out, store::kind::kSensitivity, o.overwrite, "--out");

  // Calibration: the command line's settings over the scan's defaults (random windows, 32 samples).
  CalibSpec calib;
  calib.source = o.calib.source;
  calib.samples = o.calib.samples.value_or(32);
  calib.seq_len = o.calib.seq_len.value_or(std::min<int64_t>(512, model->config().max_pos));
  calib.seed = o.calib.seed.value_or(0);
  calib.windowing = ParseWindowing(o.calib.windowing.value_or("random"), "--calib-windowing");
  if (o.calib.text_field) calib.text_field = *o.calib.text_field;
  auto tok = LoadTokenizer(o.model_dir);
  CalibSet set;
  {
    int64_t n = 0;
    if (ParseSelfSpec(calib.source, "--calib", &n)) {  // self-sampling needs the whole model
      auto sampler = Model::Load(o.model_dir, LoadOptions());
      set = BuildCalibSet(calib, *tok, *sampler);
    } else {
      set = BuildCalibSet(calib, *tok, *model);
    }
  }
  const int64_t N = set.windows(), L = set.seq_len();
  const int64_t E = o.measure_windows > 0 ? std::min(o.measure_windows, N) : N;
  const int64_t mb = o.micro_batch > 0 ? o.micro_batch : DefaultMicroBatch(*model, L);
  const int n_layers = model->num_layers();
  log::Info("sensitivity", units.size(), " units x ", cands.size(), " candidates on ", n_layers, " blocks; calibration ",
            N, " x ", L, " tokens, errors on ", E, " windows");

  at::Tensor x = at::empty({N, L, model->config().hidden}, at::TensorOptions().dtype(model->compute_dtype()));
  {
    ForwardContext ctx = model->MakeContext(L);
    for (int64_t s = 0; s < N; s += mb) x.narrow(0, s, std::min(mb, N - s)).copy_(model->Embed(set.tokens.narrow(0, s, std::min(mb, N - s)), ctx));
  }
  SensitivityResult result;
  result.layers = n_layers;
  result.units = static_cast<int>(units.size());
  result.candidates = static_cast<int>(cands.size());
  const double e_frac = static_cast<double>(E) / static_cast<double>(N);
  at::Tensor final_ref;  // (E, L, d) the reference's last block output (accumulated errors)
  if (accumulated) {
    final_ref = x.narrow(0, 0, E).clone();
    for (int l = 0; l < n_layers; ++l) final_ref = RunBlockBatched(*model, l, final_ref, mb);
    result.block_forwards += n_layers * e_frac;
  }
  const int64_t head_batch = DefaultEvalBatch(model->config(), L);
  const ReferenceLogProbs ref_lp = o.kl ? CacheReferenceLogProbs(*model, final_ref, head_batch, o.kl_cache_bytes,
                                                                 &result.head_forwards, e_frac)
                                        : ReferenceLogProbs{};

  // One row per (unit, candidate).
  std::vector<std::string> r_unit, r_cand;
  std::vector<int64_t> r_unit_index, r_cand_index, r_layer, r_params;
  std::vector<double> r_bits, r_sparsity, r_iso, r_par, r_perp, r_aiso, r_apar, r_aperp, r_kl, r_werr, r_cos,
      r_seconds;
  std::vector<double> unit_cos(units.size(), kNaN);
  Progress progress("sensitivity", n_layers, "blocks");
  size_t next_unit = 0;
  for (int layer = 0; layer < n_layers; ++layer) {
    model->LoadBlock(layer);
    Block& block = model->block(layer);
    const at::Tensor y_ref = RunBlockBatched(*model, layer, x, mb);  // (N, L, d)
    result.block_forwards += 1;
    const double cos_l = OneMinusCos(x.narrow(0, 0, E), y_ref.narrow(0, 0, E));
    const BlockSnapshot snap(block);
    for (; next_unit < units.size() && units[next_unit].layer == layer; ++next_unit) {
      const Unit& u = units[next_unit];
      unit_cos[next_unit] = cos_l;
      for (size_t c = 0; c < cands.size(); ++c) {
        const Candidate& cand = cands[c];
        const auto tc = std::chrono::steady_clock::now();
        double bits = 0, zeros = 0, werr_num = 0, werr_den = 0;
        SplitSums local, acc;
        double kl = 0;
        int64_t kl_tokens = 0;
        if (cand.instance) {
          result.block_forwards += CompressLinearsAlone(*model, layer, x, *cand.instance, u.members, mb);
          const at::Tensor y_hat = RunBlockBatched(*model, layer, x.narrow(0, 0, E), mb);
          result.block_forwards += e_frac;
          local.Add(y_ref.narrow(0, 0, E), y_hat);
          if (accumulated) {
            at::Tensor h = y_hat;
            for (int k = layer + 1; k < n_layers; ++k) h = RunBlockBatched(*model, k, h, mb);
            result.block_forwards += (n_layers - 1 - layer) * e_frac;
            acc.Add(final_ref, h);
            if (o.kl) {
              kl = SumKl(*model, final_ref, ref_lp, h, head_batch, &kl_tokens, &result.head_forwards, e_frac);
            }
          }
          for (int i : u.members) {
            const Linear& lin = block.linears[i];
            const at::Tensor w0 = snap.w[i].to(at::kDouble), w1 = lin.weight.to(at::kDouble);
            werr_num += (w1 - w0).pow(2).sum().item<double>();
            werr_den += w0.pow(2).sum().item<double>();
            zeros += static_cast<double>((lin.weight == 0).sum().item<int64_t>());
            bits += BitsPerWeight(cand.instance->params(), lin.in_features()) * static_cast<double>(lin.weight.numel());
          }
          snap.Restore(block);
        } else {
          bits = kDenseBits * static_cast<double>(u.params);
          for (int i : u.members) zeros += static_cast<double>((snap.w[i] == 0).sum().item<int64_t>());
        }
        const double np = static_cast<double>(u.params);
        r_unit.push_back(u.name);
        r_cand.push_back(cand.name);
        r_unit_index.push_back(static_cast<int64_t>(next_unit));
        r_cand_index.push_back(static_cast<int64_t>(c));
        r_layer.push_back(layer);
        r_params.push_back(u.params);
        r_bits.push_back(bits / np);
        r_sparsity.push_back(zeros / np);
        const bool m = cand.instance != nullptr;
        r_iso.push_back(m ? local.Rel(local.iso) : 0.0);
        r_par.push_back(m ? local.Rel(local.par) : 0.0);
        r_perp.push_back(m ? local.Rel(local.perp) : 0.0);
        r_aiso.push_back(!accumulated ? kNaN : m ? acc.Rel(acc.iso) : 0.0);
        r_apar.push_back(!accumulated ? kNaN : m ? acc.Rel(acc.par) : 0.0);
        r_aperp.push_back(!accumulated ? kNaN : m ? acc.Rel(acc.perp) : 0.0);
        r_kl.push_back(!o.kl ? kNaN : m ? kl / static_cast<double>(std::max<int64_t>(1, kl_tokens)) : 0.0);
        r_werr.push_back(werr_den > 0 ? werr_num / werr_den : 0.0);
        r_cos.push_back(cos_l);
        r_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - tc).count());
      }
    }
    x = y_ref;  // the reference's outputs feed the next block
    if (!accumulated && model->HasCheckpoint()) model->UnloadBlock(layer);
    progress.Add(1);
  }
  result.forward_equivalents = result.block_forwards / n_layers;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const store::Group root = out.root();
  root.SetAttr("model", o.model_dir);
  root.SetAttr("model_type", model->config().model_type);
  root.SetAttr("layers", static_cast<int64_t>(n_layers));
  root.SetAttr("candidates_file", o.candidates_file);
  root.SetAttr("calibration_json", set.record.dump());
  root.SetAttr("measure_windows", E);
  root.SetAttr("accumulated", accumulated);
  root.SetAttr("kl", o.kl);
  root.SetAttr("block_forwards", result.block_forwards);
  root.SetAttr("forward_equivalents", result.forward_equivalents);
  root.SetAttr("head_forwards", result.head_forwards);
  root.SetAttr("seconds", result.seconds);
  {
    store::Table t;
    t.AddColumnOf("name", cands, [](const Candidate& c) { return c.name; });
    t.AddColumnOf("method", cands, [](const Candidate& c) { return c.method; });
    t.AddColumnOf("family", cands, [](const Candidate& c) { return c.family; });
    t.AddColumnOf("params_json", cands, [](const Candidate& c) { return c.params.dump(); });
    root.WriteTable("candidates", t);
  }
  {
    store::Table t;
    t.AddColumnOf("name", units, [](const Unit& u) { return u.name; });
    t.AddColumnOf("layer", units, [](const Unit& u) { return static_cast<int64_t>(u.layer); });
    t.AddColumnOf("members", units, [](const Unit& u) { return Join(u.member_names, ","); });
    t.AddColumnOf("params", units, [](const Unit& u) { return u.params; });
    t.AddColumnOf("in_features", units, [](const Unit& u) {
      std::vector<std::string> v;
      for (int64_t i : u.member_in) v.push_back(std::to_string(i));
      return Join(v, ",");
    });
    t.AddColumn("one_minus_cos", unit_cos);
    root.WriteTable("units", t);
  }
  {
    store::Table t;
    t.AddColumn("unit", r_unit).AddColumn("candidate", r_cand).AddColumn("unit_index", r_unit_index);
    t.AddColumn("candidate_index", r_cand_index).AddColumn("layer", r_layer).AddColumn("params", r_params);
    t.AddColumn("bits", r_bits).AddColumn("sparsity", r_sparsity);
    t.AddColumn("iso", r_iso).AddColumn("par", r_par).AddColumn("perp", r_perp);
    t.AddColumn("acc_iso", r_aiso).AddColumn("acc_par", r_apar).AddColumn("acc_perp", r_aperp);
    t.AddColumn("kl", r_kl).AddColumn("weight_err", r_werr).AddColumn("one_minus_cos", r_cos);
    t.AddColumn("seconds", r_seconds);
    root.WriteTable("costs", t);
  }
  out.Commit();
  return result;
}

}  // namespace pc::pipeline
