#include "api/extender_scan.h"

#include <cstdint>

namespace toposched::api::scan {

namespace {

constexpr int kMaxDepth = 512;

bool IsWs(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Recursive-descent skipper. `err` set on the first problem; every function returns false then.
struct Scanner {
  explicit Scanner(std::string_view text) : s(text) {}
  std::string_view s;
  size_t pos = 0;
  std::string err;

  bool Fail(const std::string& what) {
    if (err.empty()) err = "at byte " + std::to_string(pos) + ": " + what;
    return false;
  }
  void Ws() {
    while (pos < s.size() && IsWs(s[pos])) ++pos;
  }
  bool Value(int depth) {
    Ws();
    if (pos >= s.size()) return Fail("unexpected end of input, expected a value");
    switch (s[pos]) {
      case '{':
        return Object(depth + 1);
      case '[':
        return Array(depth + 1);
      case '"':
        return String();
      case 't':
        return Literal("true");
      case 'f':
        return Literal("false");
      case 'n':
        return Literal("null");
      default:
        if (s[pos] == '-' || IsDigit(s[pos])) return Number();
        return Fail(std::string("unexpected character '") + s[pos] + "'");
    }
  }
  bool Literal(std::string_view lit) {
    if (s.substr(pos, lit.size()) != lit) return Fail("invalid literal");
    pos += lit.size();
    return true;
  }
  bool Number() {
    if (s[pos] == '-') ++pos;
    if (pos >= s.size() || !IsDigit(s[pos])) return Fail("invalid number");
    if (s[pos] == '0') {
      ++pos;
    } else {
      while (pos < s.size() && IsDigit(s[pos])) ++pos;
    }
    if (pos < s.size() && s[pos] == '.') {
      ++pos;
      if (pos >= s.size() || !IsDigit(s[pos])) return Fail("invalid number: digit expected");
      while (pos < s.size() && IsDigit(s[pos])) ++pos;
    }
    if (pos < s.size() && (s[pos] == 'e' || s[pos] == 'E')) {
      ++pos;
      if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) ++pos;
      if (pos >= s.size() || !IsDigit(s[pos])) return Fail("invalid number: exponent expected");
      while (pos < s.size() && IsDigit(s[pos])) ++pos;
    }
    return true;
  }
  // One UTF-8 sequence starting at a byte ≥ 0x80 (no overlongs, no surrogates, ≤ U+10FFFF).
  bool Utf8() {
    const auto b0 = static_cast<uint8_t>(s[pos]);
    int n;
    uint32_t cp;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
      n = 1, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      n = 2, cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      n = 3, cp = b0 & 0x07;
    } else {
      return Fail("invalid UTF-8");
    }
    if (pos + n >= s.size()) return Fail("invalid UTF-8");
    for (int i = 1; i <= n; ++i) {
      const auto b = static_cast<uint8_t>(s[pos + i]);
      if ((b & 0xC0) != 0x80) return Fail("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Fail("invalid UTF-8");
    }
    pos += n + 1;
    return true;
  }
  bool String() {
    ++pos;  // opening quote
    while (true) {
      if (pos >= s.size()) return Fail("unterminated string");
      const char c = s[pos];
      if (c == '"') {
        ++pos;
        return true;
      }
      if (static_cast<uint8_t>(c) < 0x20) return Fail("control character in a string");
      if (static_cast<uint8_t>(c) >= 0x80) {
        if (!Utf8()) return false;
        continue;
      }
      if (c == '\\') {
        ++pos;
        if (pos >= s.size()) return Fail("unterminated string");
        const char e = s[pos];
        if (e == 'u') {
          for (int i = 1; i <= 4; ++i) {
            if (pos + i >= s.size() || HexVal(s[pos + i]) < 0) return Fail("invalid \\u escape");
          }
          pos += 5;
          continue;
        }
        if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
            e != 't') {
          return Fail("invalid escape");
        }
      }
      ++pos;
    }
  }
  bool Object(int depth) {
    if (depth > kMaxDepth) return Fail("nesting deeper than 512");
    ++pos;
    Ws();
    if (pos < s.size() && s[pos] == '}') {
      ++pos;
      return true;
    }
    while (true) {
      Ws();
      if (pos >= s.size() || s[pos] != '"') return Fail("expected a member name");
      if (!String()) return false;
      Ws();
      if (pos >= s.size() || s[pos] != ':') return Fail("expected ':'");
      ++pos;
      if (!Value(depth)) return false;
      Ws();
      if (pos >= s.size()) return Fail("unexpected end of input in an object");
      if (s[pos] == ',') {
        ++pos;
        continue;
      }
      if (s[pos] == '}') {
        ++pos;
        return true;
      }
      return Fail("expected ',' or '}'");
    }
  }
  // Skips one value of input that Validate accepted: only strings and brackets are tracked.
  void SkipValid() {
    auto skip_string = [&] {
      ++pos;
      while (true) {
        while (s[pos] != '"' && s[pos] != '\\') ++pos;
        if (s[pos] == '"') break;
        pos += 2;  // a backslash and the character it escapes
      }
      ++pos;
    };
    const char c = s[pos];
    if (c == '"') {
      skip_string();
      return;
    }
    if (c == '{' || c == '[') {
      int depth = 0;
      do {
        const char d = s[pos];
        if (d == '"') {
          skip_string();
          continue;
        }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') --depth;
        ++pos;
      } while (depth > 0);
      return;
    }
    while (pos < s.size() && s[pos] != ',' && s[pos] != '}' && s[pos] != ']' && !IsWs(s[pos])) {
      ++pos;
    }
  }
  bool Array(int depth) {
    if (depth > kMaxDepth) return Fail("nesting deeper than 512");
    ++pos;
    Ws();
    if (pos < s.size() && s[pos] == ']') {
      ++pos;
      return true;
    }
    while (true) {
      if (!Value(depth)) return false;
      Ws();
      if (pos >= s.size()) return Fail("unexpected end of input in an array");
      if (s[pos] == ',') {
        ++pos;
        continue;
      }
      if (s[pos] == ']') {
        ++pos;
        return true;
      }
      return Fail("expected ',' or ']'");
    }
  }
};

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace

bool Validate(std::string_view text, std::string* error) {
  Scanner sc(text);
  bool ok = sc.Value(0);
  if (ok) {
    sc.Ws();
    if (sc.pos != text.size()) ok = sc.Fail("trailing characters after the value");
  }
  if (!ok && error != nullptr) *error = sc.err;
  return ok;
}

const char* KindOf(std::string_view v) {
  if (v.empty()) return "nothing";
  switch (v[0]) {
    case '{':
      return "object";
    case '[':
      return "array";
    case '"':
      return "string";
    case 't':
    case 'f':
      return "boolean";
    case 'n':
      return "null";
    default:
      return "number";
  }
}

Status ForEachMember(std::string_view object,
                     const std::function<Status(std::string_view, std::string_view)>& fn) {
  Scanner sc(object);
  sc.Ws();
  ++sc.pos;  // '{'
  std::string storage;
  while (true) {
    sc.Ws();
    if (sc.s[sc.pos] == '}') return OkStatus();
    if (sc.s[sc.pos] == ',') {
      ++sc.pos;
      sc.Ws();
    }
    const size_t k0 = sc.pos;
    sc.SkipValid();
    const std::string_view key = StringValue(object.substr(k0, sc.pos - k0), storage);
    sc.Ws();
    ++sc.pos;  // ':'
    sc.Ws();
    const size_t v0 = sc.pos;
    sc.SkipValid();
    if (Status s = fn(key, object.substr(v0, sc.pos - v0)); !s.ok()) return s;
  }
}

Status ForEachElement(std::string_view array, const std::function<Status(std::string_view)>& fn) {
  Scanner sc(array);
  sc.Ws();
  ++sc.pos;  // '['
  while (true) {
    sc.Ws();
    if (sc.s[sc.pos] == ']') return OkStatus();
    if (sc.s[sc.pos] == ',') {
      ++sc.pos;
      sc.Ws();
    }
    const size_t v0 = sc.pos;
    sc.SkipValid();
    if (Status s = fn(array.substr(v0, sc.pos - v0)); !s.ok()) return s;
  }
}

std::string_view StringValue(std::string_view raw, std::string& storage) {
  const std::string_view body = raw.substr(1, raw.size() - 2);
  if (body.find('\\') == std::string_view::npos) return body;
  storage.clear();
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      storage += body[i];
      continue;
    }
    const char e = body[++i];
    switch (e) {
      case 'b':
        storage += '\b';
        break;
      case 'f':
        storage += '\f';
        break;
      case 'n':
        storage += '\n';
        break;
      case 'r':
        storage += '\r';
        break;
      case 't':
        storage += '\t';
        break;
      case 'u': {
        uint32_t cp = 0;
        for (int k = 1; k <= 4; ++k) cp = cp * 16 + HexVal(body[i + k]);
        i += 4;
        // A surrogate pair makes one code point; a lone surrogate becomes U+FFFD (as Go does).
        if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 < body.size() && body[i + 1] == '\\' &&
            body[i + 2] == 'u') {
          uint32_t lo = 0;
          for (int k = 3; k <= 6; ++k) lo = lo * 16 + HexVal(body[i + k]);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
          }
        }
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
        AppendUtf8(storage, cp);
        break;
      }
      default:  // '"', '\\', '/'
        storage += e;
    }
  }
  return storage;
}

}  // namespace toposched::api::scan
