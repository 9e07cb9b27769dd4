#include "model/folded_scales.h"

#include <vector>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "model/safetensors.h"

namespace pc {
namespace {
const at::Tensor* FindIn(const std::map<std::string, at::Tensor>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? nullptr : &it->second;
}
}  // namespace

const at::Tensor* FoldedScales::Input(const std::string& linear) const { return FindIn(input, linear); }
const at::Tensor* FoldedScales::Output(const std::string& linear) const { return FindIn(output, linear); }

at::Tensor FoldedScales::Carry(const std::string& name, const at::Tensor& w) const {
  at::Tensor out = w.to(at::kDouble);
  if (const at::Tensor* s = Output(name)) {
    PC_CHECK(s->numel() == w.size(0), "folded scales: '", name, ".output' has ", s->numel(), " entries for ",
             w.size(0), " output rows");
    out = out * s->to(at::kDouble).unsqueeze(1);
  }
  if (const at::Tensor* s = Input(name)) {
    PC_CHECK(s->numel() == w.size(1), "folded scales: '", name, ".input' has ", s->numel(), " entries for ",
             w.size(1), " input columns");
    out = out * s->to(at::kDouble).unsqueeze(0);
  }
  return out;
}

FoldedScales ReadFoldedScales(const std::string& dir) {
  FoldedScales out;
  if (dir.empty()) return out;
  const std::string sub = fs::Join(dir, kFoldedScalesDir);
  if (!fs::Exists(fs::Join(sub, "model.safetensors"))) return out;
  auto ckpt = Checkpoint::Open(sub);
  for (const std::string& name : ckpt->Names()) {
    at::Tensor t = ckpt->Load(name, at::kFloat);
    PC_CHECK(t.dim() == 1, "'", sub, "': tensor '", name, "' has ", t.dim(), " dimensions, expected 1");
    PC_CHECK(at::isfinite(t).all().item<bool>() && (t > 0).all().item<bool>(), "'", sub, "': tensor '", name,
             "' holds scales that are not finite and positive");
    if (EndsWith(name, ".input")) {
      out.input[name.substr(0, name.size() - 6)] = t;
    } else if (EndsWith(name, ".output")) {
      out.output[name.substr(0, name.size() - 7)] = t;
    } else {
      out.activation[name] = t;
    }
  }
  return out;
}

void WriteFoldedScales(const std::string& dir, const FoldedScales& scales) {
  if (scales.empty()) return;
  const std::string sub = fs::Join(dir, kFoldedScalesDir);
  fs::MakeDirs(sub);
  std::vector<SafetensorsWriter::Entry> entries;
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  auto add = [&](const std::string& name, const at::Tensor& t) {
    entries.push_back({name, StDType::kF32, {t.numel()}});
    tensors.emplace_back(name, t.to(at::kFloat).reshape({-1}).contiguous());
  };
  for (const auto& [n, t] : scales.input) add(n + ".input", t);
  for (const auto& [n, t] : scales.output) add(n + ".output", t);
  for (const auto& [n, t] : scales.activation) add(n, t);
  SafetensorsWriter writer(sub, entries, ~uint64_t{0});
  for (const auto& [n, t] : tensors) writer.Write(n, t);
  writer.Finish();
}

}  // namespace pc
