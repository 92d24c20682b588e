// Escaping of untrusted text (function names, file paths, program names, NVTX and loop names,
// report paths) for each format gpuleak writes: the one place where the terminal summaries, the
// Markdown report and the gate's writers make a program's bytes inert. Every function accepts any
// bytes: invalid UTF-8 becomes U+FFFD.
#pragma once

#include <string>
#include <string_view>

namespace gpuleak::text {

// Valid UTF-8: each maximal subpart of an ill-formed sequence (the longest run of bytes that
// starts some well-formed sequence, else one byte) replaced by one U+FFFD, as the Unicode
// Standard recommends and as browsers (WHATWG Encoding) and Python's "replace" decode: the
// viewer, the trace UIs and the Python reader show the same text gpuleak wrote. Bad lead bytes,
// overlong forms, UTF-16 surrogates, code points past U+10FFFF and a sequence cut short are all
// ill-formed. The trace writers and every escape below repair text through here.
std::string valid_utf8(std::string_view text);

// One line for a terminal or a CI log: valid UTF-8, and every control character replaced by
// U+FFFD: C0 (line breaks, ESC and BEL, which start and end the CSI and OSC sequences that
// recolour a terminal or set its title), DEL, and C1 (U+0080-U+009F: 8-bit CSI and OSC, which
// some terminals honour in UTF-8 too).
std::string printable(const std::string &text);

// XML 1.0 text and attribute values: & < > " ' as entities; control characters XML 1.0 cannot
// carry (all below U+0020 but tab, LF and CR) become U+FFFD; with `attribute`, tab, LF and CR are
// written as character references so that attribute-value normalization keeps them.
std::string xml_escape(const std::string &text, bool attribute = false);

// GitHub Actions workflow commands (`::error file=F,line=L::MESSAGE`): the message escapes
// % CR LF as %25 %0D %0A; a property value (file, title) also escapes : and , as %3A %2C. Other
// control characters, C1 included, become U+FFFD (a raw escape sequence has no business in a CI
// log).
std::string github_escape_data(const std::string &text);
std::string github_escape_property(const std::string &text);

// Markdown inline text for a step summary or a table cell: HTML-sensitive characters as entities
// (GitHub renders HTML inside Markdown), Markdown punctuation backslash-escaped, | escaped for
// tables, line breaks turned into spaces, other control characters (C1 included) U+FFFD: the
// same text is printed to terminals by `gpuleak report --format markdown`.
std::string markdown_escape(const std::string &text);

}  // namespace gpuleak::text
