#include "core/text.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/json_util.h"
#include "core/sha256.h"
#include "core/strings.h"

namespace pc {

size_t FindInvalidUtf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) { ++i; continue; }
    int len;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    else return i;
    if (i + len > n) return i;
    for (int k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    // Overlong forms, surrogates, beyond U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return i;
    }
    i += len;
  }
  return std::string::npos;
}

bool IsJsonLinesPath(const std::string& path) { return EndsWith(path, ".jsonl"); }

void ForEachJsonLine(const std::string& bytes, const std::string& path,
                     const std::function<void(const nlohmann::json& obj, const std::string& where, int64_t line_no)>& fn) {
  size_t start = 0;
  int64_t line_no = 0;
  while (start < bytes.size()) {
    size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    ++line_no;
    const std::string line = bytes.substr(start, end - start);
    start = end + 1;
    if (Trim(line).empty()) continue;
    const std::string where = Str(path, " line ", line_no);
    nlohmann::json obj = ParseJson(line, where);
    PC_CHECK(obj.is_object(), where, ": expected a JSON object, got ", obj.type_name());
    fn(obj, where, line_no);
  }
}

std::vector<std::string> ReadDocuments(const std::string& path, const std::string& text_field,
                                       const std::string& what, std::string* sha256) {
  PC_CHECK(!path.empty(), what, " is empty: expected a text file");
  PC_CHECK(fs::Exists(path), what, " '", path, "' does not exist");
  std::string bytes = fs::ReadFile(path);
  if (sha256 != nullptr) *sha256 = Sha256Hex(bytes);
  PC_CHECK(!bytes.empty(), what, " '", path, "' is empty: expected UTF-8 text");
  size_t bad = FindInvalidUtf8(bytes);
  PC_CHECK(bad == std::string::npos, what, " '", path, "' is not UTF-8: invalid byte 0x", std::hex,
           static_cast<int>(static_cast<unsigned char>(bytes[bad])), std::dec, " at byte offset ", bad);
  std::vector<std::string> docs;
  if (!IsJsonLinesPath(path)) {
    docs.push_back(std::move(bytes));
    return docs;
  }
  ForEachJsonLine(bytes, path, [&](const nlohmann::json& obj, const std::string& where, int64_t) {
    auto it = obj.find(text_field);
    PC_CHECK(it != obj.end(), where, ": missing field '", text_field, "' (set the field with --text-field)");
    PC_CHECK(it->is_string(), where, ": field '", text_field, "' is ", it->type_name(), ", expected a string");
    docs.push_back(it->get<std::string>());
  });
  PC_CHECK(!docs.empty(), what, " '", path, "' holds no JSON lines");
  return docs;
}

TextSource ReadTextSource(const std::string& path, const std::string& text_field, const std::string& what) {
  TextSource src;
  src.path = path;
  src.jsonl = IsJsonLinesPath(path);
  std::vector<std::string> docs = ReadDocuments(path, text_field, what, &src.sha256);
  src.documents = static_cast<long>(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i > 0) src.text += "\n\n";
    src.text += docs[i];
  }
  PC_CHECK(!src.text.empty(), what, " '", path, "' holds no text");
  return src;
}

}  // namespace pc
