// probes/norm_depth.h — hidden-state norm against parse depth on the synthetic corpus (docs/CORPUS.md
// depths.jsonl; docs/SCIENCE.md "Norm and depth"). Every sentence is scored alone (the minimal-pair
// convention: the scoring start token, then the sentence's tokens). Words are aligned to tokens by
// prefixes: word k owns the tokens that Encode(words[0..k] joined by " ") adds to Encode(words[0..k-1]);
// a sentence whose prefix encodings are not prefixes of its full encoding (a token spanning a word
// boundary) or in which a word adds no token is left out and counted. A word is represented by its
// LAST token (the first position that has read the whole word); the period is not a word.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/tokenizer/tokenizer.h"

namespace pc::probes {

struct DepthSentence {
  std::string sentence;
  std::vector<std::string> words;
  std::vector<int64_t> depth;  // per word
};

// depths.jsonl: one object per line with "sentence", "words" and "depth" (same length). Errors name
// the file and line.
std::vector<DepthSentence> ReadDepthSentences(const std::string& path);

// Token index (in Encode(sentence)) of each word's last token, or empty when the sentence does not
// align (see above).
std::vector<int64_t> AlignWordEnds(const Tokenizer& tokenizer, const DepthSentence& s);

struct NormDepthData {
  int64_t sentences = 0;   // aligned and used
  int64_t unaligned = 0;   // left out
  std::vector<double> depth, word_index, token_position;  // per word (token_position: in the scored sequence, start token = 0)
  std::vector<std::vector<double>> norm;                  // [layer][word]: ‖h‖ of the block output at the word's last token
};

// The first `max_sentences` (<= 0: all) sentences.
NormDepthData CollectNormDepth(Model& model, const Tokenizer& tokenizer, const std::vector<DepthSentence>& sentences,
                               int64_t max_sentences);

}  // namespace pc::probes
