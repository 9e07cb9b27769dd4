// model/tokenizer/tokenizer.h — text <-> token ids, as the model's Hugging Face tokenizer does.
//
// Kinds:
//   "bpe-bytelevel"       tokenizer.json BPE with a ByteLevel pre-tokenizer (GPT-2, GPT-NeoX/Pythia, OPT)
//   "bpe-sentencepiece"   tokenizer.json BPE in sentencepiece style (Llama/Mistral: "▁" for spaces,
//                         byte_fallback); also what a sentencepiece tokenizer.model and a llama2.c
//                         tokenizer file load as
//   "bpe"                 any other tokenizer.json BPE
//   "sentencepiece-model" a tokenizer.model through libsentencepiece — only from pc_tokenizer_spm
//                         (libsentencepiece.h), which tests and the bench use as a cross-check
// tokenizer.model is read natively (sp_model_proto.h), never through libsentencepiece: Debian 12's
// libsentencepiece crashes at start in any process that also loads LibTorch (protobuf 3.14 generated
// code against the system's libprotobuf 3.21). A sentencepiece BPE model with Llama's normalizer
// settings becomes the tokenizer.json form Hugging Face's LlamaConverter writes, which gives
// libsentencepiece's ids (tests/tokenizer); other models (Unigram, nmt_nfkc, ...) are an error.
// Input text must be valid UTF-8 (Encode throws naming the byte offset otherwise). Decode returns
// valid UTF-8: byte sequences that do not form UTF-8 become U+FFFD, as Hugging Face does.
// All methods are const and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pc {

class Tokenizer {
 public:
  virtual ~Tokenizer();

  // Plain text -> ids, WITHOUT the post-processor's special tokens (no BOS). Added/special tokens
  // that occur literally in the text are matched as Hugging Face tokenizers does.
  virtual std::vector<int32_t> Encode(const std::string& text) const = 0;
  // ids -> text through the decoder; special tokens skipped when skip_special. Ids out of range throw.
  virtual std::string Decode(const std::vector<int32_t>& ids, bool skip_special = true) const = 0;
  virtual int32_t vocab_size() const = 0;
  virtual std::string IdToPiece(int32_t id) const = 0;             // throws when out of range
  virtual int32_t PieceToId(const std::string& piece) const = 0;   // -1 if absent
  // True for special tokens (those Decode skips).
  virtual bool IsSpecial(int32_t id) const = 0;

  // Special ids, -1 when the tokenizer has none.
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t unk_id() const { return unk_id_; }
  // Ids the post-processor puts before a single sequence (Llama: {BOS}; GPT-NeoX/GPT-2: {}; OPT: {</s>=2}).
  const std::vector<int32_t>& prefix_ids() const { return prefix_ids_; }
  // Ids it puts after a single sequence (RoBERTa-style processors: {</s>}; usually {}).
  // EncodeWithSpecial does not add them (docs/METRICS.md: special tokens once, at the start).
  const std::vector<int32_t>& suffix_ids() const { return suffix_ids_; }
  std::vector<int32_t> EncodeWithSpecial(const std::string& text) const;  // prefix_ids + Encode(text)
  const std::string& kind() const { return kind_; }
  // The tokenizer.model bytes this tokenizer was read from ("" when not from one); SaveTokenizerFiles
  // writes them back.
  const std::string& sentencepiece_model() const { return sentencepiece_model_; }

 protected:
  explicit Tokenizer(std::string kind) : kind_(std::move(kind)) {}
  // Checks every special id is in range (-1 allowed); `where` names the source for messages.
  void CheckSpecialIds(const std::string& where) const;

  std::string kind_;
  int32_t bos_id_ = -1, eos_id_ = -1, unk_id_ = -1;
  std::vector<int32_t> prefix_ids_, suffix_ids_;
  std::string sentencepiece_model_;
};

// A folder with tokenizer.json (preferred), tokenizer.model, or vocab.json + merges.txt (GPT-2/OPT
// style, converted as Hugging Face transformers does: vocab_merges.h), or a path to a
// tokenizer.json or tokenizer.model.
// tokenizer_config.json and config.json beside a tokenizer.json supply bos/eos ids that
// tokenizer.json's post-processor does not settle. A tokenizer.model loads as
// TokenizerFromSentencePieceBpe does; so does a folder whose tokenizer.json has a model type other
// than BPE but which also holds a tokenizer.model.
std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& path);

// llama2.c's tokenizer file (int32 max_token_length, then {float32 score, int32 len, bytes} per id;
// ids 0,1,2 = <unk>,<s>,</s>, 3..258 = <0x00>..<0xFF>) as a Llama-style "bpe-sentencepiece"
// tokenizer whose Encode equals llama2.c's encode() (without BOS). vocab_size -1: as many
// entries as the file holds.
std::unique_ptr<Tokenizer> TokenizerFromLlama2c(const std::string& tok_bin_path, int32_t vocab_size = -1);

// A sentencepiece BPE tokenizer.model, read without libsentencepiece, as the tokenizer.json form
// Hugging Face's LlamaConverter writes ("bpe-sentencepiece"; the ids of libsentencepiece on Hugging
// Face's reference texts and on WikiText-2). bos/eos/unk as libsentencepiece finds them (the pieces
// trainer_spec names, "<s>", "</s>", "<unk>" by default). The file's bytes are kept
// (sentencepiece_model()). A model that does not convert (Unigram, another normalizer) is an error
// naming the file and the reason.
std::unique_ptr<Tokenizer> TokenizerFromSentencePieceBpe(const std::string& model_path);

// Writes tokenizer.json for a BPE tokenizer (a "sentencepiece-model" one is converted, BPE models
// only). Loading it back gives the same Encode and Decode.
void SaveTokenizerJson(const Tokenizer& tokenizer, const std::string& path);
// Writes <dir>/tokenizer.json, tokenizer_config.json and special_tokens_map.json, and tokenizer.model
// when the tokenizer was read from one (its original bytes), where Hugging Face transformers looks
// for them. A "sentencepiece-model" tokenizer whose model does not convert gets no tokenizer.json.
void SaveTokenizerFiles(const Tokenizer& tokenizer, const std::string& dir);

}  // namespace pc
