#include "calibration/calib_set.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/strings.h"
#include "core/text.h"

namespace pc {

const char* WindowingName(Windowing w) { return w == Windowing::kAwq ? "awq" : "random"; }

Windowing ParseWindowing(const std::string& name, const std::string& what) {
  if (name == "awq") return Windowing::kAwq;
  if (name == "random") return Windowing::kRandom;
  PC_THROW(what, ": unknown windowing '", name, "' (supported: awq, random)");
}

uint64_t UniformBelow(uint64_t n, std::mt19937_64& rng) {
  PC_ASSERT(n > 0);
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = rng();
  } while (x >= limit);
  return x % n;
}

namespace {

// Documents of a calibration text: JSON lines -> documents; plain text -> its lines (AWQ) or
// the whole file (random windows).
std::vector<std::string> Documents(const CalibSpec& spec, std::string* sha) {
  std::vector<std::string> docs = ReadDocuments(spec.source, spec.text_field, "--calib", sha);
  if (IsJsonLinesPath(spec.source) || spec.windowing == Windowing::kRandom) return docs;
  std::vector<std::string> lines;
  for (auto& line : Split(docs[0], '\n')) {
    if (!Trim(line).empty()) lines.push_back(line);
  }
  return lines;
}

CalibSet AwqWindows(const CalibSpec& spec, const Tokenizer& tok, const std::vector<std::string>& docs) {
  std::vector<size_t> order(docs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937_64 rng(spec.seed);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[UniformBelow(i, rng)]);  // Fisher-Yates
  std::vector<int64_t> stream;
  nlohmann::json used = nlohmann::json::array();
  int64_t taken = 0, skipped_long = 0;
  for (size_t idx : order) {
    std::string line = Trim(docs[idx]);
    if (line.empty()) continue;
    std::vector<int32_t> ids = tok.EncodeWithSpecial(line);
    if (static_cast<int64_t>(ids.size()) > spec.seq_len) {
      ++skipped_long;
      continue;
    }
    stream.insert(stream.end(), ids.begin(), ids.end());
    used.push_back(idx);
    if (++taken == spec.samples) break;
  }
  PC_CHECK(taken == spec.samples, "--calib '", spec.source, "': ", spec.samples, " samples x ", spec.seq_len,
           " tokens (awq windowing) needs ", spec.samples, " non-empty documents of at most ", spec.seq_len,
           " tokens; the text has only ", taken, " (", skipped_long, " longer ones skipped)");
  const int64_t blocks = static_cast<int64_t>(stream.size()) / spec.seq_len;
  PC_CHECK(blocks >= 1, "--calib '", spec.source, "': the ", taken, " documents give ", stream.size(),
           " tokens, fewer than one block of ", spec.seq_len);
  CalibSet set;
  set.tokens = at::from_blob(stream.data(), {blocks, spec.seq_len}, at::kLong).clone();
  set.record = {{"documents_used", used}, {"documents_skipped_too_long", skipped_long},
                {"stream_tokens", stream.size()}};
  return set;
}

CalibSet RandomWindows(const CalibSpec& spec, const Tokenizer& tok, const std::vector<std::string>& docs) {
  // Tokenize every document once; keep those with more than L tokens (Wanda's condition).
  std::vector<std::vector<int32_t>> enc;
  std::vector<size_t> eligible;
  for (size_t i = 0; i < docs.size(); ++i) {
    enc.push_back(tok.EncodeWithSpecial(docs[i]));
    if (static_cast<int64_t>(enc.back().size()) > spec.seq_len) eligible.push_back(i);
  }
  PC_CHECK(!eligible.empty(), "--calib '", spec.source, "': ", spec.samples, " samples x ", spec.seq_len,
           " tokens (random windowing) needs documents longer than ", spec.seq_len,
           " tokens; none of the ", docs.size(), " is");
  std::mt19937_64 rng(spec.seed);
  at::Tensor tokens = at::empty({spec.samples, spec.seq_len}, at::kLong);
  nlohmann::json where = nlohmann::json::array();
  for (int64_t s = 0; s < spec.samples; ++s) {
    size_t doc = eligible[UniformBelow(eligible.size(), rng)];
    const auto& ids = enc[doc];
    uint64_t start = UniformBelow(ids.size() - spec.seq_len, rng);  // [0, len - L - 1] as Wanda
    auto* out = tokens[s].data_ptr<int64_t>();
    for (int64_t j = 0; j < spec.seq_len; ++j) out[j] = ids[start + j];
    where.push_back({doc, start});
  }
  CalibSet set;
  set.tokens = tokens;
  set.record = {{"windows", where}, {"eligible_documents", eligible.size()}};
  return set;
}

CalibSet SelfWindows(const CalibSpec& spec, int64_t n, const Tokenizer& tok, Model& model) {
  const int64_t L = spec.seq_len;
  int64_t start_id = tok.bos_id() >= 0 ? tok.bos_id() : tok.PieceToId("<|endoftext|>");
  if (start_id < 0) start_id = tok.eos_id();
  PC_CHECK(start_id >= 0, "--calib self: the tokenizer has no BOS or end-of-text token to start from");
  const int64_t end_id = tok.eos_id();
  std::mt19937_64 rng(spec.seed);
  at::Tensor tokens = at::empty({n, L}, at::kLong);
  at::NoGradGuard no_grad;
  const int64_t batch = std::max<int64_t>(1, std::min<int64_t>(n, 16));
  Progress progress("calibration (self-sampling)", n * L, "tokens");
  for (int64_t b0 = 0; b0 < n; b0 += batch) {
    const int64_t B = std::min(batch, n - b0);
    KvCache cache = model.MakeCache(B, L);
    at::Tensor cur = at::full({B, 1}, start_id, at::kLong);
    for (int64_t t = 0; t < L; ++t) {
      tokens.narrow(0, b0, B).select(1, t).copy_(cur.squeeze(1));
      if (t + 1 == L) break;
      ForwardContext ctx = model.MakeContext(1, 0, nullptr, &cache);
      at::Tensor probs = at::softmax(model.Forward(cur, ctx).select(1, 0).to(at::kDouble), -1).contiguous();  // (B, V)
      at::Tensor next = at::empty({B, 1}, at::kLong);
      for (int64_t r = 0; r < B; ++r) {
        int64_t prev = cur[r][0].item<int64_t>();
        if (end_id >= 0 && prev == end_id && end_id != start_id) {  // restart after an end token
          next[r][0] = start_id;
          continue;
        }
        const double* p = probs[r].data_ptr<double>();
        double u = static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0), acc = 0;
        int64_t pick = probs.size(1) - 1;
        for (int64_t i = 0; i < probs.size(1); ++i) {
          acc += p[i];
          if (u < acc) {
            pick = i;
            break;
          }
        }
        next[r][0] = pick;
      }
      cur = next;
      progress.Add(B);
    }
  }
  CalibSet set;
  set.tokens = tokens;
  set.record = {{"start_id", start_id}, {"end_id", end_id}, {"temperature", 1.0}};
  return set;
}

}  // namespace

