#include "tests/model/model_test_util.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "tests/test_support.h"

namespace pc::test {

void RunReference(const std::string& args) {
  RunResult r = Run("/usr/bin/python3 '" + SourceDir() + "/tests/reference/hf_reference.py' " + args);
  INFO("reference: " << args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
}

std::string MakeReferenceModel(const std::string& arch, const std::string& extra) {
  std::string dir = TempDir("ref-" + arch) + "/model";
  RunReference("make-model " + arch + " '" + dir + "' " + extra);
  return dir;
}

void WriteTokens(const std::string& path, const at::Tensor& tokens) {
  std::ofstream f(path);
  at::Tensor t = tokens.contiguous();
  for (int64_t w = 0; w < t.size(0); ++w) {
    for (int64_t i = 0; i < t.size(1); ++i) f << (i ? " " : "") << t[w][i].item<int64_t>();
    f << "\n";
  }
}

at::Tensor ReadLogits(const std::string& path) {
  auto meta = nlohmann::json::parse(pc::fs::ReadFile(path + ".json"));
  std::vector<int64_t> shape = meta["shape"].get<std::vector<int64_t>>();
  std::string bytes = pc::fs::ReadFile(path);
  at::Tensor out = at::empty(shape, at::kFloat);
  REQUIRE(bytes.size() == static_cast<size_t>(out.numel()) * 4);
  std::memcpy(out.data_ptr<float>(), bytes.data(), bytes.size());
  return out;
}

at::Tensor ReferenceLogits(const std::string& subcommand, const std::string& path, const at::Tensor& tokens) {
  std::string dir = TempDir("ref-logits");
  WriteTokens(dir + "/tokens.txt", tokens);
  RunReference(subcommand + " '" + path + "' '" + dir + "/tokens.txt' '" + dir + "/out.bin'");
  return ReadLogits(dir + "/out.bin");
}

std::string RefenvPython() {
  static const std::string python = [] {
    const std::string py = RefPython();  // tests/test_support.h: PC_REFENV / $PERPCOMP_REFENV
    if (py.empty()) return std::string();
    RunResult r = Run("'" + py + "' -c 'import transformers, safetensors' 2>&1");
    return r.exit_code == 0 ? py : std::string();
  }();
  return python;
}

void RunTransformersJobs(std::vector<TransformersJob>& jobs) {
  const std::string python = RefenvPython();
  REQUIRE(!python.empty());
  const std::string root = TempDir("transformers");
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    TransformersJob& j = jobs[i];
    const std::string base = root + "/" + std::to_string(i);
    j.dir = base + "-model";
    j.tokens = RandomTokens(j.windows, j.length, j.config.at("vocab_size").get<int64_t>(), 100 + i);
    WriteTokens(base + "-tokens.txt", j.tokens);
    list.push_back({{"config", j.config}, {"dir", j.dir}, {"seed", static_cast<int64_t>(i)},
                    {"legacy_rope", j.legacy_rope}, {"tokens", base + "-tokens.txt"}, {"out", base + "-logits.bin"}});
  }
  std::ofstream(root + "/jobs.json") << list.dump(2);
  RunResult r = Run("'" + python + "' '" + SourceDir() + "/tests/reference/transformers_ref.py' batch '" + root +
                    "/jobs.json'");
  INFO("transformers_ref.py batch\n" << r.err);
  REQUIRE(r.exit_code == 0);
  for (size_t i = 0; i < jobs.size(); ++i) jobs[i].logits = ReadLogits(root + "/" + std::to_string(i) + "-logits.bin");
}

at::Tensor RandomTokens(int64_t windows, int64_t length, int64_t vocab, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(0, vocab, {windows, length}, gen, at::kLong);
}

}  // namespace pc::test
