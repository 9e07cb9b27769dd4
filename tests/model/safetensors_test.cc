#include <catch2/catch.hpp>

#include <cmath>

#include <ATen/ATen.h>

#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "model/model.h"
#include "model/safetensors.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

// A raw safetensors file: 8-byte length, header text, data bytes.
std::string RawFile(const std::string& header, const std::string& data, uint64_t length_field = UINT64_MAX) {
  uint64_t n = length_field == UINT64_MAX ? header.size() : length_field;
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string WriteTemp(const std::string& bytes) {
  std::string path = pc::test::TempDir("st") + "/model.safetensors";
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string OpenError(const std::string& bytes) {
  std::string path = WriteTemp(bytes);
  try {
    pc::SafetensorsFile::Open(path);
  } catch (const pc::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: a valid file round-trips through the writer", "[model][safetensors]") {
  std::string dir = pc::test::TempDir("st-ok");
  at::Tensor a = at::arange(12, at::kFloat).view({3, 4});
  at::Tensor b = at::randn({5}).to(at::kBFloat16);
  {
    pc::SafetensorsWriter w(dir, {{"a", pc::StDType::kF32, {3, 4}}, {"b", pc::StDType::kBF16, {5}}},
                            pc::kDefaultMaxShardBytes);
    w.Write("b", b);
    w.Write("a", a);
    w.Finish();
  }
  auto ck = pc::Checkpoint::Open(dir);
  CHECK(ck->LoadRaw("a").equal(a));
  CHECK(ck->LoadRaw("b").equal(b));
  CHECK(ck->Load("b", at::kFloat).equal(b.to(at::kFloat)));
  CHECK_THROWS_WITH(ck->LoadRaw("c"), Contains("missing tensor 'c'"));
}

TEST_CASE("safetensors: a value that is not finite in the stored dtype is refused with the tensor's name",
          "[model][safetensors][reliability]") {
  // issue 19 item 9: AWQ on an f16 checkpoint wrote +inf (a float32 value beyond F16's 65504) with exit 0.
  std::string dir = pc::test::TempDir("st-inf");
  pc::SafetensorsWriter w(dir, {{"ok", pc::StDType::kF16, {2}}, {"big", pc::StDType::kF16, {3}},
                                {"nan", pc::StDType::kF32, {2}}},
                          pc::kDefaultMaxShardBytes);
  w.Write("ok", at::tensor({1.0f, 65504.0f}));
  CHECK_THROWS_WITH(w.Write("big", at::tensor({1.0f, 7.0e4f, -2.0f})),
                    Contains("cannot write tensor 'big'") && Contains("1 of its values are not finite in F16") &&
                        Contains("flat index 1, is inf, from the finite 70000 in Float, beyond the dtype's range"));
  CHECK_THROWS_WITH(w.Write("nan", at::tensor({NAN, 1.0f})),
                    Contains("cannot write tensor 'nan'") && Contains("already before the conversion"));
}

TEST_CASE("safetensors: every malformed header is refused with its reason", "[model][safetensors]") {
  const std::string ok_data(16, '\0');
  CHECK_THAT(OpenError(""), Contains("too short"));
  CHECK_THAT(OpenError(std::string(5, 'x')), Contains("too short"));
  CHECK_THAT(OpenError(RawFile("{}", "", 1000)), Contains("beyond the file size"));
  CHECK_THAT(OpenError(RawFile("{}", "", uint64_t{1} << 63)), Contains("beyond the file size"));
  CHECK_THAT(OpenError(RawFile("{\"a\": ", ok_data)), Contains("invalid JSON"));
  CHECK_THAT(OpenError(RawFile("[1, 2]", ok_data)), Contains("expected a JSON object"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]}})", ok_data)),
             Contains("unknown dtype 'Q4'"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [8], "data_offsets": [0, 32]}})", ok_data)),
             Contains("beyond the data buffer"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}})", ok_data)),
             Contains("reversed"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", ok_data)),
             Contains("needs 12"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 16]}})",
                               ok_data)),
             Contains("overflows"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]},
                                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})",
                               ok_data)),
             Contains("overlap"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
                                   "b": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})",
                               ok_data)),
             Contains("overlap"));  // aliased
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 18446744073709551615]}})",
                               ok_data)),
             Contains("beyond the data buffer"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})", ok_data)),
             Contains("non-negative integer"));
  CHECK_THAT(OpenError(RawFile(R"({"a": {"dtype": "F32", "shape": [4]}})", ok_data)), Contains("data_offsets"));
}

