// recipes/pattern.h — a compiled PCRE2 regex over Hugging Face module names, with its source line.
//
// Search semantics (like Python's re.search): a pattern matches when it is found anywhere in
// the name; anchor it with ^...$ to match the whole name. Match and heap limits bound the work
// a hostile pattern can cause; exceeding them is an error naming the pattern's file:line.
#pragma once

#include <memory>
#include <string>

#include "recipes/yaml_doc.h"

namespace pc::recipes {

class Pattern {
 public:
  Pattern() = default;
  // Compiles `pattern`; an invalid one throws "<loc>: invalid regex '<pattern>' in <what>: <PCRE2's
  // message> at offset N".
  static Pattern Compile(const std::string& pattern, const yaml::SourceLoc& loc, const std::string& what);

  // True when the pattern is found in `module_name` (the tensor name without ".weight").
  bool Matches(const std::string& module_name) const;

  const std::string& pattern() const { return pattern_; }
  const yaml::SourceLoc& loc() const { return loc_; }
  bool valid() const { return code_ != nullptr; }

 private:
  struct Code;
  std::shared_ptr<const Code> code_;  // immutable once compiled; shared by copies
  std::string pattern_;
  yaml::SourceLoc loc_;
};

}  // namespace pc::recipes
