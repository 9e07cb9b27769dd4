#include "recipes/yaml_doc.h"

#include <yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"

namespace pc::yaml {

std::string SourceLoc::Str() const { return line > 0 ? pc::Str(file, ":", line) : file; }

std::string SourceLoc::StrWithColumn() const {
  if (line <= 0) return file;
  return column > 0 ? pc::Str(file, ":", line, ":", column) : Str();
}

// ---- scalar classification ---------------------------------------------------------------

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Consumes [0-9]+ starting at *i; returns how many digits it consumed.
size_t Digits(const std::string& s, size_t* i) {
  size_t start = *i;
  while (*i < s.size() && IsDigit(s[*i])) ++*i;
  return *i - start;
}

}  // namespace

bool IsIntText(const std::string& t) {
  size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  return Digits(t, &i) > 0 && i == t.size();
}

bool IsDoubleText(const std::string& t) {
  size_t i = (!t.empty() && (t[0] == '-' || t[0] == '+')) ? 1 : 0;
  size_t mantissa = Digits(t, &i);
  bool dot = false, exponent = false;
  if (i < t.size() && t[i] == '.') {
    dot = true;
    ++i;
    mantissa += Digits(t, &i);
  }
  if (mantissa == 0) return false;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    exponent = true;
    ++i;
    if (i < t.size() && (t[i] == '-' || t[i] == '+')) ++i;
    if (Digits(t, &i) == 0) return false;
  }
  return i == t.size() && (dot || exponent);
}

bool IsBoolText(const std::string& t) {
  return t == "true" || t == "True" || t == "TRUE" || t == "false" || t == "False" || t == "FALSE";
}

bool IsNullText(const std::string& t) { return t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL"; }

// ---- Node --------------------------------------------------------------------------------

Node Node::Scalar(std::string text, bool quoted, SourceLoc loc) {
  Node n;
  n.kind_ = Kind::kScalar;
  n.text_ = std::move(text);
  n.quoted_ = quoted;
  n.loc_ = std::move(loc);
  return n;
}

Node Node::Sequence(SourceLoc loc) {
  Node n;
  n.kind_ = Kind::kSequence;
  n.loc_ = std::move(loc);
  return n;
}

Node Node::Mapping(SourceLoc loc) {
  Node n;
  n.kind_ = Kind::kMapping;
  n.loc_ = std::move(loc);
  return n;
}

bool Node::IsNull() const { return kind_ == Kind::kScalar && !quoted_ && IsNullText(text_); }

std::string Node::Describe() const {
  switch (kind_) {
    case Kind::kMapping:
      return "a mapping";
    case Kind::kSequence:
      return "a list";
    case Kind::kScalar:
      break;
  }
  if (IsNull()) return "an empty value";
  return quoted_ ? pc::Str("the quoted string '", text_, "'") : pc::Str("'", text_, "'");
}

const Node* Node::Find(const std::string& key) const {
  if (kind_ != Kind::kMapping) return nullptr;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i].text_ == key) return &items_[i];
  }
  return nullptr;
}

const Node& Node::Require(const std::string& key, const std::string& what) const {
  const Node* n = Find(key);
  PC_CHECK(n != nullptr, loc_.Str(), ": ", what, " is missing required key '", key, "'");
  return *n;
}

