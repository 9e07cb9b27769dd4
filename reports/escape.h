// reports/escape.h — escaping text for the report formats. Every writer in reports/ passes all text
// (run names, labels, titles, cell contents) through these; nothing is written raw.
#pragma once

#include <cstddef>
#include <string>

namespace pc::reports {

// Valid UTF-8 that XML 1.0 accepts: invalid byte sequences and the characters XML forbids (control
// characters other than tab, LF, CR; U+FFFE, U+FFFF) become U+FFFD.
std::string SanitizeUtf8(const std::string& text);

// Text for XML/HTML content and attribute values: SanitizeUtf8, then & < > " ' as entities
// (&amp; &lt; &gt; &quot; &#39;). Newlines are kept (the caller decides on <br>).
std::string EscapeXml(const std::string& text);

// One Markdown (GFM) table cell: the structure cannot break and no raw HTML passes.
// \ -> \\, | -> \|, & -> &amp;, < -> &lt;, > -> &gt;, a newline (LF, CR LF or CR) -> <br>.
std::string EscapeMarkdownCell(const std::string& text);

// One CSV field by RFC 4180 (after SanitizeUtf8, so the file is valid UTF-8): quoted when it contains a comma, a double quote, CR or LF, or begins or
// ends with a space (which readers may trim); quotes inside are doubled.
std::string EscapeCsvField(const std::string& text);

// Number of code points (UTF-8 lead bytes) — the column width used to pad plain-text tables.
size_t DisplayWidth(const std::string& text);

}  // namespace pc::reports
