// recipes/candidates.h — the candidate settings of `perpcomp sensitivity` (docs/ALLOCATION.md),
// parsed and validated without a model: named settings, each a method and its parameters as in a
// recipe (or `method: none`, the linear left dense), and optional groups of linears that must
// share one setting. What needs the registry (is `rtn` a method, is `bits` its parameter) is
// checked by pipeline/sensitivity.cc with these locations.
#pragma once

#include <string>
#include <vector>

#include "recipes/param_value.h"
#include "recipes/pattern.h"
#include "recipes/recipe_spec.h"

namespace pc::recipes {

struct CandidateSpec {
  Located<std::string> name;    // [A-Za-z0-9][A-Za-z0-9._-]*, unique in the file
  Located<std::string> method;  // a registry method, or "none" (dense: cost 16 bits, no damage)
  ParamMap params;
  SourceLoc loc;                // the line of the entry
  bool dense() const { return method.value == "none"; }
};

// Linears of one block whose names `match` finds share one setting (q/k/v, gate/up); a linear in
// no group is its own unit. The first matching group wins.
struct GroupSpec {
  Located<std::string> name;
  Pattern match;
  SourceLoc loc;
};

struct CandidatesSpec {
  std::vector<CandidateSpec> candidates;  // at least one
  std::vector<GroupSpec> groups;
  std::string file;
};

// Errors name file:line and what was expected.
CandidatesSpec ParseCandidatesFile(const std::string& path);
CandidatesSpec ParseCandidatesText(const std::string& yaml, const std::string& where);

}  // namespace pc::recipes
