// model/tokenizer/libsentencepiece.h — library pc_tokenizer_spm: a sentencepiece tokenizer.model
// through libsentencepiece itself (kind "sentencepiece-model", any model type, Unigram included).
//
// Only for the tokenizer tests and bench, as an independent check of pc_tokenizer's native reader.
// Never link pc_tokenizer_spm into anything that loads LibTorch: Debian 12's libsentencepiece holds
// protobuf code generated for protobuf 3.14 but links the system's libprotobuf 3.21, and in a process
// that also loads LibTorch (which loads libprotobuf for its own protos) it segfaults during static
// initialisation, before main(). A CTest test checks perpcomp does not link it.
#pragma once

#include <memory>
#include <string>

#include "model/tokenizer/tokenizer.h"

namespace pc {

// Encode splits off the control and unknown pieces typed in the text, then lets libsentencepiece
// encode the rest (sentencepiece_tokenizer.h); prefix_ids = {bos}. SaveTokenizerFiles writes its
// tokenizer.model, and tokenizer.json when the model converts.
std::unique_ptr<Tokenizer> LoadSentencePieceModel(const std::string& path);

}  // namespace pc
