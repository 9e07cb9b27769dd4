#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "model/model.h"
#include "tests/test_support.h"
#include "train/trainer.h"

using Catch::Matchers::Contains;

namespace {

// A small text with agreement, repeated: enough tokens for a few steps of a tiny model.
std::string TinyText() {
  static std::string path;
  if (path.empty()) {
    path = pc::test::TempDir("train-text") + "/train.txt";
    std::ofstream f(path);
    const char* sentences[] = {"The dog near the cats runs.", "The dogs near the cat run.", "A bird sings.",
                               "These birds sing often.", "The key to the cabinets is old.", "The keys are new."};
    for (int i = 0; i < 400; ++i) f << sentences[i % 6] << "\n";
  }
  return path;
}

pc::TrainOptions Tiny(const std::string& out) {
  pc::TrainOptions o;
  o.arch = "gpt_neox";
  o.text = {TinyText()};
  o.vocab_size = 300;
  o.layers = 2;
  o.hidden = 32;
  o.heads = 2;
  o.context = 16;
  o.steps = 4;
  o.warmup = 1;
  o.batch = 4;
  o.eval_every = 2;
  o.eval_windows = 4;
  o.out = out;
  o.show_progress = false;
  return o;
}

std::string TrainError(const pc::TrainOptions& o) {
  try {
    pc::TrainModel(o);
  } catch (const pc::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("train: reproducible, and --parallel-scale 1 is bitwise identical to no option", "[train]") {
  std::string dir = pc::test::TempDir("train");
  for (const char* arch : {"gpt_neox", "llama"}) {
    pc::TrainOptions a = Tiny(dir + "/a-" + arch), b = Tiny(dir + "/b-" + arch);
    a.arch = b.arch = arch;
    b.parallel_scale = 1.0;  // explicitly, as the CLI's default
    auto ra = pc::TrainModel(a);
    auto rb = pc::TrainModel(b);
    CHECK(ra.final_valid_loss == rb.final_valid_loss);
    CHECK(pc::fs::ReadFile(a.out + "/model.safetensors") == pc::fs::ReadFile(b.out + "/model.safetensors"));
    auto config = nlohmann::json::parse(pc::fs::ReadFile(a.out + "/config.json"));
    CHECK_FALSE(config.contains("perpcomp_parallel_scale"));
    // The output is a normal model folder that loads and evaluates.
    auto model = pc::Model::Load(a.out);
    CHECK(model->config().model_type == arch);
    CHECK(std::isfinite(ra.final_valid_loss));
  }
}

TEST_CASE("train: --parallel-scale is stored and applied on load", "[train]") {
  std::string dir = pc::test::TempDir("train-ps");
  pc::TrainOptions o = Tiny(dir + "/ps");
  o.parallel_scale = 0.5;
  pc::TrainModel(o);
  auto config = nlohmann::json::parse(pc::fs::ReadFile(o.out + "/config.json"));
  CHECK(config["perpcomp_parallel_scale"] == 0.5);
  auto model = pc::Model::Load(o.out);
  CHECK(model->config().parallel_scale == 0.5);
  // The same weights with scale 1 compute a different function.
  nlohmann::json plain = config;
  plain.erase("perpcomp_parallel_scale");
  pc::fs::WriteFileAtomic(o.out + "/config.json", plain.dump());
  auto unscaled = pc::Model::Load(o.out);
  at::Tensor tokens = at::randint(0, model->config().vocab_size, {1, 12}, at::kLong);
  CHECK_FALSE(model->Forward(tokens).equal(unscaled->Forward(tokens)));
}

TEST_CASE("train: bad input is refused before any work, nothing half-written", "[train]") {
  std::string dir = pc::test::TempDir("train-bad");
  pc::TrainOptions o = Tiny(dir + "/out");
  o.text = {dir + "/missing.txt"};
  CHECK_THAT(TrainError(o), Contains("does not exist"));
  std::ofstream(dir + "/empty.txt").close();
  o.text = {dir + "/empty.txt"};
  CHECK_THAT(TrainError(o), Contains("is empty"));
  o = Tiny(dir + "/out");
  o.vocab_size = 100;
  CHECK_THAT(TrainError(o), Contains("256"));
  o = Tiny(dir + "/out");
  o.context = 100000;
  CHECK_THAT(TrainError(o), Contains("--context 100000 is longer than the training data"));
  CHECK_FALSE(pc::fs::Exists(dir + "/out"));
  pc::fs::MakeDirs(dir + "/exists");
  o = Tiny(dir + "/exists");
  CHECK_THAT(TrainError(o), Contains("already exists") && Contains("--overwrite"));
  std::ofstream(dir + "/file").close();
  o = Tiny(dir + "/file/sub");
  CHECK_THAT(TrainError(o), Contains("is not a folder"));
  o = Tiny(dir + "/out");
  o.arch = "bloom";
  CHECK_THAT(TrainError(o), Contains("--arch 'bloom'"));
}
