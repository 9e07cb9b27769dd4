// model/gguf_tokenizer.h — a GGUF file's tokenizer (tokenizer.ggml.*) as a Hugging Face
// tokenizer.json, without LibTorch.
//
// The form is the one Hugging Face transformers builds from the same file when it loads it
// (`AutoTokenizer.from_pretrained(dir, gguf_file=...)`, transformers' integrations/ggml.py), so
// that perpcomp's ids and transformers' ids agree (tests/model/gguf_convert_test.cc):
//   - general.architecture llama (tokenizer.ggml.model "llama", sentencepiece-style): BPE with
//     byte_fallback and fuse_unk over tokenizer.ggml.tokens, merges from tokenizer.ggml.merges or,
//     when absent, from the scores (every split of a token into two tokens, by the token's score,
//     then the parts' scores); normalizer Prepend("▁") (unless tokenizer.ggml.add_space_prefix is
//     false) + Replace(" ", "▁"); decoder Replace/ByteFallback/Fuse/Strip; "<bos> $A" when
//     tokenizer.ggml.add_bos_token (default true).
//   - llama with a byte-level vocabulary (tokenizer.ggml.model "gpt2": Llama 3, SmolLM): the same
//     BPE with a ByteLevel pre-tokenizer (GPT-2's regex) and an empty normalizer.
//   - qwen2, qwen3: byte-level BPE, NFC, Qwen2's split regex, no unk.
//   - gpt2, gptneox: byte-level BPE with GPT-2's pre-tokenizer.
// Tokens of type 3 (control) become special added tokens (llama and gptneox; Qwen2's three fixed
// ones for qwen2; for gpt2 the bos/eos/unk/pad tokens, as transformers' tokenizer class adds them). tokenizer.ggml.pre (llama.cpp's pre-tokenizer
// name) is recorded in tokenizer_config.json but, as in transformers, not used: transformers'
// conversion ignores it, and matching its ids is what makes the two evaluations comparable.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "model/gguf_format.h"

namespace pc {

struct GgufTokenizerFiles {
  nlohmann::json tokenizer;         // tokenizer.json
  nlohmann::json tokenizer_config;  // tokenizer_config.json (special tokens, chat template)
  int64_t vocab_size = 0;
  int64_t bos_id = -1, eos_id = -1;
};

// Errors name the file and the key (missing tokens, merges that are not "a b", ids out of range,
// duplicate tokens, token types of the wrong length, an unsupported tokenizer.ggml.model).
GgufTokenizerFiles GgufTokenizerJson(const GgufFile& file);

// The inverse, for the GGUF writer (model/gguf_export.h): a Hugging Face folder's tokenizer.json (a
// BPE model) and tokenizer_config.json as llama.cpp's tokenizer.ggml.* metadata.
//   - a ByteLevel pre-tokenizer or decoder: tokenizer.ggml.model "gpt2" with tokens and merges;
//     tokenizer.ggml.pre from tokenizer_config.json's perpcomp_gguf_tokenizer.pre (a folder converted
//     from GGUF), else "qwen2" for qwen2/qwen3, else "default";
//   - byte_fallback BPE (sentencepiece-style): "llama" with tokens, merges and scores: a token made by
//     merge r scores −r, every other token −(merges + 1) (llama.cpp's SPM tokenizer merges by score,
//     so the order of the merges is kept); add_space_prefix from the normalizer's Prepend("▁").
// token_type: 3 (control) for the special added tokens, 6 (byte) for <0xXX> tokens of a llama
// vocabulary, 2 for unk, 1 otherwise; ids missing below `vocab_size` (the embedding's rows) become
// "[PAD<id>]" tokens of type 5 (unused), as llama.cpp's converter pads. bos/eos/unk/pad ids from
// tokenizer_config.json (the config's bos/eos ids when it names none), add_bos_token from it or the
// post-processor, the chat template. Errors name the file and what is not convertible (a WordPiece
// or Unigram model, a folder with only tokenizer.model).
std::vector<std::pair<std::string, GgufValue>> GgufTokenizerMetadata(const std::string& dir,
                                                                    const std::string& gguf_arch, int64_t vocab_size,
                                                                    int64_t config_bos, int64_t config_eos);

}  // namespace pc
