#include "probes/norm_depth.h"

#include "calibration/windows.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/strings.h"

namespace pc::probes {

std::vector<DepthSentence> ReadDepthSentences(const std::string& path) {
  PC_CHECK(fs::Exists(path), "--depths: '", path, "' does not exist");
  const std::vector<std::string> lines = Split(fs::ReadFile(path), '\n');
  std::vector<DepthSentence> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (Trim(lines[i]).empty()) continue;
    const std::string where = Str(path, " line ", i + 1);
    nlohmann::json obj = ParseJson(lines[i], where);
    PC_CHECK(obj.is_object(), where, ": expected a JSON object, got ", obj.type_name());
    DepthSentence s;
    s.sentence = JsonString(obj, "sentence", where);
    const nlohmann::json& words = JsonAt(obj, "words", where);
    const nlohmann::json& depth = JsonAt(obj, "depth", where);
    PC_CHECK(words.is_array() && depth.is_array(), where, ": 'words' and 'depth' must be arrays");
    PC_CHECK(words.size() == depth.size() && !words.empty(), where, ": ", words.size(), " words but ", depth.size(),
             " depths");
    for (size_t k = 0; k < words.size(); ++k) {
      PC_CHECK(words[k].is_string(), where, ": words[", k, "] is not a string");
      PC_CHECK(depth[k].is_number_integer(), where, ": depth[", k, "] is not an integer");
      s.words.push_back(words[k].get<std::string>());
      s.depth.push_back(depth[k].get<int64_t>());
    }
    out.push_back(std::move(s));
  }
  PC_CHECK(!out.empty(), "--depths: '", path, "' holds no sentences");
  return out;
}

std::vector<int64_t> AlignWordEnds(const Tokenizer& tokenizer, const DepthSentence& s) {
  const std::vector<int32_t> full = tokenizer.Encode(s.sentence);
  std::vector<int64_t> ends;
  std::string prefix;
  size_t prev = 0;
  for (size_t k = 0; k < s.words.size(); ++k) {
    prefix += (k == 0 ? "" : " ") + s.words[k];
    const std::vector<int32_t> ids = tokenizer.Encode(prefix);
    if (ids.size() <= prev || ids.size() > full.size() || !std::equal(ids.begin(), ids.end(), full.begin())) return {};
    ends.push_back(static_cast<int64_t>(ids.size()) - 1);
    prev = ids.size();
  }
  return ends;
}

namespace {
class BlockNorms : public ForwardHooks {
 public:
  bool Wants(SiteKind kind) const override { return kind == SiteKind::kBlockOutput; }
  at::Tensor At(const Site& site, const at::Tensor& x, const at::Tensor&) override {
    if (static_cast<int>(norms.size()) <= site.layer) norms.resize(site.layer + 1);
    norms[site.layer] = x.to(at::kDouble).norm(2, {-1});  // (B, T)
    return x;
  }
  std::vector<at::Tensor> norms;
};
}  // namespace

NormDepthData CollectNormDepth(Model& model, const Tokenizer& tokenizer, const std::vector<DepthSentence>& sentences,
                               int64_t max_sentences) {
  const int64_t start = ScoringStartId(tokenizer);
  const int L = model.num_layers();
  NormDepthData out;
  out.norm.resize(L);
  struct Item {
    std::vector<int64_t> seq, ends;
    const DepthSentence* s;
  };
  std::vector<Item> items;
  const size_t n = max_sentences > 0 ? std::min<size_t>(max_sentences, sentences.size()) : sentences.size();
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t> ends = AlignWordEnds(tokenizer, sentences[i]);
    if (ends.empty()) {
      ++out.unaligned;
      continue;
    }
    Item it;
    it.seq.push_back(start);
    for (int32_t id : tokenizer.Encode(sentences[i].sentence)) it.seq.push_back(id);
    if (model.arch().pos == PosKind::kLearned && static_cast<int64_t>(it.seq.size()) > model.config().max_pos) {
      ++out.unaligned;
      continue;
    }
    for (int64_t& e : ends) e += 1;  // positions in the scored sequence
    it.ends = std::move(ends);
    it.s = &sentences[i];
    items.push_back(std::move(it));
  }
  PC_CHECK(!items.empty(), "--depths: no sentence could be aligned to the model's tokens (", out.unaligned,
           " tried); see docs/SCIENCE.md");
  at::NoGradGuard no_grad;
  const size_t batch = 64;
  for (size_t i0 = 0; i0 < items.size(); i0 += batch) {
    const size_t i1 = std::min(items.size(), i0 + batch);
    size_t T = 0;
    for (size_t i = i0; i < i1; ++i) T = std::max(T, items[i].seq.size());
    at::Tensor tokens = at::full({static_cast<int64_t>(i1 - i0), static_cast<int64_t>(T)}, start, at::kLong);
    auto tk = tokens.accessor<int64_t, 2>();
    for (size_t i = i0; i < i1; ++i) {
      for (size_t t = 0; t < items[i].seq.size(); ++t) tk[i - i0][t] = items[i].seq[t];
    }
    BlockNorms hooks;
    model.Forward(tokens, &hooks);  // right padding: a causal model's real positions are unaffected
    std::vector<at::TensorAccessor<double, 2>> norms;
    for (int l = 0; l < L; ++l) {
      hooks.norms[l] = hooks.norms[l].contiguous();
      norms.push_back(hooks.norms[l].accessor<double, 2>());
    }
    for (size_t i = i0; i < i1; ++i) {
      const Item& it = items[i];
      for (size_t k = 0; k < it.ends.size(); ++k) {
        out.depth.push_back(static_cast<double>(it.s->depth[k]));
        out.word_index.push_back(static_cast<double>(k));
        out.token_position.push_back(static_cast<double>(it.ends[k]));
        for (int l = 0; l < L; ++l) out.norm[l].push_back(norms[l][i - i0][it.ends[k]]);
      }
    }
  }
  out.sentences = static_cast<int64_t>(items.size());
  return out;
}

}  // namespace pc::probes
