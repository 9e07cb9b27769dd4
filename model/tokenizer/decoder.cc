#include "model/tokenizer/decoder.h"

#include "core/error.h"
#include "model/tokenizer/regex.h"
#include "model/tokenizer/spec_util.h"
#include "model/tokenizer/utf8.h"

namespace pc::tok {

namespace {
constexpr const char* kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Length of the valid UTF-8 sequence at p[0..n), or -(length of its maximal invalid subpart).
int Utf8SequenceAt(const unsigned char* p, size_t n) {
  unsigned char c = p[0];
  if (c < 0x80) return 1;
  int need;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the first continuation byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 2;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 3;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return -1;
  }
  int k = 0;
  while (k < need && static_cast<size_t>(k + 1) < n) {
    unsigned char b = p[k + 1];
    bool ok = k == 0 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) break;
    ++k;
  }
  return k == need ? need + 1 : -(k + 1);
}
}  // namespace

std::string Utf8Lossy(const std::string& bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n;) {
    int len = Utf8SequenceAt(p + i, n - i);
    if (len > 0) {
      out.append(bytes, i, len);
      i += len;
    } else {
      out += kReplacementChar;
      i += -len;
    }
  }
  return out;
}

namespace {

class ByteLevelDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::Get();
    std::string bytes, token_bytes;
    for (const std::string& t : *tokens) {
      token_bytes.clear();
      bool mapped = true;
      for (size_t pos = 0; pos < t.size() && mapped;) {
        int b = alphabet.Decode(NextCodePoint(t, &pos));
        if (b < 0) mapped = false;
        token_bytes.push_back(static_cast<char>(b));
      }
      bytes += mapped ? token_bytes : t;  // a token outside the alphabet (an added token) stays as it is
    }
    tokens->assign(1, Utf8Lossy(bytes));
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool drop_first) : replacement_(std::move(replacement)), drop_first_(drop_first) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (size_t i = 0; i < tokens->size(); ++i) {
      std::string& t = (*tokens)[i];
      std::string out;
      for (size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          if (!(i == 0 && drop_first_)) out += ' ';  // as HF: every "▁" of the first token is dropped
          pos += replacement_.size();
        } else {
          out += t[pos++];
        }
      }
      t.swap(out);
    }
  }

 private:
  std::string replacement_;
  bool drop_first_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (std::string& t : *tokens) {
      std::string out;
      size_t prev = 0;
      for (const auto& [start, end] : pattern_.FindAll(t)) {
        out.append(t, prev, start - prev);
        out += content_;
        prev = end;
      }
      out.append(t, prev, std::string::npos);
      t.swap(out);
    }
  }

 private:
  Pattern pattern_;
  std::string content_;
};

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class ByteFallbackDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::vector<std::string> out;
    std::string pending;  // bytes of consecutive <0xNN> tokens
    auto flush = [&] {
      if (pending.empty()) return;
      if (Utf8Lossy(pending) == pending) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending.size(); ++i) out.push_back(kReplacementChar);  // one per byte, as HF
      }
      pending.clear();
    };
    for (std::string& t : *tokens) {
      int hi = t.size() == 6 ? HexDigit(t[3]) : -1, lo = t.size() == 6 ? HexDigit(t[4]) : -1;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' && hi >= 0 && lo >= 0) {
        pending.push_back(static_cast<char>(hi * 16 + lo));
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens->swap(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void DecodeChain(std::vector<std::string>* tokens) const override {
    std::string all;
    for (const auto& t : *tokens) all += t;
    tokens->assign(1, std::move(all));
  }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, int64_t start, int64_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    const size_t n = content_.size();
    for (std::string& t : *tokens) {
      size_t begin = 0, end = t.size();
      for (int64_t i = 0; i < start_ && end - begin >= n && t.compare(begin, n, content_) == 0; ++i) begin += n;
      for (int64_t i = 0; i < stop_ && end - begin >= n && t.compare(end - n, n, content_) == 0; ++i) end -= n;
      t = t.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  int64_t start_, stop_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void DecodeChain(std::vector<std::string>* tokens) const override {
    for (const auto& p : parts_) p->DecodeChain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> MakeDecoder(const nlohmann::json& spec, const std::string& where) {
  if (spec.is_null()) return nullptr;
  std::string type = SpecType(spec, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    bool add_prefix_space = SpecBool(spec, "add_prefix_space", true, where);
    std::string scheme = SpecString(spec, "prepend_scheme", add_prefix_space ? "always" : "never", where);
    return std::make_unique<MetaspaceDecoder>(SpecString(spec, "replacement", "\xE2\x96\x81", where), scheme != "never");
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(SpecPattern(spec, "pattern", where), SpecString(spec, "content", "", where));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    std::string content = SpecString(spec, "content", " ", where);
    PC_CHECK(!content.empty(), where, ": \"content\" is empty");
    int64_t start = SpecInt(spec, "start", 0, where), stop = SpecInt(spec, "stop", 0, where);
    PC_CHECK(start >= 0 && stop >= 0, where, ": \"start\" and \"stop\" must be >= 0");
    return std::make_unique<StripDecoder>(content, start, stop);
  }
  if (type == "Sequence") {
    const auto& list = SpecArray(spec, "decoders", where);
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i) {
      auto part = MakeDecoder(list[i], Str(where, ".decoders[", i, "]"));
      if (part != nullptr) parts.push_back(std::move(part));
    }
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  ThrowUnsupported("decoder", type, where,
                   {"ByteLevel", "Metaspace", "Replace", "ByteFallback", "Fuse", "Strip", "Sequence"});
}

}  // namespace pc::tok
