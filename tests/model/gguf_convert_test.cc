// perpcomp convert --from gguf (model/gguf_convert.h, model/gguf_tokenizer.h): synthetic models of
// every architecture written by the gguf package in llama.cpp's layout (tests/reference/
// gguf_reference.py make-gguf) against their Hugging Face originals and against transformers' own
// GGUF loading; the real SmolLM2-135M-Instruct GGUF (tools/fetch-models.sh) against transformers.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/text.h"
#include "model/gguf_convert.h"
#include "model/model.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/model/gguf_test_util.h"
#include "tests/test_support.h"

using Catch::Matchers::Contains;

namespace {

std::string RefPy() { return pc::test::GgufRefPython(); }

pc::test::RunResult Ref(const std::string& args) {
  return pc::test::Run("HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PERPCOMP_REF_THREADS=1 '" + RefPy() + "' '" +
                       pc::test::SourceDir() + "/tests/reference/gguf_reference.py' " + args);
}

bool RefHasTransformers() {
  static int have = -1;
  if (have < 0) {
    have = !RefPy().empty() &&
           pc::test::Run("'" + RefPy() + "' -c 'import gguf, transformers, safetensors, tokenizers'").exit_code == 0;
  }
  return have == 1;
}

// Every tensor of `a` equals the same-named tensor of `b` exactly (HF naming, on-disk layout).
void CheckSameTensors(pc::Model& a, pc::Model& b) {
  std::map<std::string, at::Tensor> tb;
  b.ForEachTensor([&](const std::string& n, const at::Tensor& t, pc::StDType) { tb[n] = t.to(at::kFloat).clone(); });
  size_t seen = 0;
  a.ForEachTensor([&](const std::string& n, const at::Tensor& t, pc::StDType) {
    CAPTURE(n);
    REQUIRE(tb.count(n) == 1);
    CHECK(t.sizes() == tb[n].sizes());
    CHECK(t.to(at::kFloat).equal(tb[n]));
    ++seen;
  });
  CHECK(seen == tb.size());
}

std::vector<std::string> SampleTexts() {
  return {"the quick brown fox", " jumps over the lazy dog.", "Then they ran  home\n\nand 1234 5678!",
          "naïve café — ünïcödé ✓", "<|endoftext|>the end", "<s> hello </s>", "   leading and trailing   ",
          "tabs\tand\r\nnewlines", "thethethe therethere", "x"};
}

// ids of transformers' GGUF tokenizer and of the converted tokenizer.json through Hugging Face
// tokenizers, for `texts`, as [[...], ...] (tokenize) — compared with perpcomp's Encode.
// `with_transformers` false (architectures transformers cannot load from GGUF: gptneox): the
// reference is Hugging Face tokenizers on the converted tokenizer.json only.
void CheckTokenizerAgrees(const std::string& gguf, const std::string& folder, const std::vector<std::string>& texts,
                          const std::string& tmp, bool with_transformers = true) {
  nlohmann::json j = texts;
  const std::string texts_path = tmp + "/texts.json";
  pc::fs::WriteFileAtomic(texts_path, j.dump());
  if (with_transformers) {
    auto r = Ref("tokenize '" + gguf + "' '" + texts_path + "' '" + tmp + "/ids.json'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
  }
  auto r2 = Ref("tokenize-json '" + folder + "/tokenizer.json' '" + texts_path + "' '" + tmp + "/ids-json.json'");
  INFO(r2.err);
  REQUIRE(r2.exit_code == 0);
  nlohmann::json hf_json = pc::LoadJsonFile(tmp + "/ids-json.json");
  nlohmann::json want = with_transformers ? pc::LoadJsonFile(tmp + "/ids.json") : hf_json;
  auto tok = pc::LoadTokenizer(folder);
  size_t differ = 0;
  for (size_t k = 0; k < texts.size(); ++k) {
    std::vector<int32_t> got = tok->Encode(texts[k]);
    std::vector<int32_t> exp = want[k].get<std::vector<int32_t>>();
    std::vector<int32_t> via_json = hf_json[k].get<std::vector<int32_t>>();
    if (got != exp || via_json != exp) {
      if (differ < 3) {
        UNSCOPED_INFO("text " << k << " (" << texts[k].substr(0, 80) << "): perpcomp " << got.size()
                              << " ids, transformers " << exp.size() << ", tokenizers on our json " << via_json.size());
      }
      ++differ;
    }
  }
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("gguf convert: F32 files of every architecture give back the Hugging Face tensors exactly",
          "[model][gguf][refenv][slow]") {
  PC_SKIP_IF(!RefHasTransformers(), "the reference environment (gguf, transformers) is absent");
  struct Case {
    const char* arch;
    const char* flags;
  };
  for (Case c : {Case{"llama", ""}, Case{"llama", "--spm --tied"}, Case{"qwen2", ""}, Case{"gpt2", ""},
                 Case{"gptneox", ""}}) {
    CAPTURE(c.arch, c.flags);
    const std::string dir = pc::test::TempDir(std::string("gguf-f32-") + c.arch);
    auto r = Ref(std::string("make-gguf ") + c.arch + " '" + dir + "' --type F32 --seed 3 " + c.flags);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    pc::ConvertGgufToFolder(dir + "/model.gguf", dir + "/out", {}, false);
    auto got = pc::Model::Load(dir + "/out");
    auto want = pc::Model::Load(dir + "/hf");
    CHECK(got->config().model_type == want->config().model_type);
    CHECK(got->config().tie_embeddings == want->config().tie_embeddings);
    CHECK(got->config().kv_heads == want->config().kv_heads);
    CHECK(got->config().rotary_dim == want->config().rotary_dim);
    CheckSameTensors(*got, *want);
    at::Tensor ids = at::arange(0, 40, at::kLong).remainder(got->config().vocab_size).view({1, 40});
    CHECK(got->Forward(ids).equal(want->Forward(ids)));
    CheckTokenizerAgrees(dir + "/model.gguf", dir + "/out", SampleTexts(), dir, std::string(c.arch) != "gptneox");
  }
}

TEST_CASE("gguf convert: quantized files equal transformers' GGUF loading (tensors, logits, tokens)",
          "[model][gguf][refenv][slow]") {
  PC_SKIP_IF(!RefHasTransformers(), "the reference environment (gguf, transformers) is absent");
  struct Case {
    const char* arch;
    const char* type;
    const char* flags;
  };
  for (Case c : {Case{"llama", "Q8_0", ""}, Case{"llama", "Q4_1", "--spm"}, Case{"qwen2", "Q5_0", ""},
                 Case{"gpt2", "Q4_0", ""}}) {
    CAPTURE(c.arch, c.type, c.flags);
    const std::string dir = pc::test::TempDir(std::string("gguf-q-") + c.arch);
    auto r = Ref(std::string("make-gguf ") + c.arch + " '" + dir + "' --type " + c.type + " --seed 5 " + c.flags);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    pc::ConvertGgufToFolder(dir + "/model.gguf", dir + "/out", {}, false);
    auto s = Ref("state '" + dir + "/model.gguf' '" + dir + "/tf'");
    INFO(s.err);
    REQUIRE(s.exit_code == 0);
    auto got = pc::Model::Load(dir + "/out");
    auto want = pc::Model::Load(dir + "/tf");
    CheckSameTensors(*got, *want);
    // Logits against transformers' own forward of the GGUF.
    std::ofstream(dir + "/tokens.txt") << "1 5 9 200 17 3 44 101 250 7 7 7 12 300 2 64\n";
    auto l = Ref("logits '" + dir + "/model.gguf' '" + dir + "/tokens.txt' '" + dir + "/logits.f32'");
    INFO(l.err);
    REQUIRE(l.exit_code == 0);
    std::string raw = pc::fs::ReadFile(dir + "/logits.f32");
    const int64_t V = got->config().vocab_size;
    REQUIRE(raw.size() == static_cast<size_t>(16 * V * 4));
    at::Tensor ref = at::from_blob(raw.data(), {16, V}, at::kFloat).clone();
    at::Tensor ids = at::tensor(std::vector<int64_t>{1, 5, 9, 200, 17, 3, 44, 101, 250, 7, 7, 7, 12, 300, 2, 64})
                         .view({1, 16});
    at::Tensor logits = got->Forward(ids)[0];
    const double scale = ref.abs().max().item<double>();
    CHECK((logits - ref).abs().max().item<double>() <= 1e-4 * scale);
    CheckTokenizerAgrees(dir + "/model.gguf", dir + "/out", SampleTexts(), dir);
  }
}

// qwen3 (per-head RMSNorm on q and k, attention.key_length 32 with 4 heads of a 64-wide model):
// transformers' GGUF loading of qwen3 ignores attention.key_length, so the reference is
// transformers' own forward of the Hugging Face folder the file was written from — for F32 the
// original (hf/), for Q8_0 the same folder with the matrices the GGUF holds, dequantized by the
// gguf package (hf-deq/).
TEST_CASE("gguf convert: qwen3 equals transformers' forward of the same model (F32 and Q8_0)",
          "[model][gguf][refenv][slow]") {
  PC_SKIP_IF(!RefHasTransformers(), "the reference environment (gguf, transformers) is absent");
  const std::vector<int64_t> tokens = {1, 5, 9, 200, 17, 3, 44, 101, 250, 7, 7, 7, 12, 300, 2, 64};
  for (const char* type : {"F32", "Q8_0"}) {
    CAPTURE(type);
    const bool f32 = std::string(type) == "F32";
    const std::string dir = pc::test::TempDir(std::string("gguf-qwen3-") + type);
    auto r = Ref(std::string("make-gguf qwen3 '") + dir + "' --type " + type + " --seed 7" + (f32 ? "" : " --tied"));
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    pc::ConvertGgufToFolder(dir + "/model.gguf", dir + "/out", {}, false);
    const std::string hf = dir + (f32 ? "/hf" : "/hf-deq");
    auto got = pc::Model::Load(dir + "/out");
    auto want = pc::Model::Load(hf);
    CHECK(got->config().model_type == "qwen3");
    CHECK(got->config().head_dim == 32);
    CHECK(got->config().heads == 4);
    CHECK(got->config().kv_heads == 2);
    CHECK(got->config().tie_embeddings == !f32);
    CheckSameTensors(*got, *want);
    {
      std::ofstream tf(dir + "/tokens.txt");
      for (int64_t t : tokens) tf << t << ' ';
      tf << '\n';
    }
    auto l = Ref("hf-logits '" + hf + "' '" + dir + "/tokens.txt' '" + dir + "/logits.f32'");
    INFO(l.err);
    REQUIRE(l.exit_code == 0);
    std::string raw = pc::fs::ReadFile(dir + "/logits.f32");
    const int64_t V = got->config().vocab_size, T = static_cast<int64_t>(tokens.size());
    REQUIRE(raw.size() == static_cast<size_t>(T * V * 4));
    at::Tensor ref = at::from_blob(raw.data(), {T, V}, at::kFloat).clone();
    at::Tensor logits = got->Forward(at::tensor(tokens).view({1, T}))[0];
    const double scale = ref.abs().max().item<double>();
    CHECK(scale > 0.1);
    CHECK((logits - ref).abs().max().item<double>() <= 1e-4 * scale);
    CheckTokenizerAgrees(dir + "/model.gguf", dir + "/out", SampleTexts(), dir, /*with_transformers=*/false);
  }
}

TEST_CASE("gguf convert: files that do not convert are refused with the reason", "[model][gguf]") {
  using pc::test::GgufBuilder;
  auto convert_error = [](const std::string& bytes) {
    const std::string dir = pc::test::TempDir("gguf-bad");
    pc::test::WriteBytes(dir + "/m.gguf", bytes);
    try {
      pc::ConvertGguf(dir + "/m.gguf");
    } catch (const pc::Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  auto base = [](const std::string& arch) {
    GgufBuilder b;
    b.String("general.architecture", arch);
    return b;
  };
  CHECK_THAT(convert_error(base("mamba").Build()), Contains("general.architecture 'mamba' is not supported (supported: "
                                                             "llama, qwen2, qwen3, gpt2, gptneox)"));
  CHECK_THAT(convert_error(base("llama").Build()), Contains("metadata 'tokenizer.ggml.tokens' is missing"));
  GgufBuilder dup = base("llama");
  dup.Strings("tokenizer.ggml.tokens", {"a", "b", "a"});
  CHECK_THAT(convert_error(dup.Build()), Contains("tokens 0 and 2 are both 'a'"));
  GgufBuilder bad_merge = base("gpt2");
  bad_merge.String("tokenizer.ggml.model", "gpt2").Strings("tokenizer.ggml.tokens", {"a", "b"});
  bad_merge.Strings("tokenizer.ggml.merges", {"ab"});
  CHECK_THAT(convert_error(bad_merge.Build()), Contains("merge 0 'ab' is not two tokens separated by one space"));
  GgufBuilder wordpiece = base("llama");
  wordpiece.String("tokenizer.ggml.model", "bert").Strings("tokenizer.ggml.tokens", {"a"});
  CHECK_THAT(convert_error(wordpiece.Build()), Contains("tokenizer.ggml.model 'bert' is not supported"));
  // A complete tiny llama whose metadata lacks a key, then one with a tensor of no known name.
  auto llama = [&](bool with_ffn, bool extra_tensor) {
    GgufBuilder b = base("llama");
    b.String("tokenizer.ggml.model", "gpt2").Strings("tokenizer.ggml.tokens", {"a", "b", "ab", "c"});
    b.Strings("tokenizer.ggml.merges", {"a b"});
    b.U32("llama.context_length", 16).U32("llama.embedding_length", 4).U32("llama.block_count", 1);
    if (with_ffn) b.U32("llama.feed_forward_length", 4);
    b.U32("llama.attention.head_count", 1).F32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    b.Tensor("token_embd.weight", {4, 4}, 0, pc::test::F32Bytes(std::vector<float>(16, 0.5f)));
    if (extra_tensor) b.Tensor("rope_freqs.weight", {2}, 0, pc::test::F32Bytes({1, 1}));
    return b.Build();
  };
  CHECK_THAT(convert_error(llama(false, false)),
             Contains("metadata 'llama.feed_forward_length' is missing (needed for config.json 'intermediate_size')"));
  CHECK_THAT(convert_error(llama(true, true)), Contains("tensor 'rope_freqs.weight' has no Hugging Face name in the "
                                                         "llama table"));
}

// ---- The real model: SmolLM2-135M-Instruct from tools/fetch-models.sh --------------------------

namespace {

std::string ModelCache() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  return (xdg != nullptr && *xdg ? std::string(xdg) : std::string(home != nullptr ? home : "") + "/.cache") +
         "/perpcomp/models";
}

std::vector<int64_t> ParseIds(const std::string& json_text) {
  return nlohmann::json::parse(json_text).get<std::vector<int64_t>>();
}

}  // namespace

TEST_CASE("SmolLM2-135M GGUF: tokens, greedy generation and NLL equal transformers'", "[model][gguf][slow][shared]") {
  const std::string folder = ModelCache() + "/smollm2-135m-instruct";
  const std::string gguf = ModelCache() + "/smollm2-135m-instruct.gguf";
  PC_SKIP_IF(!pc::fs::Exists(folder + "/config.json") || !pc::fs::Exists(gguf),
             "the SmolLM2 model cache is absent (run tools/fetch-models.sh)");
  PC_REQUIRE_SHARED();
  PC_SKIP_IF(!RefHasTransformers(), "the reference environment (gguf, transformers) is absent");
  const std::string tmp = pc::test::TempDir("smollm2");
  auto tok = pc::LoadTokenizer(folder);

  SECTION("tokenizer: WikiText-2 test, the C4 sample and BLiMP sentences") {
    std::vector<std::string> texts;
    const std::string wiki = pc::fs::ReadFile(pc::test::SharedPath("text/wikitext-2/wiki.test.raw.txt"));
    for (size_t at = 0; at < wiki.size(); at += 100000) texts.push_back(wiki.substr(at, 100000));
    // Cuts inside a UTF-8 character would be invalid text: move them to character starts.
    for (size_t k = 1; k < texts.size(); ++k) {
      while (!texts[k - 1].empty() && pc::FindInvalidUtf8(texts[k - 1]) != std::string::npos) {
        texts[k] = texts[k - 1].back() + texts[k];
        texts[k - 1].pop_back();
      }
    }
    for (const auto& d : pc::ReadDocuments(pc::test::SharedPath("text/c4-sample/c4_sample.jsonl"))) texts.push_back(d);
    for (const char* f : {"regular_plural_subject_verb_agreement_1", "anaphor_gender_agreement", "wh_island"}) {
      pc::ForEachJsonLine(pc::fs::ReadFile(pc::test::SharedPath(std::string("tasks/blimp/data/") + f + ".jsonl")), f,
                          [&](const nlohmann::json& o, const std::string&, int64_t) {
                            texts.push_back(o["sentence_good"].get<std::string>());
                            texts.push_back(o["sentence_bad"].get<std::string>());
                          });
    }
    CheckTokenizerAgrees(gguf, folder, texts, tmp);
  }

  SECTION("greedy generate: 100 tokens from a fixed prompt, token for token") {
    const std::string prompt = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";
    std::vector<int32_t> p32 = tok->Encode(prompt);
    std::vector<int64_t> p(p32.begin(), p32.end());
    std::ostringstream ps;
    for (size_t k = 0; k < p.size(); ++k) ps << (k ? " " : "") << p[k];
    auto r = Ref("generate '" + gguf + "' '" + ps.str() + "' 100 '" + tmp + "/gen.json'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    std::vector<int64_t> want = ParseIds(pc::fs::ReadFile(tmp + "/gen.json"));
    auto model = pc::Model::Load(folder);
    pc::GenerateOptions go;
    go.max_new_tokens = 100;
    go.temperature = 0;  // greedy; stop_id -1: through end-of-sequence tokens, as the reference
    std::vector<int64_t> got = pc::Generate(*model, p, go);
    INFO("perpcomp: " << tok->Decode(std::vector<int32_t>(got.begin(), got.end())));
    CHECK(got == want);
  }

  SECTION("NLL of WikiText-2 windows of 2048 tokens within 1e-5 relative") {
    const std::string wiki = pc::fs::ReadFile(pc::test::SharedPath("text/wikitext-2/wiki.test.raw.txt"));
    std::vector<int32_t> ids = tok->Encode(wiki);
    const int64_t T = 2048, windows = 2;
    REQUIRE(static_cast<int64_t>(ids.size()) >= windows * T);
    std::ofstream tf(tmp + "/windows.txt");
    for (int64_t w = 0; w < windows; ++w) {
      for (int64_t t = 0; t < T; ++t) tf << (t ? " " : "") << ids[w * T + t];
      tf << "\n";
    }
    tf.close();
    auto r = Ref("nll '" + gguf + "' '" + tmp + "/windows.txt' '" + tmp + "/nll.json'");
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    nlohmann::json ref = pc::LoadJsonFile(tmp + "/nll.json");
    auto model = pc::Model::Load(folder);
    at::NoGradGuard ng;
    for (int64_t w = 0; w < windows; ++w) {
      std::vector<int64_t> win(ids.begin() + w * T, ids.begin() + (w + 1) * T);
      at::Tensor x = at::tensor(win).view({1, T});
      at::Tensor logp = at::log_softmax(model->Forward(x)[0].to(at::kDouble), -1);
      at::Tensor target = x[0].slice(0, 1).unsqueeze(1);
      const double nll = -logp.slice(0, 0, T - 1).gather(1, target).mean().item<double>();
      const double want = ref["nll"][w].get<double>();
      CAPTURE(w, nll, want);
      CHECK(std::abs(nll - want) <= 1e-5 * want);
    }
  }
}