namespace {

// Levenshtein distance, for "did you mean" hints on short keys.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

void Node::CheckIsMapping(const std::string& what) const {
  PC_CHECK(kind_ == Kind::kMapping, loc_.StrWithColumn(), ": ", what, " must be a mapping (key: value lines), got ",
           Describe());
}

void Node::CheckMapping(const std::string& what, const std::vector<std::string>& allowed) const {
  CheckIsMapping(what);
  for (const Node& key : keys_) {
    bool known = false;
    for (const auto& a : allowed) known = known || key.text_ == a;
    if (known) continue;
    std::string hint;
    size_t best = 3;  // suggest only close matches
    for (const auto& a : allowed) {
      size_t d = EditDistance(key.text_, a);
      if (d < best) {
        best = d;
        hint = pc::Str("did you mean '", a, "'? ");
      }
    }
    PC_THROW(key.loc_.Str(), ": unknown key '", key.text_, "' in ", what, " (", hint,
             "allowed keys: ", Join(allowed, ", "), ")");
  }
}

void Node::CheckSequence(const std::string& what) const {
  PC_CHECK(kind_ == Kind::kSequence, loc_.StrWithColumn(), ": ", what, " must be a list, got ", Describe());
}

int64_t Node::AsInt(const std::string& what) const {
  PC_CHECK(kind_ == Kind::kScalar && !quoted_ && IsIntText(text_), loc_.Str(), ": ", what, " must be an integer, got ",
           Describe());
  errno = 0;
  long long v = std::strtoll(text_.c_str(), nullptr, 10);
  PC_CHECK(errno == 0, loc_.Str(), ": ", what, " must be an integer in the 64-bit range, got '", text_, "'");
  return v;
}

double Node::AsDouble(const std::string& what) const {
  PC_CHECK(kind_ == Kind::kScalar && !quoted_ && (IsIntText(text_) || IsDoubleText(text_)), loc_.Str(), ": ", what,
           " must be a number, got ", Describe());
  double v = std::strtod(text_.c_str(), nullptr);
  PC_CHECK(std::isfinite(v), loc_.Str(), ": ", what, " must be a finite number, got '", text_, "'");
  return v;
}

bool Node::AsBool(const std::string& what) const {
  PC_CHECK(kind_ == Kind::kScalar && !quoted_ && IsBoolText(text_), loc_.Str(), ": ", what,
           " must be true or false, got ", Describe());
  return text_[0] == 't' || text_[0] == 'T';
}

std::string Node::AsString(const std::string& what) const {
  PC_CHECK(kind_ == Kind::kScalar && !IsNull(), loc_.Str(), ": ", what, " must be a string, got ", Describe());
  return text_;
}

// ---- parser ------------------------------------------------------------------------------

namespace {

// RAII for libyaml's parser and events (the parser is C and never throws; we throw between calls).
class YamlParser {
 public:
  YamlParser(const std::string& text) {
    ok_ = yaml_parser_initialize(&parser_) != 0;
    if (!ok_) return;
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
    yaml_parser_set_encoding(&parser_, YAML_UTF8_ENCODING);
  }
  ~YamlParser() {
    if (ok_) yaml_parser_delete(&parser_);
  }
  YamlParser(const YamlParser&) = delete;
  YamlParser& operator=(const YamlParser&) = delete;
  bool ok() const { return ok_; }
  yaml_parser_t* get() { return &parser_; }

 private:
  yaml_parser_t parser_;
  bool ok_ = false;
};

class YamlEvent {
 public:
  YamlEvent() = default;
  ~YamlEvent() {
    if (valid_) yaml_event_delete(&event_);
  }
  YamlEvent(const YamlEvent&) = delete;
  YamlEvent& operator=(const YamlEvent&) = delete;
  bool Next(yaml_parser_t* p) {
    valid_ = yaml_parser_parse(p, &event_) != 0;
    return valid_;
  }
  const yaml_event_t& get() const { return event_; }

 private:
  yaml_event_t event_;
  bool valid_ = false;
};

[[noreturn]] void ThrowSyntaxError(const yaml_parser_t& p, const std::string& where) {
  if (p.error == YAML_MEMORY_ERROR) PC_THROW(where, ": out of memory while parsing YAML");
  std::string problem = p.problem != nullptr ? p.problem : "invalid YAML";
  if (p.error == YAML_READER_ERROR) {
    // Bad bytes: libyaml reports an offset, not a line.
    char value[32] = "";
    if (p.problem_value >= 0) std::snprintf(value, sizeof value, " (0x%02x)", p.problem_value);
    PC_THROW(where, ": ", problem, " at byte offset ", p.problem_offset, value, "; files must be UTF-8 text");
  }
  std::string context;
  if (p.context != nullptr) {
    context = pc::Str(" (", p.context);
    if (p.context_mark.line != p.problem_mark.line || p.context_mark.column != p.problem_mark.column) {
      context += pc::Str(" that started at line ", p.context_mark.line + 1);
    }
    context += ")";
  }
  PC_THROW(where, ":", p.problem_mark.line + 1, ":", p.problem_mark.column + 1, ": ", problem, context);
}

SourceLoc MarkLoc(const std::string& where, const yaml_mark_t& m) {
  return SourceLoc{where, static_cast<int>(m.line) + 1, static_cast<int>(m.column) + 1};
}

// A collection being built; a mapping alternates between expecting a key and a value.
struct Frame {
  Node node;
  bool expect_key = true;
  std::unordered_map<std::string, int> key_lines;
};

class Builder {
 public:
  Builder(const std::string& where, const Limits& limits) : where_(where), limits_(limits) {}

