// model/tokenizer/pieces.h — the text pieces that flow through a tokenizer.json pipeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pc::tok {

// One piece of the input: plain text (id -1), or an added token already matched (id >= 0).
struct Piece {
  std::string text;
  int32_t id = -1;
  bool at_start = false;  // begins at byte 0 of the original text (Metaspace prepend_scheme "first")
};

using Pieces = std::vector<Piece>;

}  // namespace pc::tok
