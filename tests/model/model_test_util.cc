#include "tests/model/model_test_util.h"

#include <catch2/catch.hpp>

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

at::Tensor ReferenceLogits(const std::string& subcommand, const std::string& path, const at::Tensor& tokens) {
  std::string dir = TempDir("ref-logits");
  std::ofstream f(dir + "/tokens.txt");
  at::Tensor t = tokens.contiguous();
  for (int64_t w = 0; w < t.size(0); ++w) {
    for (int64_t i = 0; i < t.size(1); ++i) f << (i ? " " : "") << t[w][i].item<int64_t>();
    f << "\n";
  }
  f.close();
  RunReference(subcommand + " '" + path + "' '" + dir + "/tokens.txt' '" + dir + "/out.bin'");
  auto meta = nlohmann::json::parse(pc::fs::ReadFile(dir + "/out.bin.json"));
  std::vector<int64_t> shape = meta["shape"].get<std::vector<int64_t>>();
  std::string bytes = pc::fs::ReadFile(dir + "/out.bin");
  at::Tensor out = at::empty(shape, at::kFloat);
  REQUIRE(bytes.size() == static_cast<size_t>(out.numel()) * 4);
  std::memcpy(out.data_ptr<float>(), bytes.data(), bytes.size());
  return out;
}

at::Tensor RandomTokens(int64_t windows, int64_t length, int64_t vocab, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randint(0, vocab, {windows, length}, gen, at::kLong);
}

}  // namespace pc::test
