#include "tests/metrics/metrics_test_util.h"

#include <catch2/catch.hpp>

#include <mutex>

#include "core/fs.h"
#include "model/llama2c.h"
#include "model/tokenizer/tokenizer.h"
#include "tests/model/model_test_util.h"
#include "tests/test_support.h"

namespace pc::test {

std::string RandomModelDir(const std::string& arch, const std::string& extra) { return MakeReferenceModel(arch, extra); }

std::string EditedCopy(const std::string& src, const std::function<void(Model&)>& edit, const std::string& name) {
  auto m = Model::Load(src);
  edit(*m);
  std::string dir = TempDir("copy-" + name) + "/model";
  m->Save(dir);
  return dir;
}

std::string Stories260KDir() {
  static std::once_flag once;
  static std::string dir;
  std::call_once(once, [] {
    std::string bin = SharedPath("models/stories260K/stories260K.bin");
    if (bin.empty() || !fs::Exists(bin)) return;
    auto model = ConvertLlama2c(bin);
    auto tok = TokenizerFromLlama2c(SharedPath("models/stories260K/tok512.bin"),
                                    static_cast<int32_t>(model->config().vocab_size));
    dir = TempDir("stories260K") + "/model";
    model->Save(dir, {}, [&](const std::string& staged) { SaveTokenizerFiles(*tok, staged); });
  });
  return dir;
}

void FakeQuantize(Model& model, int bits, int64_t group) {
  const double qmax = (1 << (bits - 1)) - 1;
  for (Linear* l : model.Linears(/*include_lm_head=*/false)) {
    at::Tensor w = l->weight;  // (out, in)
    const int64_t in = w.size(1);
    for (int64_t g0 = 0; g0 < in; g0 += group) {
      at::Tensor g = w.narrow(1, g0, std::min(group, in - g0));
      at::Tensor scale = g.abs().amax(1, /*keepdim=*/true).clamp_min(1e-12) / qmax;
      g.copy_((g / scale).round().clamp(-qmax - 1, qmax) * scale);
    }
  }
}

void AddWeightNoise(Model& model, double sigma, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  for (Linear* l : model.Linears(/*include_lm_head=*/false)) {
    at::Tensor w = l->weight;
    double rms = w.norm().item<double>() / std::sqrt(static_cast<double>(w.numel()));
    w.add_(at::randn(w.sizes(), gen, w.options()) * (sigma * rms));
  }
}

int EntryOf(const MeasureResult& r, SiteType type, int layer, int index, ErrorKind kind, Frame frame) {
  for (size_t i = 0; i < r.sites.size(); ++i) {
    const SiteEntry& e = r.sites[i];
    if (e.type == type && e.layer == layer && e.index == index && e.kind == kind && e.frame == frame) {
      return static_cast<int>(i);
    }
  }
  FAIL("no site entry " << SiteTypeName(type) << " layer " << layer << " index " << index);
  return -1;
}

const std::string& StoryText() {
  static const std::string text =
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the sun. One day, she "
      "saw a big red ball in the park. She ran to the ball and kicked it very hard. The ball went up high and "
      "fell into a tree. Lily was sad. She wanted her ball back.\n\n"
      "Her friend Tom came to help. Tom was tall and strong. He climbed the tree and got the ball. Lily was so "
      "happy. She said, \"Thank you, Tom! You are a good friend.\" Tom smiled and they played with the ball all "
      "day long.\n\n"
      "Once upon a time, there was a small dog named Max. Max liked to run and jump. One day, Max found a bone "
      "in the garden. He was very happy. He wanted to show the bone to his mom. Max ran to his mom and gave her "
      "the bone. His mom was proud of him. They sat together in the warm sun and ate a big lunch.\n\n"
      "One day, a boy named Ben went to the store with his mom. He saw a toy car on the shelf. The car was blue "
      "and shiny. Ben asked his mom, \"Can I have the car, please?\" His mom said, \"Yes, but you must be good.\" "
      "Ben was very good. He helped his mom carry the bags. When they got home, Ben played with his new car. He "
      "was very happy.\n\n"
      "There was a cat named Kitty. Kitty liked to sleep on the bed. One day, Kitty saw a bird outside the "
      "window. The bird was singing a happy song. Kitty wanted to play with the bird. She jumped on the window, "
      "but the bird flew away. Kitty was sad, but then she saw her friend, the dog. They played together in the "
      "garden until the sun went down.\n\n"
      "Once upon a time, in a big forest, there lived a little bunny. The bunny liked to hop and eat carrots. "
      "One day, the bunny met a bear. The bear was big but kind. The bear said, \"Do you want to be my "
      "friend?\" The bunny said, \"Yes!\" They became best friends and played in the forest every day.\n";
  return text;
}

}  // namespace pc::test