  void CountNode(const SourceLoc& loc) {
    PC_CHECK(++nodes_ <= limits_.max_nodes, loc.StrWithColumn(), ": more than ", limits_.max_nodes,
             " YAML values (refused as hostile or broken)");
  }

  void Open(Node node) {
    CountNode(node.loc());
    PC_CHECK(static_cast<int>(stack_.size()) < limits_.max_depth, node.loc().StrWithColumn(), ": nesting deeper than ",
             limits_.max_depth, " levels (refused as hostile or broken)");
    if (!stack_.empty()) CheckKeyKind(node);
    stack_.push_back(Frame{std::move(node), true, {}});
  }

  void Close() {
    PC_ASSERT(!stack_.empty(), "unbalanced YAML events");
    Node done = std::move(stack_.back().node);
    stack_.pop_back();
    Add(std::move(done));
  }

  void AddScalar(Node node) {
    CountNode(node.loc());
    Add(std::move(node));
  }

  Node TakeRoot() { return std::move(root_); }

 private:
  // Mapping keys must be scalars (a "? [a, b]" complex key has no use in our files).
  void CheckKeyKind(const Node& node) const {
    const Frame& top = stack_.back();
    PC_CHECK(!(top.node.IsMapping() && top.expect_key), node.loc().StrWithColumn(),
             ": mapping keys must be plain values, got ", node.Describe());
  }

  void Add(Node node) {
    if (stack_.empty()) {
      root_ = std::move(node);
      return;
    }
    Frame& top = stack_.back();
    if (top.node.IsSequence()) {
      top.node.mutable_items().push_back(std::move(node));
    } else if (top.expect_key) {  // a scalar: Open() refused collections as keys
      auto [it, inserted] = top.key_lines.emplace(node.text(), node.loc().line);
      PC_CHECK(inserted, node.loc().StrWithColumn(), ": duplicate key '", node.text(), "' (first at line ", it->second,
               ")");
      top.node.mutable_keys().push_back(std::move(node));
      top.expect_key = false;
    } else {
      top.node.mutable_items().push_back(std::move(node));
      top.expect_key = true;
    }
  }

  std::string where_;
  Limits limits_;
  std::vector<Frame> stack_;
  Node root_;
  size_t nodes_ = 0;
};

void CheckNoTag(const yaml_char_t* tag, const SourceLoc& loc) {
  PC_CHECK(tag == nullptr, loc.StrWithColumn(), ": YAML tags ('", reinterpret_cast<const char*>(tag),
           "') are not supported; write the value plainly (quote it to make it a string)");
}

}  // namespace

Document Parse(const std::string& text, const std::string& where, const Limits& limits) {
  PC_CHECK(text.size() <= limits.max_bytes, where, ": ", text.size(), " bytes, more than the limit of ",
           limits.max_bytes, " bytes for this file (refused as hostile or broken)");
  YamlParser parser(text);
  PC_CHECK(parser.ok(), where, ": cannot initialize the YAML parser (out of memory)");
  Builder builder(where, limits);
  Document doc;
  int documents = 0;
  while (true) {
    YamlEvent ev;
    if (!ev.Next(parser.get())) ThrowSyntaxError(*parser.get(), where);
    const yaml_event_t& e = ev.get();
    SourceLoc loc = MarkLoc(where, e.start_mark);
    switch (e.type) {
      case YAML_STREAM_START_EVENT:
      case YAML_DOCUMENT_END_EVENT:
      case YAML_NO_EVENT:
        break;
      case YAML_DOCUMENT_START_EVENT:
        PC_CHECK(++documents == 1, loc.StrWithColumn(),
                 ": a second YAML document ('---'); one file holds one document");
        doc.empty = false;
        break;
      case YAML_ALIAS_EVENT:
        PC_THROW(loc.StrWithColumn(), ": YAML aliases ('*", reinterpret_cast<const char*>(e.data.alias.anchor),
                 "') are not supported; write the value out");
      case YAML_SCALAR_EVENT: {
        CheckNoTag(e.data.scalar.tag, loc);
        bool quoted = e.data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        std::string value(reinterpret_cast<const char*>(e.data.scalar.value), e.data.scalar.length);
        builder.AddScalar(Node::Scalar(std::move(value), quoted, loc));
        break;
      }
      case YAML_SEQUENCE_START_EVENT:
        CheckNoTag(e.data.sequence_start.tag, loc);
        builder.Open(Node::Sequence(loc));
        break;
      case YAML_MAPPING_START_EVENT:
        CheckNoTag(e.data.mapping_start.tag, loc);
        builder.Open(Node::Mapping(loc));
        break;
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        builder.Close();
        break;
      case YAML_STREAM_END_EVENT:
        doc.root = builder.TakeRoot();
        return doc;
    }
  }
}

Document ParseFile(const std::string& path, const Limits& limits) {
  PC_CHECK(fs::Exists(path), "cannot read '", path, "': the file does not exist");
  int64_t size = fs::FileSize(path);
  PC_CHECK(size <= static_cast<int64_t>(limits.max_bytes), path, ": ", size, " bytes, more than the limit of ",
           limits.max_bytes, " bytes for this file (refused as hostile or broken)");
  return Parse(fs::ReadFile(path), path, limits);
}

}  // namespace pc::yaml

