// model/tokenizer/sp_bpe_json.h — the Llama-style tokenizer.json of a sentencepiece BPE vocabulary.
//
// What Hugging Face's LlamaConverter writes: normalizer Sequence[Prepend("▁"), Replace(" ", "▁")],
// no pre-tokenizer, BPE with byte_fallback and fuse_unk, decoder Sequence[Replace("▁", " "),
// ByteFallback, Fuse, Strip(" ", 1, 0)], post-processor "<s> $A", unk/control pieces as special
// added tokens. Merges come from scores (SentencePieceExtractor): every pair (a, b) of pieces whose
// concatenation is a piece, ranked by that piece's score (descending), then its id, then the ids of
// a and b. Ranking by score is what makes rank-order merging equal sentencepiece's (and llama2.c's)
// highest-score-first merging; pairs that can never be formed are harmless.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/tokenizer/sp_model_proto.h"

namespace pc::tok {

struct SpBpeVocab {
  std::vector<SpPiece> pieces;  // by id; spaces written as "▁"
  int32_t bos_id = -1;          // the post-processor adds it when >= 0
  bool add_dummy_prefix = true;
  bool byte_fallback = true;
  // false: unknown/control pieces take part in no merge (llama2.c cannot form them from text either)
  bool merge_special_pieces = true;
};

std::vector<std::pair<std::string, std::string>> MergesFromScores(const SpBpeVocab& vocab);
// Errors (duplicate pieces) name `where`.
nlohmann::json SentencePieceBpeJson(const SpBpeVocab& vocab, const std::string& where);

// Why a sentencepiece model has no such tokenizer.json form ("" when it has one): it must be BPE, with
// the identity normalizer (no precompiled charsmap), remove_extra_whitespaces=false,
// escape_whitespaces=true and treat_whitespace_as_suffix=false — Llama's settings, the ones under which
// the form gives sentencepiece's ids. Used by the native reader and by pc_tokenizer_spm.
std::string SpJsonConversionProblem(const SpModelInfo& info);
// The tokenizer.json form of a parsed model (bos from FindSpSpecialIds; Hugging Face's
// SentencePieceExtractor merges). Throws "<where>: cannot write a tokenizer.json: <problem>".
nlohmann::json SpModelBpeJson(const SpModelInfo& info, const std::string& where);

}  // namespace pc::tok
