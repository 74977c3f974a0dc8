#include "tools/sluice/bench_json.h"

#include <cctype>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace sluice::tools {
namespace {

// Recursive descent over the grammar; depth-limited so that a hostile input cannot overflow the stack.
class Checker {
 public:
  explicit Checker(const std::string& text) : s_(text) {}

  bool Document(std::string* error) {
    SkipSpace();
    if (!Value(0)) {
      *error = error_;
      return false;
    }
    SkipSpace();
    if (i_ != s_.size()) {
      *error = absl::StrCat("byte ", i_, ": text after the value");
      return false;
    }
    return true;
  }

 private:
  bool Fail(const char* what) {
    if (error_.empty()) error_ = absl::StrCat("byte ", i_, ": expected ", what);
    return false;
  }
  void SkipSpace() {
    while (i_ < s_.size() && std::strchr(" \t\r\n", s_[i_]) != nullptr && s_[i_] != '\0') ++i_;
  }
  bool Literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0) return Fail(word);
    i_ += n;
    return true;
  }
  bool Digits() {
    const size_t start = i_;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
    return i_ > start || Fail("a digit");
  }
  bool Number() {
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0') {
      ++i_;
    } else if (!Digits()) {
      return false;
    }
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (!Digits()) return false;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (!Digits()) return false;
    }
    return true;
  }
  bool String() {
    if (i_ >= s_.size() || s_[i_] != '"') return Fail("a string");
    for (++i_; i_ < s_.size(); ++i_) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return true;
      }
      if (c < 0x20) return Fail("no raw control character in a string");
      if (c == '\\') {
        if (++i_ >= s_.size()) break;
        if (s_[i_] == 'u') {
          for (int k = 0; k < 4; ++k) {
            if (++i_ >= s_.size() || !std::isxdigit(static_cast<unsigned char>(s_[i_]))) {
              return Fail("4 hex digits");
            }
          }
        } else if (std::strchr("\"\\/bfnrt", s_[i_]) == nullptr || s_[i_] == '\0') {
          return Fail("an escape");
        }
      }
    }
    return Fail("the end of the string");
  }
  bool Value(int depth) {
    if (depth > 256) return Fail("less nesting");
    if (i_ >= s_.size()) return Fail("a value");
    switch (s_[i_]) {
      case '{': {
        ++i_;
        SkipSpace();
        if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
        for (;;) {
          SkipSpace();
          if (!String()) return false;
          SkipSpace();
          if (i_ >= s_.size() || s_[i_] != ':') return Fail("':'");
          ++i_;
          SkipSpace();
          if (!Value(depth + 1)) return false;
          SkipSpace();
          if (i_ < s_.size() && s_[i_] == ',') {
            ++i_;
            continue;
          }
          if (i_ < s_.size() && s_[i_] == '}') return ++i_, true;
          return Fail("',' or '}'");
        }
      }
      case '[': {
        ++i_;
        SkipSpace();
        if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
        for (;;) {
          SkipSpace();
          if (!Value(depth + 1)) return false;
          SkipSpace();
          if (i_ < s_.size() && s_[i_] == ',') {
            ++i_;
            continue;
          }
          if (i_ < s_.size() && s_[i_] == ']') return ++i_, true;
          return Fail("',' or ']'");
        }
      }
      case '"':
        return String();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        return Number();
    }
  }

  const std::string& s_;
  size_t i_ = 0;
  std::string error_;
};

}  // namespace

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.9g", v) : "null"; }

std::string JsonNumbers(const std::vector<double>& values) {
  std::vector<std::string> parts;
  for (double v : values) parts.push_back(JsonNumber(v));
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

bool IsWellFormedJson(const std::string& text, std::string* error) { return Checker(text).Document(error); }

}  // namespace sluice::tools
