// JSON for `sluice bench`: the escaping and number format its report writes, and a strict syntax check
// (RFC 8259) the command runs on the whole document before writing it, so that a bug never leaves a file
// that other tools cannot read.
#ifndef SLUICE_TOOLS_SLUICE_BENCH_JSON_H_
#define SLUICE_TOOLS_SLUICE_BENCH_JSON_H_

#include <string>
#include <vector>

namespace sluice::tools {

// "text" with quotes, backslashes and control characters escaped.
std::string JsonString(const std::string& s);
// %.9g, or null for NaN and infinities (JSON has no such numbers).
std::string JsonNumber(double v);
std::string JsonNumbers(const std::vector<double>& values);

// True when `text` is exactly one JSON value (surrounded by whitespace at most); else false with the byte
// offset and what was expected in `error`.
bool IsWellFormedJson(const std::string& text, std::string* error);

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_SLUICE_BENCH_JSON_H_
