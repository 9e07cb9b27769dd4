// core/text.h — reading text inputs by docs/METRICS.md ("Text, windows and perplexity").
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pc {

// Byte offset of the first invalid UTF-8 sequence, or std::string::npos when valid.
size_t FindInvalidUtf8(const std::string& bytes);

struct TextSource {
  std::string path;
  std::string text;    // the documents, joined with "\n\n" for JSON lines
  std::string sha256;  // of the file's bytes
  bool jsonl = false;
  long documents = 1;
};

// True for *.jsonl (JSON lines); plain text otherwise.
bool IsJsonLinesPath(const std::string& path);

// Calls fn(object, where, line_no) for every non-blank line of JSON-lines `bytes`, numbering lines
// from 1; `where` is "<path> line <n>" for the caller's errors. A line that is not a JSON object is
// an error naming the file and the line.
void ForEachJsonLine(const std::string& bytes, const std::string& path,
                     const std::function<void(const nlohmann::json& obj, const std::string& where, int64_t line_no)>& fn);

// Reads a plain text file (UTF-8, not empty) or a JSON-lines file (the string field
// `text_field` of every object, joined with "\n\n"). Errors name the file and the byte
// offset or line; `what` names the option ("--text").
TextSource ReadTextSource(const std::string& path, const std::string& text_field = "text",
                          const std::string& what = "--text");

// Same, as separate documents (for calibration sampling). Plain text: one document.
std::vector<std::string> ReadDocuments(const std::string& path, const std::string& text_field = "text",
                                       const std::string& what = "--text", std::string* sha256 = nullptr);

}  // namespace pc