CalibPlan ResolveCalib(const CalibSpec& spec, const ModelConfig& config) {
  CalibPlan p;
  p.source = spec.source;
  p.seq_len = spec.seq_len == 0 ? std::min<int64_t>(512, config.max_pos) : spec.seq_len;
  p.seed = spec.seed;
  int64_t n = 0;
  p.self = !spec.source.empty() && ParseSelfSpec(spec.source, "--calib", &n);
  p.samples = p.self ? n : spec.samples;
  p.windowing = p.self ? "self" : WindowingName(spec.windowing);
  return p;
}

std::string CalibPlan::Describe() const {
  std::string s = (source.empty() ? std::string("(no --calib given)") : source) + ", " + std::to_string(samples) +
                  (self ? " self-sampled windows" : " samples") + " x " + std::to_string(seq_len) + " tokens, ";
  if (!self) s += windowing + " windowing, ";
  return s + "seed " + std::to_string(seed);
}

CalibSet BuildCalibSet(const CalibSpec& spec_in, const Tokenizer& tok, Model& model) {
  const CalibPlan plan = ResolveCalib(spec_in, model.config());
  CalibSpec spec = spec_in;
  spec.seq_len = plan.seq_len;
  PC_CHECK(spec.samples > 0, "calibration samples must be positive, got ", spec.samples);
  PC_CHECK(spec.seq_len >= 2, "calibration sequence length must be at least 2, got ", spec.seq_len);
  PC_CHECK(spec.seq_len <= model.config().max_pos || model.arch().pos == PosKind::kRope,
           "calibration sequence length ", spec.seq_len, " exceeds the model's ", model.config().max_pos,
           " positions");
  PC_CHECK(!spec.source.empty(), "no calibration source: give --calib FILE or --calib self:N");
  CalibSet set;
  std::string sha;
  if (plan.self) {
    set = SelfWindows(spec, plan.samples, tok, model);
  } else {
    std::vector<std::string> docs = Documents(spec, &sha);
    set = spec.windowing == Windowing::kAwq ? AwqWindows(spec, tok, docs) : RandomWindows(spec, tok, docs);
  }
  set.record["source"] = spec.source;
  if (!sha.empty()) set.record["text_sha256"] = sha;
  set.record["windowing"] = plan.windowing;
  set.record["seed"] = spec.seed;
  set.record["samples"] = plan.samples;
  set.record["seq_len"] = spec.seq_len;
  set.record["windows_used"] = set.windows();
  set.record["tokens"] = set.windows() * spec.seq_len;
  if (!plan.self) set.record["text_field"] = spec.text_field;
  return set;
}

}  // namespace pc
