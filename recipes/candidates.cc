#include "recipes/candidates.h"

#include <set>

#include "core/error.h"
#include "core/strings.h"

namespace pc::recipes {

namespace {

CandidateSpec ParseCandidate(const yaml::Node& node) {
  node.CheckMapping("a candidate", {"name", "method", "params"});
  CandidateSpec c;
  c.loc = node.loc();
  const std::string at = Str("candidate at ", c.loc.Str());
  c.name = NameAt(node.Require("name", at), "name", "candidate name");
  c.method = NameAt(node.Require("method", at), "method", "method name");
  if (const auto* n = node.Find("params")) c.params = ParseParams(*n, "'params' of " + at);
  PC_CHECK(!c.dense() || c.params.empty(), c.loc.Str(), ": ", at,
           " is 'method: none' (the linear left dense), which takes no 'params'");
  return c;
}

CandidatesSpec ParseDocument(const yaml::Document& doc, const std::string& where) {
  PC_CHECK(!doc.empty && !doc.root.IsNull(), where,
           ": the file is empty; a candidates file is a mapping with a 'candidates' list (docs/ALLOCATION.md)");
  const yaml::Node& root = doc.root;
  root.CheckMapping("a candidates file", {"candidates", "groups"});
  CandidatesSpec out;
  out.file = where;
  const yaml::Node& list = root.Require("candidates", "the candidates file");
  list.CheckSequence("'candidates'");
  PC_CHECK(list.size() > 0, list.loc().Str(), ": 'candidates' is empty; give at least one setting");
  std::set<std::string> names;
  for (const auto& item : list.items()) {
    CandidateSpec c = ParseCandidate(item);
    PC_CHECK(names.insert(c.name.value).second, c.name.loc.Str(), ": candidate name '", c.name.value,
             "' is used twice");
    out.candidates.push_back(std::move(c));
  }
  PC_CHECK(out.candidates.size() <= 255, list.loc().Str(), ": ", out.candidates.size(),
           " candidates; at most 255 are supported");
  if (const auto* g = root.Find("groups"); g != nullptr && !g->IsNull()) {
    g->CheckSequence("'groups'");
    std::set<std::string> group_names;
    for (const auto& item : g->items()) {
      item.CheckMapping("a group", {"name", "match"});
      GroupSpec s;
      s.loc = item.loc();
      const std::string at = Str("group at ", s.loc.Str());
      s.name = NameAt(item.Require("name", at), "name", "group name");
      PC_CHECK(group_names.insert(s.name.value).second, s.name.loc.Str(), ": group name '", s.name.value,
               "' is used twice");
      const yaml::Node& match = item.Require("match", at);
      PC_CHECK(match.IsScalar() && !match.IsNull(), match.loc().Str(), ": 'match' of ", at,
               " must be a regex (a string), got ", match.Describe());
      s.match = Pattern::Compile(match.text(), match.loc(), "'match' of " + at);
      out.groups.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace

CandidatesSpec ParseCandidatesFile(const std::string& path) { return ParseDocument(yaml::ParseFile(path), path); }

CandidatesSpec ParseCandidatesText(const std::string& text, const std::string& where) {
  return ParseDocument(yaml::Parse(text, where), where);
}

}  // namespace pc::recipes
