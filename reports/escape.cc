#include "reports/escape.h"

#include "core/text.h"

namespace pc::reports {
namespace {
const char kReplacement[] = "\xef\xbf\xbd";  // U+FFFD
}  // namespace

std::string SanitizeUtf8(const std::string& text) {
  std::string valid;  // invalid sequences replaced, one U+FFFD per bad byte
  valid.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t bad = FindInvalidUtf8(text.substr(pos));
    if (bad == std::string::npos) {
      valid.append(text, pos, std::string::npos);
      break;
    }
    valid.append(text, pos, bad);
    valid += kReplacement;
    pos += bad + 1;
  }
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(valid[i]);
    if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      out += kReplacement;
    } else if (c == 0x7f) {
      out += kReplacement;
    } else if (c == 0xef && i + 2 < valid.size() && valid[i + 1] == '\xbf' &&
               (valid[i + 2] == '\xbe' || valid[i + 2] == '\xbf')) {  // U+FFFE, U+FFFF
      out += kReplacement;
      i += 2;
    } else {
      out += valid[i];
    }
  }
  return out;
}

std::string EscapeXml(const std::string& text) {
  const std::string clean = SanitizeUtf8(text);
  std::string out;
  out.reserve(clean.size() + 16);
  for (char c : clean) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EscapeMarkdownCell(const std::string& text) {
  const std::string clean = SanitizeUtf8(text);
  std::string out;
  out.reserve(clean.size() + 8);
  for (size_t i = 0; i < clean.size(); ++i) {
    const char c = clean[i];
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '|': out += "\\|"; break;
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '\r':
        if (i + 1 < clean.size() && clean[i + 1] == '\n') ++i;
        out += "<br>";
        break;
      case '\n': out += "<br>"; break;
      default: out += c;
    }
  }
  return out;
}

std::string EscapeCsvField(const std::string& raw) {
  const std::string text = SanitizeUtf8(raw);
  const bool quote = text.find_first_of(",\"\r\n") != std::string::npos ||
                     (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

size_t DisplayWidth(const std::string& text) {
  size_t n = 0;
  for (char c : text) {
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  }
  return n;
}

}  // namespace pc::reports
