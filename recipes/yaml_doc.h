// recipes/yaml_doc.h — a small YAML document model built with libyaml's C API (no exceptions
// inside the parser, so none to catch), with the file, line and column of every node.
//
// A node is a mapping (ordered keys, duplicates refused), a sequence, or a scalar (its text and
// whether it was quoted). Scalars are typed only on request (AsInt, AsDouble, AsBool, AsString),
// so `yes` is the string "yes" and never a surprise boolean. Aliases, tags and multi-document
// streams are refused; size, nesting depth and node count are limited (hostile files).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace pc::yaml {

// Where a value came from. Printed as "file:line" (Str) or "file:line:column" (StrWithColumn).
struct SourceLoc {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown

  std::string Str() const;
  std::string StrWithColumn() const;
};

struct Limits {
  size_t max_bytes = 1 << 20;  // recipes are a few hundred bytes; 1 MiB is generous
  int max_depth = 32;          // recipes nest 4 levels, sweeps 5
  size_t max_nodes = 100000;
};

class Node {
 public:
  enum class Kind { kScalar, kSequence, kMapping };

  Kind kind() const { return kind_; }
  bool IsScalar() const { return kind_ == Kind::kScalar; }
  bool IsSequence() const { return kind_ == Kind::kSequence; }
  bool IsMapping() const { return kind_ == Kind::kMapping; }
  // A plain (unquoted) scalar that is empty, "~", "null", "Null" or "NULL" ("key:" with no value).
  bool IsNull() const;

  const SourceLoc& loc() const { return loc_; }
  // Scalars: the text (escapes resolved) and whether it was written quoted or as a block scalar.
  const std::string& text() const { return text_; }
  bool quoted() const { return quoted_; }
  // Sequences: the items. Mappings: the values, in file order (keys() holds the keys).
  const std::vector<Node>& items() const { return items_; }
  // Mappings: the keys (scalars), in file order.
  const std::vector<Node>& keys() const { return keys_; }
  size_t size() const { return items_.size(); }

  // "a mapping", "a list", "an empty value", "'four'" or "the quoted string '4'" for messages.
  std::string Describe() const;

  // Mappings: the value of `key`, or nullptr.
  const Node* Find(const std::string& key) const;
  // The value of `key`; throws "<file>:<line>: <what> is missing required key '<key>'".
  const Node& Require(const std::string& key, const std::string& what) const;
  // Throws unless this is a mapping ("<file>:<line>:<col>: <what> must be a mapping (key: value
  // lines), got a list") whose keys are all in `allowed` ("unknown key 'metod' in <what> (did you
  // mean 'method'?; allowed keys: ...)").
  void CheckMapping(const std::string& what, const std::vector<std::string>& allowed) const;
  // Throws unless this is a mapping (any keys).
  void CheckIsMapping(const std::string& what) const;
  // Throws unless this is a sequence: "<loc>: <what> must be a list, got ...".
  void CheckSequence(const std::string& what) const;

  // Typed scalars; `what` names the value in messages, e.g. "'bits'":
  //   "awq-w4g128.yaml:7: 'bits' must be an integer, got 'four'".
  // Quoted scalars are strings: AsInt on "4" (quoted) is an error.
  int64_t AsInt(const std::string& what) const;
  double AsDouble(const std::string& what) const;       // finite; integers accepted
  bool AsBool(const std::string& what) const;           // true/True/TRUE/false/False/FALSE
  std::string AsString(const std::string& what) const;  // any non-null scalar, as written

  // Building (the parser and tests).
  static Node Scalar(std::string text, bool quoted, SourceLoc loc);
  static Node Sequence(SourceLoc loc);
  static Node Mapping(SourceLoc loc);
  std::vector<Node>& mutable_items() { return items_; }
  std::vector<Node>& mutable_keys() { return keys_; }

 private:
  Kind kind_ = Kind::kScalar;
  SourceLoc loc_;
  std::string text_;
  bool quoted_ = false;
  std::vector<Node> items_;
  std::vector<Node> keys_;
};

// Classification of plain scalars, shared by the typed accessors and by untyped method params.
bool IsIntText(const std::string& text);     // [-+]?[0-9]+
bool IsDoubleText(const std::string& text);  // [-+]?(digits[.digits]|.digits)[e[-+]digits], with a '.' or an exponent
bool IsBoolText(const std::string& text);
bool IsNullText(const std::string& text);

// A quoted YAML scalar that parses back to exactly `s`: single-quoted when every character is
// printable, double-quoted with escapes otherwise. `s` must be UTF-8.
std::string QuoteString(const std::string& s);

struct Document {
  Node root;
  bool empty = true;  // no document at all (an empty file, or only comments)
};

// Parses `text`; `where` names it in messages. Syntax errors:
//   "recipe.yaml:12:5: <libyaml's problem> (<context> started at line 10)".
Document Parse(const std::string& text, const std::string& where, const Limits& limits = Limits());
// Reads and parses a file; refuses files over limits.max_bytes before reading them.
Document ParseFile(const std::string& path, const Limits& limits = Limits());

}  // namespace pc::yaml
