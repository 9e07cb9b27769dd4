// model/tokenizer/vocab_merges.h — a GPT-2-style tokenizer folder without tokenizer.json:
// vocab.json + merges.txt (+ tokenizer_config.json, special_tokens_map.json, added_tokens.json),
// as many OPT and GPT-2 repositories publish it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pc::tok {

// True when `folder` holds vocab.json and merges.txt.
bool HasVocabMerges(const std::string& folder);

// The tokenizer.json document Hugging Face transformers builds for such a folder (its GPT-2 slow
// to fast conversion): a byte-level BPE model with the vocabulary and merges; a ByteLevel
// pre-tokenizer with tokenizer_config.json's add_prefix_space (default false) and a ByteLevel
// decoder; added tokens from tokenizer_config.json's added_tokens_decoder and added_tokens.json,
// plus the bos/eos/unk/pad tokens (special); the post-processor puts the bos token first when
// tokenizer_config.json has add_bos_token (OPT), else it is ByteLevel. Errors name the file and
// line (a merges.txt line that is not two pieces, a token missing from the vocabulary).
nlohmann::json VocabMergesTokenizerJson(const std::string& folder);

}  // namespace pc::tok
