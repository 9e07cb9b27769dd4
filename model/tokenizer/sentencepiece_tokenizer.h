// model/tokenizer/sentencepiece_tokenizer.h — a sentencepiece tokenizer.model through libsentencepiece
// (library pc_tokenizer_spm, entry point libsentencepiece.h). NOT part of pc_tokenizer: Debian 12's
// libsentencepiece crashes at start in any process that also loads LibTorch, so only the tokenizer
// tests and bench link it, as an independent check of the native reader (sp_model_proto.h).
//
// Encode: the text is first split on the control and unknown pieces (<s>, </s>, <unk>) that occur
// literally, as Hugging Face's Llama tokenizer matches its special added tokens; each remaining piece
// is encoded by sentencepiece (which adds its dummy-prefix "▁" to each, as Hugging Face's legacy
// Llama tokenizer does). prefix_ids = {bos} when the model has one.
// Speed: sentencepiece is slow on one long input (3 s for WikiText-2 test), so the text is cut
// before every space that follows another character and is not the last character, each part
// after a cut is encoded without that space (the dummy prefix stands for it), and repeated parts
// (words) come from a per-call cache. The ids are the same whenever no piece has "▁" after
// another character, the normalizer keeps spaces, and "▁" is a piece or bytes fall back (so no
// unknown piece at a cut is fused with its neighbour) — Llama's settings; checked at load, else no cuts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/tokenizer/added_vocab.h"
#include "model/tokenizer/sp_model_proto.h"
#include "model/tokenizer/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace pc::tok {

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(const std::string& model_path);
  ~SentencePieceTokenizer() override;

  std::vector<int32_t> Encode(const std::string& text) const override;
  std::string Decode(const std::vector<int32_t>& ids, bool skip_special = true) const override;
  int32_t vocab_size() const override;
  std::string IdToPiece(int32_t id) const override;
  int32_t PieceToId(const std::string& piece) const override;
  bool IsSpecial(int32_t id) const override;

 private:
  std::string path_;
  SpModelInfo info_;
  std::unique_ptr<sentencepiece::SentencePieceProcessor> sp_;
  void EncodePlain(const std::string& text, std::vector<int32_t>* ids) const;

  AddedVocabulary specials_;
  bool cut_at_spaces_ = false;
};

}  // namespace pc::tok
