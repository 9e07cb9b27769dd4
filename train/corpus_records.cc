#include "train/corpus_records.h"

#include <algorithm>
#include <cmath>

namespace pc::corpus {

namespace {
const char* NumberName(Number n) { return n == Number::kSg ? "sg" : "pl"; }

std::string JoinRange(const std::vector<std::string>& words, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) out += ' ';
    out += words[i];
  }
  return out;
}

nlohmann::ordered_json Histogram(const std::vector<int64_t>& h) {
  return {{"0", h[0]}, {"1", h[1]}, {"2", h[2]}, {"3+", h[3]}};
}
}  // namespace

double Round4(double v) { return std::round(v * 1e4) / 1e4; }

nlohmann::ordered_json PairRecord(const Pair& pair, const std::string& uid, int64_t pair_id) {
  const Agreement& a = pair.parse.agreements[pair.agreement];
  const std::vector<std::string> good = RenderWords(pair.parse);
  const std::vector<std::string> bad = RenderWords(FlipVerb(pair.parse, a));
  nlohmann::ordered_json j;
  j["sentence_good"] = pair.good;
  j["sentence_bad"] = pair.bad;
  j["one_prefix_prefix"] = JoinRange(good, 0, static_cast<size_t>(a.verb));
  j["one_prefix_word_good"] = good[a.verb];
  j["one_prefix_word_bad"] = bad[a.verb];
  j["dependency_length"] = a.verb - a.subject;
  j["field"] = "morphology";
  j["linguistics_term"] = "subject_verb_agreement";
  j["UID"] = uid;
  j["simple_LM_method"] = true;
  j["one_prefix_method"] = true;
  j["two_prefix_method"] = false;
  j["lexically_identical"] = false;
  j["pairID"] = std::to_string(pair_id);
  j["attractors"] = Attractors(pair.parse, a);
  j["intervening_nouns"] = InterveningNouns(pair.parse, a);
  j["construction"] = Construction(pair.parse, a);
  j["subject"] = good[a.subject];
  j["subject_index"] = a.subject;
  j["verb_index"] = a.verb;
  j["subject_number"] = NumberName(a.num);
  return j;
}

nlohmann::ordered_json DepthRecord(const Sentence& s) {
  const std::vector<std::string> words = RenderWords(s);
  nlohmann::ordered_json j;
  j["sentence"] = Render(s);
  j["words"] = words;
  std::vector<int> depth;
  std::vector<std::string> pos;
  for (const Word& w : s.words) {
    depth.push_back(w.depth);
    pos.push_back(SymName(Lexicon()[w.entry].cls));
  }
  j["depth"] = depth;
  j["pos"] = pos;
  nlohmann::ordered_json deps = nlohmann::ordered_json::array();
  for (const Agreement& a : s.agreements) {
    deps.push_back({{"subject", a.subject}, {"verb", a.verb}, {"number", NumberName(a.num)},
                    {"attractors", Attractors(s, a)}, {"main", a.main}, {"coordinated", a.coordinated}});
  }
  j["agreements"] = deps;
  j["tree"] = RenderTree(s);
  return j;
}

void TextStats::Add(const Sentence& s, const std::vector<std::string>& words) {
  ++sentences_;
  const size_t n = s.words.size();
  words_ += static_cast<int64_t>(n);
  if (length_hist_.size() <= n) length_hist_.resize(n + 1, 0);
  ++length_hist_[n];
  for (const Word& w : s.words) {
    depth_sum_ += w.depth;
    max_depth_ = std::max<int>(max_depth_, w.depth);
  }
  for (const std::string& w : words) vocabulary_.insert(w);
  if (rule_uses_.empty()) rule_uses_.resize(Rules().size(), 0);
  for (const Node& node : s.nodes) ++rule_uses_[node.rule];
  for (const Agreement& a : s.agreements) {
    ++dependencies_;
    const int k = std::min(Attractors(s, a), 3);
    ++all_attractors_[k];
    if (a.main) {
      ++main_attractors_[k];
      coordinated_subjects_ += a.coordinated;
      ++main_constructions_[a.coordinated ? "coordinated_subject" : Construction(s, a)];
    }
  }
}

nlohmann::ordered_json TextStats::LengthJson() const {
  nlohmann::ordered_json j;
  j["mean_words"] = Round4(sentences_ > 0 ? static_cast<double>(words_) / sentences_ : 0.0);
  auto percentile = [&](double q) {
    const int64_t rank = static_cast<int64_t>(std::ceil(q * sentences_));
    int64_t cum = 0;
    for (size_t len = 0; len < length_hist_.size(); ++len) {
      cum += length_hist_[len];
      if (cum >= std::max<int64_t>(rank, 1)) return static_cast<int64_t>(len);
    }
    return static_cast<int64_t>(length_hist_.empty() ? 0 : length_hist_.size() - 1);
  };
  j["min"] = percentile(0.0);
  j["p05"] = percentile(0.05);
  j["p50"] = percentile(0.5);
  j["p95"] = percentile(0.95);
  j["max"] = percentile(1.0);
  int64_t mid = 0;
  for (size_t len = 5; len < length_hist_.size() && len <= 25; ++len) mid += length_hist_[len];
  j["share_5_to_25_words"] = Round4(sentences_ > 0 ? static_cast<double>(mid) / sentences_ : 0.0);
  nlohmann::ordered_json hist = nlohmann::ordered_json::object();
  for (size_t len = 0; len < length_hist_.size(); ++len) {
    if (length_hist_[len] > 0) hist[std::to_string(len)] = length_hist_[len];
  }
  j["histogram"] = hist;
  return j;
}

nlohmann::ordered_json TextStats::AttractorJson() const {
  nlohmann::ordered_json j;
  j["dependencies"] = dependencies_;
  j["dependencies_per_sentence"] = Round4(sentences_ > 0 ? static_cast<double>(dependencies_) / sentences_ : 0.0);
  j["main_dependency_attractors"] = Histogram(main_attractors_);
  j["all_dependency_attractors"] = Histogram(all_attractors_);
  j["coordinated_main_subjects"] = coordinated_subjects_;
  // Constructions between the main subject and its verb; those under 0.5% of sentences summed as "other".
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  int64_t other = 0;
  for (const auto& [name, count] : main_constructions_) {
    if (count * 200 >= sentences_) {
      c[name] = count;
    } else {
      other += count;
    }
  }
  c["other"] = other;
  j["main_dependency_constructions"] = c;
  return j;
}

nlohmann::ordered_json TextStats::RuleJson() const {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (size_t i = 0; i < Rules().size(); ++i) j[Rules()[i].name] = i < rule_uses_.size() ? rule_uses_[i] : 0;
  return j;
}

nlohmann::ordered_json TextStats::DepthJson() const {
  return {{"mean_word_depth", Round4(words_ > 0 ? static_cast<double>(depth_sum_) / words_ : 0.0)},
          {"max_word_depth", max_depth_}};
}

}  // namespace pc::corpus