// ---- emitting ----------------------------------------------------------------------------

namespace pc::yaml {

namespace {

// Decodes one UTF-8 code point at s[*i]; returns -1 for invalid UTF-8.
long DecodeUtf8(const std::string& s, size_t* i) {
  unsigned char c = static_cast<unsigned char>(s[*i]);
  int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xE ? 2 : (c >> 3) == 0x1E ? 3 : -1;
  if (extra < 0 || *i + static_cast<size_t>(extra) >= s.size()) return -1;
  long cp = extra == 0 ? c : extra == 1 ? (c & 0x1F) : extra == 2 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k <= extra; ++k) {
    unsigned char cc = static_cast<unsigned char>(s[*i + k]);
    if ((cc >> 6) != 0x2) return -1;
    cp = (cp << 6) | (cc & 0x3F);
  }
  *i += extra + 1;
  return cp;
}

// Characters that stay themselves inside a single-quoted scalar (no folding, no escapes).
bool SingleQuotable(long cp) {
  return (cp >= 0x20 && cp <= 0x7E) || (cp >= 0xA0 && cp <= 0xD7FF && cp != 0x2028 && cp != 0x2029) ||
         (cp >= 0xE000 && cp <= 0xFFFD && cp != 0xFEFF) || (cp >= 0x10000 && cp <= 0x10FFFF);
}

std::string Hex(long v, int digits) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out(static_cast<size_t>(digits), '0');
  for (int k = digits - 1; k >= 0; --k, v >>= 4) out[static_cast<size_t>(k)] = kHex[v & 0xF];
  return out;
}

}  // namespace

std::string QuoteString(const std::string& s) {
  bool single = true;
  for (size_t i = 0; i < s.size();) {
    long cp = DecodeUtf8(s, &i);
    PC_CHECK(cp >= 0, "cannot write a YAML string that is not UTF-8: '", s, "'");
    single = single && SingleQuotable(cp);
  }
  if (single) return "'" + ReplaceAll(s, "'", "''") + "'";
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    size_t start = i;
    long cp = DecodeUtf8(s, &i);
    switch (cp) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case 0:
        out += "\\0";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case 0x85:
        out += "\\N";
        continue;
      case 0x2028:
        out += "\\L";
        continue;
      case 0x2029:
        out += "\\P";
        continue;
      default:
        break;
    }
    if (SingleQuotable(cp)) {
      out.append(s, start, i - start);
    } else if (cp < 0x100) {
      out += "\\x" + Hex(cp, 2);
    } else if (cp < 0x10000) {
      out += "\\u" + Hex(cp, 4);
    } else {
      out += "\\U" + Hex(cp, 8);
    }
  }
  return out + "\"";
}

}  // namespace pc::yaml
