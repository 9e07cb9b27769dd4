#include "tests/compress/prune_test_util.h"

#include <catch2/catch.hpp>

#include <cctype>
#include <cstring>

#include "core/error.h"
#include "core/fs.h"
#include "model/model.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

namespace pc::test {

std::unique_ptr<Method> MakeMethod(const std::string& name, const std::map<std::string, ParamScalar>& params,
                                   const std::string& where) {
  const MethodInfo& info = MethodRegistry::Builtins().Get(name);
  return info.create(ResolveParams(name, info.params, params, {}, where), where);
}

at::Tensor SyntheticInputs(int64_t n, int64_t in, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor z = at::randn({n, in}, gen);
  at::Tensor mix = at::eye(in) + 0.3 * at::randn({in, in}, gen) / std::sqrt(static_cast<double>(in));
  at::Tensor scale = at::ones({in});
  scale.narrow(0, 0, std::max<int64_t>(1, in / 8)).fill_(10.0);  // outlier features, as in LLMs
  return (at::mm(z, mix) * scale.index_select(0, at::randperm(in, gen))).contiguous();
}

at::Tensor RandomWeight(int64_t out, int64_t in, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn({out, in}, gen) / std::sqrt(static_cast<double>(in));
}

InputStats StatsOf(const at::Tensor& x) {
  InputStats s;
  at::Tensor xd = x.to(at::kDouble);
  s.tokens = x.size(0);
  s.abs_sum = xd.abs().sum(0);
  s.sq_sum = xd.square().sum(0);
  s.gram = at::mm(xd.t(), xd);
  return s;
}

Linear MakeLinear(const at::Tensor& w, const std::string& name) {
  Linear l;
  l.name = name;
  l.role = Role::kDown;
  l.weight = w.clone();
  return l;
}

double OutputRelError(const at::Tensor& x, const at::Tensor& w, const at::Tensor& w_hat) {
  at::Tensor xd = x.to(at::kDouble);
  at::Tensor y = at::mm(xd, w.to(at::kDouble).t());
  at::Tensor e = at::mm(xd, (w_hat.to(at::kDouble) - w.to(at::kDouble)).t());
  return e.square().sum().item<double>() / y.square().sum().item<double>();
}

at::Tensor Compress(Method& method, const at::Tensor& w, const at::Tensor& x, Record* record) {
  Linear lin = MakeLinear(w);
  InputStats stats = StatsOf(x);
  if (method.WantsOutputs()) method.Accumulate(lin, x, at::mm(x, w.t()), stats);
  Record local;
  method.CompressLinear(lin, stats, record ? *record : local);
  return lin.weight;
}

CompressedModel CompressModel(Model& model, const std::string& method, const std::map<std::string, ParamScalar>& params,
                              int64_t windows, int64_t length, uint64_t seed) {
  Plan plan;
  plan.methods.push_back(MakeMethod(method, params));
  plan.infos.push_back(&MethodRegistry::Builtins().Get(method));
  plan.propagate_compressed = true;
  for (int l = 0; l < model.num_layers(); ++l) {
    for (size_t i = 0; i < model.block(l).linears.size(); ++i) {
      PlanEntry e;
      e.layer = l;
      e.index = static_cast<int>(i);
      e.name = model.block(l).linears[i].name;
      e.role = model.block(l).linears[i].role;
      e.method = 0;
      plan.entries.push_back(e);
    }
  }
  CompressedModel out;
  EngineOptions eo;
  eo.micro_batch = 4;
  eo.on_block_done = [&](int layer) {
    for (const Linear& lin : model.block(layer).linears) out.weights.emplace_back(lin.name, lin.weight.clone());
  };
  out.result = RunCompression(model, plan, RandomTokens(windows, length, model.config().vocab_size, seed), eo);
  return out;
}

double MismatchFraction(const at::Tensor& a, const at::Tensor& b, double tol) {
  at::Tensor ad = a.to(at::kDouble), bd = b.to(at::kDouble);
  double scale = std::max(bd.abs().max().item<double>(), 1e-30);
  return ((ad - bd).abs() > tol * scale).to(at::kDouble).mean().item<double>();
}

namespace {
void WriteF32(const std::string& path, const at::Tensor& t) {
  at::Tensor c = t.to(at::kFloat).contiguous();
  fs::WriteFileAtomic(path, std::string(reinterpret_cast<const char*>(c.data_ptr<float>()), c.numel() * 4));
}
}  // namespace

at::Tensor ObsReference(const std::string& method, const at::Tensor& w, const at::Tensor& x,
                        const nlohmann::json& params, double* loss) {
  std::string dir = TempDir("obs-ref");
  WriteF32(dir + "/W.bin", w);
  WriteF32(dir + "/X.bin", x);
  nlohmann::json meta = {
      {"method", method}, {"out", w.size(0)}, {"in", w.size(1)}, {"n", x.size(0)}, {"params", params}};
  fs::WriteFileAtomic(dir + "/in.json", meta.dump());
  RunResult r = Run("/usr/bin/python3 '" + SourceDir() + "/tests/compress/obs_reference.py' '" + dir + "'");
  INFO("obs_reference.py " << meta.dump() << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::string bytes = fs::ReadFile(dir + "/out.bin");
  at::Tensor out = at::empty(w.sizes(), at::kFloat);
  REQUIRE(bytes.size() == static_cast<size_t>(out.numel()) * 4);
  std::memcpy(out.data_ptr<float>(), bytes.data(), bytes.size());
  if (loss) *loss = nlohmann::json::parse(fs::ReadFile(dir + "/out.json"))["loss"].get<double>();
  return out;
}

void AddTokenizer(const std::string& dir, int64_t vocab) {
  nlohmann::json v = nlohmann::json::object();
  v["<unk>"] = 0;
  v["<|endoftext|>"] = 1;  // where self-sampling starts
  for (int64_t i = 2; i < vocab; ++i) v["t" + std::to_string(i)] = i;
  nlohmann::json added = nlohmann::json::array();
  added.push_back({{"id", 1}, {"content", "<|endoftext|>"}, {"special", true}});
  nlohmann::json tok = {{"version", "1.0"},
                        {"added_tokens", added},
                        {"normalizer", nullptr},
                        {"pre_tokenizer", nullptr},
                        {"post_processor", nullptr},
                        {"decoder", nullptr},
                        {"model",
                         {{"type", "BPE"}, {"vocab", v}, {"merges", nlohmann::json::array()}, {"unk_token", "<unk>"}}}};
  fs::WriteFileAtomic(dir + "/tokenizer.json", tok.dump());
}

std::string ReferenceWithTokenizer(const std::string& arch, const std::string& variant, const std::string& extra) {
  const std::string src = MakeReferenceModel(arch, (variant.empty() ? "" : "--variant " + variant + " ") + extra);
  std::string tag = arch + variant + extra;
  for (char& c : tag) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  const std::string dir = TempDir("ref-tok-" + tag);
  for (const char* f : {"config.json", "model.safetensors"}) {
    fs::WriteFileAtomic(dir + "/" + f, fs::ReadFile(src + "/" + f));
  }
  AddTokenizer(dir, Model::Load(dir)->config().vocab_size);
  return dir;
}

}  // namespace pc::test
