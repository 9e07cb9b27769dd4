#include "tests/oracle/oracle_util.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <sstream>

#include "core/fs.h"
#include "tests/test_support.h"

namespace pc::test {

void RunOracle(const std::string& args) {
  RunResult r = RunRefPython("tests/oracle/hf_oracle.py", args);
  INFO("hf_oracle.py " << args << "\n" << r.err);
  REQUIRE(r.exit_code == 0);
}

at::Tensor WikiTextByteWindows(int64_t windows, int64_t length, int64_t offset) {
  std::string text = pc::fs::ReadFile(SharedPath("text/wikitext-2/wiki.test.raw.txt"));
  REQUIRE(static_cast<int64_t>(text.size()) >= offset + windows * length);
  at::Tensor t = at::empty({windows, length}, at::kLong);
  auto a = t.accessor<int64_t, 2>();
  for (int64_t w = 0; w < windows; ++w) {
    for (int64_t i = 0; i < length; ++i) a[w][i] = static_cast<unsigned char>(text[offset + w * length + i]);
  }
  return t;
}

std::string WriteTokens(const at::Tensor& tokens, const std::string& dir) {
  std::string path = dir + "/tokens.txt";
  std::ofstream f(path);
  at::Tensor t = tokens.contiguous();
  auto a = t.accessor<int64_t, 2>();
  for (int64_t w = 0; w < t.size(0); ++w) {
    for (int64_t i = 0; i < t.size(1); ++i) f << (i ? " " : "") << a[w][i];
    f << "\n";
  }
  return path;
}

OracleForward ReadOracle(const std::string& prefix) {
  OracleForward o;
  o.meta = nlohmann::json::parse(pc::fs::ReadFile(prefix + ".json"));
  std::vector<int64_t> shape = o.meta["shape"].get<std::vector<int64_t>>();
  std::string bytes = pc::fs::ReadFile(prefix);
  o.logits = at::empty(shape, at::kFloat);
  REQUIRE(bytes.size() == static_cast<size_t>(o.logits.numel()) * 4);
  std::memcpy(o.logits.data_ptr<float>(), bytes.data(), bytes.size());
  return o;
}

double MeanNextTokenNll(const at::Tensor& logits, const at::Tensor& tokens) {
  const int64_t T = tokens.size(1);
  at::Tensor lp = at::log_softmax(logits.to(at::kDouble).narrow(1, 0, T - 1), -1);  // (W, T-1, V)
  at::Tensor next = tokens.narrow(1, 1, T - 1).unsqueeze(-1);                        // (W, T-1, 1)
  return -lp.gather(-1, next).mean().item<double>();
}

std::string LoadProblems(const nlohmann::json& meta) {
  std::ostringstream os;
  for (const char* key : {"missing_keys", "unexpected_keys", "mismatched_keys", "error_msgs", "ignored_keys",
                          "warnings"}) {
    if (!meta.contains(key) || meta[key].empty()) continue;
    os << key << ":";
    for (const auto& v : meta[key]) os << " " << v.get<std::string>();
    os << "\n";
  }
  return os.str();
}

}  // namespace pc::test
