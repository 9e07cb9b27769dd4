// model/tokenizer/post_processor.h — tokenizer.json "post_processor": the ids around one sequence.
//
// Supported: TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pc::tok {

struct SequenceTemplate {
  std::vector<int32_t> prefix;  // before the single sequence
  std::vector<int32_t> suffix;  // after it
};

// `lookup` maps a token to its id (-1 when absent). null json -> no special tokens.
SequenceTemplate ParsePostProcessor(const nlohmann::json& spec,
                                    const std::function<int32_t(const std::string&)>& lookup,
                                    const std::string& where);

}  // namespace pc::tok