namespace {
// A model folder made by the reference, then changed by `edit` (config JSON and tensors).
std::string BrokenModel(const std::function<void(nlohmann::json&, std::map<std::string, at::Tensor>&)>& edit) {
  std::string src = pc::test::MakeReferenceModel("llama");
  auto ck = pc::Checkpoint::Open(src);
  std::map<std::string, at::Tensor> tensors;
  for (const auto& n : ck->Names()) tensors[n] = ck->LoadRaw(n);
  nlohmann::json config = nlohmann::json::parse(pc::fs::ReadFile(src + "/config.json"));
  edit(config, tensors);
  std::string dir = pc::test::TempDir("broken");
  pc::fs::WriteFileAtomic(dir + "/config.json", config.dump());
  std::vector<pc::SafetensorsWriter::Entry> entries;
  for (auto& [n, t] : tensors) entries.push_back({n, pc::FromScalarType(t.scalar_type()), t.sizes().vec()});
  // The writer refuses non-finite values (an output must load), so a float32 NaN or Inf is
  // written as a sentinel and patched into the file's bytes afterwards.
  constexpr float kSentinel = 12345.5f;
  float non_finite = 0;
  for (auto& [n, t] : tensors) {
    if (t.scalar_type() != at::kFloat || at::isfinite(t).all().item<bool>()) continue;
    non_finite = t.masked_select(at::isfinite(t).logical_not())[0].item<float>();
    t = at::where(at::isfinite(t), t, at::full_like(t, kSentinel));
  }
  {
    pc::SafetensorsWriter w(dir, entries, pc::kDefaultMaxShardBytes);
    for (auto& [n, t] : tensors) w.Write(n, t);
    w.Finish();
  }
  if (non_finite != 0) {
    const std::string path = dir + "/model.safetensors";
    std::string bytes = pc::fs::ReadFile(path);
    const std::string from(reinterpret_cast<const char*>(&kSentinel), 4), to(reinterpret_cast<const char*>(&non_finite), 4);
    for (size_t at = bytes.find(from); at != std::string::npos; at = bytes.find(from, at + 4)) bytes.replace(at, 4, to);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  }
  return dir;
}

std::string LoadError(const std::string& dir) {
  try {
    pc::Model::Load(dir);
  } catch (const pc::Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("model folders: config and tensors must agree", "[model][safetensors]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  CHECK_THAT(LoadError(BrokenModel([](auto& c, auto&) { c["model_type"] = "bloom"; })),
             Contains("unsupported model_type 'bloom'") && Contains("llama") && Contains("gpt_neox"));
  CHECK_THAT(LoadError(BrokenModel([](auto& c, auto&) { c["intermediate_size"] = 81; })),
             Contains("mlp.gate_proj.weight' has shape [80, 48], expected [81, 48]"));
  CHECK_THAT(LoadError(BrokenModel([](auto&, auto& t) { t.erase("model.layers.1.mlp.up_proj.weight"); })),
             Contains("missing tensor 'model.layers.1.mlp.up_proj.weight'"));
  CHECK_THAT(LoadError(BrokenModel([](auto&, auto& t) { t["model.norm.weight"][3] = NAN; })),
             Contains("model.norm.weight' holds a non-finite value") && Contains("index 3"));
  CHECK_THAT(LoadError(BrokenModel([](auto&, auto& t) { t["model.layers.0.self_attn.k_proj.weight"][0][1] = INFINITY; })),
             Contains("non-finite"));
  CHECK_THAT(LoadError(BrokenModel([](auto& c, auto&) { c.erase("hidden_size"); })), Contains("missing 'hidden_size'"));
  CHECK_THAT(LoadError(BrokenModel([](auto& c, auto&) { c["num_key_value_heads"] = 4; })),
             Contains("not a multiple of num_key_value_heads 4"));
  CHECK_THAT(LoadError(pc::test::TempDir("empty")), Contains("no config.json"));
  CHECK_THAT(LoadError("/nonexistent/model"), Contains("does not exist"));
}

TEST_CASE("sharded checkpoints: shards must stay inside the folder and exist", "[model][safetensors]") {
  PC_SKIP_IF(!pc::test::HavePythonTorch(), "/usr/bin/python3 with torch is absent");
  std::string dir = BrokenModel([](auto&, auto&) {});
  // Move the single file to a shard name and write an index.
  std::rename((dir + "/model.safetensors").c_str(), (dir + "/model-00001-of-00001.safetensors").c_str());
  auto ck_names = [&] {
    auto f = pc::SafetensorsFile::Open(dir + "/model-00001-of-00001.safetensors");
    std::vector<std::string> n;
    for (const auto& t : f->tensors()) n.push_back(t.name);
    return n;
  }();
  auto write_index = [&](const std::string& file_for_first) {
    nlohmann::json map;
    for (size_t i = 0; i < ck_names.size(); ++i) map[ck_names[i]] = i == 0 ? file_for_first : "model-00001-of-00001.safetensors";
    pc::fs::WriteFileAtomic(dir + "/model.safetensors.index.json", nlohmann::json{{"weight_map", map}}.dump());
  };
  write_index("model-00001-of-00001.safetensors");
  CHECK_NOTHROW(pc::Model::Load(dir));
  write_index("../outside.safetensors");
  CHECK_THAT(LoadError(dir), Contains("lies outside the model folder"));
  write_index("/etc/passwd");
  CHECK_THAT(LoadError(dir), Contains("lies outside the model folder"));
  write_index("model-00002-of-00002.safetensors");
  CHECK_THAT(LoadError(dir), Contains("does not exist"));
}
