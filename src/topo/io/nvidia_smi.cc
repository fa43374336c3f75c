// Readers for the text that nvidia-smi prints: `topo -m`, `topo -p2p` and `nvlink -s`.
//
// The `topo -m` text comes from many hands (terminal copies, issue pastes, collect_env dumps), so
// the reader finds the matrix by its shape rather than by fixed offsets:
//   * the header is the first line whose first token is GPU0 and whose second token is not a
//     matrix cell; it may continue on following lines (a wrapped header) until the first row;
//   * header tokens are matched by name, so glued tokens (`NIC11NIC12`) and the multi-word
//     affinity column names (`CPU Affinity`) need no separators;
//   * rows follow until a line that is neither a row nor row-shaped (blank line, `Legend:`...);
//   * a row's device cells are whitespace tokens; what follows them is affinity text, read
//     tab-aware so that blank cells keep their place (see ReadAffinityCells).
// Everything before the header (provenance, prompts, banners) and after the matrix (legends,
// p2p or nvlink blocks, unrelated lines) is ignored, except the `NIC Legend:` block.
//
// Decisions worth knowing:
//   * Missing rows are an error unless the input carries a `# TRUNCATED` line. In a truncated
//     input a missing pair takes the transposed cell when that row is present; a pair whose two
//     rows are both missing cannot be known and is set to SYS (the most pessimistic class). A GPU
//     without a row has no CPU/NUMA affinity.
//   * NUMA Affinity may be a list (GB200 prints `0,3-9,11-17`: the CPU node followed by the
//     GPU-memory nodes; cpuset-limited containers print `6-7`). Gpu::numa is the smallest node
//     of the list, which is the CPU-bearing node in every sample seen.
//   * `GPU NUMA ID` (the GPU's own memory node on coherent systems) is validated and dropped:
//     NodeTopology has no field for it.
//   * The whole input must be printable UTF-8 text (tabs and ANSI colour remnants allowed) with
//     lines of at most 64 KiB; anything else is rejected up front, which keeps every later step
//     linear in the input size.
#include "topo/io/nvidia_smi.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/source_error.h"
#include "core/strings.h"

namespace toposched::topo::io {
namespace {

constexpr size_t kMaxLineBytes = 64 * 1024;
// The sniffers look at no more than this much text.
constexpr size_t kMaxSniffBytes = 4u << 20;
// GPUs + NICs in one header; bounds the pair matrix (n^2 cells).
constexpr int kMaxDevices = 1024;
constexpr int kMaxCpus = 1 << 16;
constexpr int kMaxNumaIds = 1 << 12;
constexpr long long kMaxIndex = 1 << 20;
constexpr int kTabWidth = 8;

// ---------------------------------------------------------------------------------------------
// Lines and tokens

struct Line {
  int number = 0;    // 1-based line number in the input
  std::string text;  // trailing CR removed, ANSI SGR remnants replaced by spaces (same length)
};

struct Token {
  std::string_view text;
  size_t begin = 0;  // byte offset in the line
  int vcol = 0;      // visual column, tabs expanded to 8-column stops
  size_t end() const { return begin + text.size(); }
  int vend() const { return vcol + static_cast<int>(text.size()); }
};

// A cell or token as this reader names it in errors: in single quotes, cut at 40 characters.
std::string QuoteCell(std::string_view s) {
  constexpr size_t kMax = 40;
  std::string out = "'";
  out += s.size() > kMax ? std::string(s.substr(0, kMax)) + "..." : std::string(s);
  out += "'";
  return out;
}

// `col` is 0-based here and printed 1-based.
Status ErrorAt(const std::string& source, int line, size_t col, const std::string& what) {
  return SourceError(source, SourcePos{line, static_cast<int>(col) + 1}, "", what);
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsAlpha(char c) { return IsUpper(c) || (c >= 'a' && c <= 'z'); }

// Offset of the first byte that is not printable UTF-8 text (tab and ESC allowed), or npos.
size_t FindBadByte(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != 0x1b) || c == 0x7f) return i;
      ++i;
      continue;
    }
    int extra = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c == 0xe0) {
      extra = 2, lo = 0xa0;
    } else if ((c >= 0xe1 && c <= 0xec) || c == 0xee || c == 0xef) {
      extra = 2;
    } else if (c == 0xed) {
      extra = 2, hi = 0x9f;
    } else if (c == 0xf0) {
      extra = 3, lo = 0x90;
    } else if (c >= 0xf1 && c <= 0xf3) {
      extra = 3;
    } else if (c == 0xf4) {
      extra = 3, hi = 0x8f;
    } else {
      return i;
    }
    for (int k = 1; k <= extra; ++k) {
      if (i + k >= s.size()) return i;
      auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xbf)) return i;
    }
    i += extra + 1;
  }
  return std::string_view::npos;
}

// Replaces ANSI SGR sequences (`ESC[4m`, and `[4m` whose ESC byte was lost in a copy) by spaces
// of the same length, so byte offsets stay valid. Returns the offset of an ESC byte that starts
// no SGR sequence, or npos.
size_t BlankAnsi(std::string& s) {
  size_t stray = std::string::npos;
  for (size_t i = 0; i < s.size(); ++i) {
    bool esc = s[i] == '\x1b';
    size_t open = esc ? i + 1 : i;
    if (open >= s.size() || s[open] != '[') {
      if (esc && stray == std::string::npos) stray = i;
      continue;
    }
    size_t j = open + 1;
    while (j < s.size() && (IsDigit(s[j]) || s[j] == ';')) ++j;
    // Without the ESC byte insist on a digit, so that ordinary text like "[m" stays.
    if (j < s.size() && s[j] == 'm' && (esc || j > open + 1)) {
      std::fill(s.begin() + static_cast<long>(i), s.begin() + static_cast<long>(j) + 1, ' ');
      i = j;
    } else if (esc && stray == std::string::npos) {
      stray = i;
    }
  }
  return stray;
}

// Splits the input into lines. Strict mode rejects binary data, stray control bytes and over-long
// lines; lenient mode (the sniffers) truncates and blanks them instead.
StatusOr<std::vector<Line>> SplitLines(std::string_view text, const std::string& source,
                                       bool strict) {
  std::vector<Line> lines;
  size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - text.data()) : text.size();
    ++number;
    std::string_view raw = text.substr(pos, end - pos);
    pos = end + 1;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (raw.size() > kMaxLineBytes) {
      if (strict) {
        return ErrorAt(source, number, kMaxLineBytes,
                       "expected lines of at most " + std::to_string(kMaxLineBytes) +
                           " bytes, found one of " + std::to_string(raw.size()) + " bytes");
      }
      raw = raw.substr(0, kMaxLineBytes);
    }
    Line line{number, std::string(raw)};
    if (strict) {
      size_t bad = FindBadByte(line.text);
      if (bad != std::string::npos) {
        static const char* kHex = "0123456789abcdef";
        auto c = static_cast<unsigned char>(line.text[bad]);
        std::string byte = {'0', 'x', kHex[c >> 4], kHex[c & 15]};
        return ErrorAt(source, number, bad,
                       "expected printable UTF-8 text, found byte " + byte + " (binary data?)");
      }
    } else {
      for (char& c : line.text) {
        auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t' && c != '\x1b') || u == 0x7f) c = ' ';
      }
    }
    size_t stray = BlankAnsi(line.text);
    if (stray != std::string::npos) {
      if (strict) {
        return ErrorAt(source, number, stray,
                       "expected printable text, found an ESC byte that starts no colour code");
      }
      line.text[stray] = ' ';
      BlankAnsi(line.text);
      for (char& c : line.text) {
        if (c == '\x1b') c = ' ';
      }
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<Line> SniffLines(std::string_view text) {
  auto lines = SplitLines(text.substr(0, std::min(text.size(), kMaxSniffBytes)), "", false);
  return lines.ok() ? std::move(lines).value() : std::vector<Line>{};
}

// Whitespace tokens with their byte offsets and visual columns.
std::vector<Token> Tokenize(std::string_view s) {
  std::vector<Token> out;
  int vcol = 0;
  size_t i = 0;
  auto advance = [&](char c) {
    if (c == '\t') {
      vcol = (vcol / kTabWidth + 1) * kTabWidth;
    } else if ((static_cast<unsigned char>(c) & 0xc0) != 0x80) {
      ++vcol;  // UTF-8 continuation bytes take no column
    }
  };
  while (i < s.size()) {
    while (i < s.size() && IsBlank(s[i])) advance(s[i++]);
    if (i >= s.size()) break;
    Token t;
    t.begin = i;
    t.vcol = vcol;
    while (i < s.size() && !IsBlank(s[i])) advance(s[i++]);
    t.text = s.substr(t.begin, i - t.begin);
    out.push_back(t);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Cell vocabulary

bool IsTopoCell(std::string_view t) {
  // Cheap first-letter filter: ParsePath builds an error message for every miss.
  if (t.empty() || std::string_view("XNPS").find(t[0]) == std::string_view::npos) return false;
  return t == "X" || ParsePath(t).ok();
}

bool IsP2pCode(std::string_view t) {
  static const std::set<std::string_view> kCodes = {"OK", "CNS", "GNS", "TNS", "NS", "DR", "U"};
  return kCodes.count(t) > 0;
}

// "GPU12" with prefix "GPU" -> 12. Digits only, bounded.
std::optional<int> NumberedName(std::string_view t, std::string_view prefix) {
  if (t.size() <= prefix.size() || t.size() > prefix.size() + 7 || !StartsWith(t, prefix)) {
    return std::nullopt;
  }
  int v = 0;
  for (char c : t.substr(prefix.size())) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool IsRowShaped(const std::vector<Token>& toks) {
  return toks.size() >= 2 && (IsTopoCell(toks[1].text) || IsP2pCode(toks[1].text));
}

// nvidia-smi numbers the GPUs it shows from 0, so the header starts with GPU0, possibly glued
// to the next token ("GPU0GPU1"). Prose that merely mentions a GPU rarely starts that way.
bool StartsWithGpu0(std::string_view t) {
  return StartsWith(t, "GPU0") && (t.size() == 4 || IsUpper(t[4]));
}

bool IsHeaderCandidate(const std::vector<Token>& toks) {
  return !toks.empty() && !IsRowShaped(toks) && StartsWithGpu0(toks[0].text);
}

bool IsDeviceishName(std::string_view t) {
  if (t.empty() || !IsAlpha(t[0])) return false;
  bool digit_or_underscore = false;
  for (char c : t) {
    if (!(IsAlpha(c) || IsDigit(c) || c == '_' || c == '.' || c == '-')) return false;
    if (IsDigit(c) || c == '_') digit_or_underscore = true;
  }
  return digit_or_underscore;
}

// A further line of a wrapped header: device names or affinity column names, no cells, no
// colon, and not a header of its own (those start with GPU0).
bool IsHeaderContinuation(const std::vector<Token>& toks) {
  if (toks.empty() || IsRowShaped(toks) || StartsWithGpu0(toks[0].text)) return false;
  std::string_view first = toks[0].text;
  if (!(first == "CPU" || first == "NUMA" || first == "GPU" || IsDeviceishName(first))) {
    return false;
  }
  for (const Token& t : toks) {
    if (t.text.find(':') != std::string_view::npos || IsTopoCell(t.text) || IsDigit(t.text[0])) {
      return false;
    }
  }
  return true;
}

enum class BlockKind { kTopo, kP2p };

// The kind of matrix a row belongs to, from its first cell that is not the diagonal.
BlockKind RowKind(const std::vector<Token>& toks) {
  for (size_t i = 1; i < toks.size(); ++i) {
    if (toks[i].text == "X") continue;
    if (IsP2pCode(toks[i].text)) return BlockKind::kP2p;
    break;
  }
  return BlockKind::kTopo;
}

struct Block {
  BlockKind kind = BlockKind::kTopo;
  size_t header_first = 0;  // line indices (not numbers)
  size_t header_last = 0;
  size_t first_row = 0;
};

struct Blocks {
  std::vector<Block> blocks;
  std::optional<size_t> header_without_rows;  // first header candidate with no row after it
  std::optional<size_t> orphan_row;           // first GPU row seen with no header before it
};

Blocks FindBlocks(const std::vector<Line>& lines) {
  Blocks out;
  bool in_rows = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::vector<Token> toks = Tokenize(lines[i].text);
    if (IsRowShaped(toks)) {
      if (!in_rows && !out.orphan_row && NumberedName(toks[0].text, "GPU")) out.orphan_row = i;
      continue;
    }
    in_rows = false;
    if (!IsHeaderCandidate(toks)) continue;
    size_t j = i + 1;
    while (j < lines.size() && IsHeaderContinuation(Tokenize(lines[j].text))) ++j;
    std::vector<Token> row = j < lines.size() ? Tokenize(lines[j].text) : std::vector<Token>{};
    if (!IsRowShaped(row)) {
      if (!out.header_without_rows) out.header_without_rows = i;
      i = j - 1;  // continuation lines cannot start a header; keeps the scan linear
      continue;
    }
    out.blocks.push_back(Block{RowKind(row), i, j - 1, j});
    in_rows = true;
    i = j;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Header

enum class ColKind { kGpu, kNic, kCpuAffinity, kNumaAffinity, kGpuNumaId };

struct Column {
  ColKind kind = ColKind::kGpu;
  std::string name;  // device label as rows name it ("GPU3", "NIC0", "mlx5_0")
  int index = -1;    // n of GPU<n> / NIC<n>; -1 for a NIC named directly
  int line = 0;
  size_t begin = 0;
  int vcol = 0;
};

bool IsDevice(const Column& c) { return c.kind == ColKind::kGpu || c.kind == ColKind::kNic; }

const char* AffinityName(ColKind k) {
  switch (k) {
    case ColKind::kCpuAffinity:
      return "CPU Affinity";
    case ColKind::kNumaAffinity:
      return "NUMA Affinity";
    case ColKind::kGpuNumaId:
      return "GPU NUMA ID";
    default:
      return "device";
  }
}

// Matches words separated by runs of blanks at s[p]; returns the end offset or npos.
size_t MatchWords(std::string_view s, size_t p, std::initializer_list<std::string_view> words) {
  bool first = true;
  for (std::string_view w : words) {
    if (!first) {
      size_t q = p;
      while (q < s.size() && IsBlank(s[q])) ++q;
      if (q == p) return std::string_view::npos;
      p = q;
    }
    first = false;
    if (s.substr(p, w.size()) != w) return std::string_view::npos;
    p += w.size();
  }
  return p;
}

// True when a new header token may start at s[p] right after a glued one.
bool StartsHeaderToken(std::string_view s, size_t p) {
  return p >= s.size() || IsBlank(s[p]) || IsUpper(s[p]);
}

Status ScanHeaderLine(const Line& line, const std::string& source, std::vector<Column>* cols) {
  std::string_view s = line.text;
  size_t p = 0;
  int vcol = 0;
  size_t vpos = 0;  // offset vcol refers to
  auto vcol_at = [&](size_t off) {
    for (; vpos < off; ++vpos) {
      if (s[vpos] == '\t') {
        vcol = (vcol / kTabWidth + 1) * kTabWidth;
      } else if ((static_cast<unsigned char>(s[vpos]) & 0xc0) != 0x80) {
        ++vcol;
      }
    }
    return vcol;
  };
  while (true) {
    while (p < s.size() && IsBlank(s[p])) ++p;
    if (p >= s.size()) break;
    Column col;
    col.line = line.number;
    col.begin = p;
    col.vcol = vcol_at(p);
    size_t e = std::string_view::npos;
    if ((e = MatchWords(s, p, {"CPU", "Affinity"})) != std::string_view::npos) {
      col.kind = ColKind::kCpuAffinity;
    } else if ((e = MatchWords(s, p, {"NUMA", "Affinity"})) != std::string_view::npos) {
      col.kind = ColKind::kNumaAffinity;
    } else if ((e = MatchWords(s, p, {"GPU", "NUMA", "ID"})) != std::string_view::npos) {
      col.kind = ColKind::kGpuNumaId;
    } else if ((s.substr(p, 3) == "GPU" || s.substr(p, 3) == "NIC") && p + 3 < s.size() &&
               IsDigit(s[p + 3])) {
      e = p + 3;
      while (e < s.size() && IsDigit(s[e])) ++e;
      col.kind = s[p] == 'G' ? ColKind::kGpu : ColKind::kNic;
      col.name = std::string(s.substr(p, e - p));
      std::optional<int> n = NumberedName(col.name, col.name.substr(0, 3));
      if (!n || *n > kMaxIndex) {
        return ErrorAt(
            source, line.number, p,
            "expected a device number of at most 7 digits, found " + QuoteCell(col.name));
      }
      col.index = *n;
      if (!StartsHeaderToken(s, e)) {
        size_t w = e;
        while (w < s.size() && !IsBlank(s[w])) ++w;
        return ErrorAt(source, line.number, p,
                       "expected a header device name (GPU<n>, NIC<n> or a NIC device such as "
                       "mlx5_0), found " +
                           QuoteCell(s.substr(p, w - p)));
      }
    } else {
      e = p;
      while (e < s.size() && !IsBlank(s[e])) ++e;
      std::string_view word = s.substr(p, e - p);
      bool name_ok = IsAlpha(word[0]) && !IsTopoCell(word) && !IsP2pCode(word);
      for (char c : word) {
        name_ok = name_ok && (IsAlpha(c) || IsDigit(c) || c == '_' || c == '.' || c == '-');
      }
      if (!name_ok) {
        return ErrorAt(source, line.number, p,
                       "expected a header column (GPU<n>, NIC<n>, a NIC device name, CPU "
                       "Affinity, NUMA Affinity or GPU NUMA ID), found " +
                           QuoteCell(word));
      }
      col.kind = ColKind::kNic;
      col.name = std::string(word);
    }
    if (col.name.empty()) col.name = AffinityName(col.kind);
    cols->push_back(std::move(col));
    if (static_cast<int>(cols->size()) > kMaxDevices + 3) {
      return ErrorAt(
          source, line.number, p,
          "expected at most " + std::to_string(kMaxDevices) + " devices in the header, found more");
    }
    p = e;
  }
  return OkStatus();
}

struct Header {
  std::vector<Column> devices;   // header order
  std::vector<Column> affinity;  // header order
  std::map<std::string, int> by_name;
  int gpus = 0;
  int nics = 0;
};

StatusOr<Header> ParseHeader(const std::vector<Line>& lines, const Block& b,
                             const std::string& source) {
  std::vector<Column> cols;
  for (size_t i = b.header_first; i <= b.header_last; ++i) {
    RETURN_IF_ERROR(ScanHeaderLine(lines[i], source, &cols));
  }
  Header h;
  std::set<ColKind> seen_affinity;
  std::set<int> gpu_indices, nic_indices;
  for (Column& c : cols) {
    auto here = [&](const std::string& what) { return ErrorAt(source, c.line, c.begin, what); };
    if (!IsDevice(c)) {
      if (!seen_affinity.insert(c.kind).second) {
        return here("expected each affinity column once, found " + QuoteCell(c.name) + " again");
      }
      h.affinity.push_back(c);
      continue;
    }
    if (!h.affinity.empty()) {
      return here("expected device columns before the affinity columns, found " +
                  QuoteCell(c.name) + " after " + QuoteCell(h.affinity.back().name));
    }
    if (h.by_name.count(c.name)) {
      return here("expected each device once in the header, found " + QuoteCell(c.name) + " again");
    }
    if (c.kind == ColKind::kGpu) {
      if (!gpu_indices.insert(c.index).second) {
        return here("expected each GPU index once in the header, found " + QuoteCell(c.name));
      }
      ++h.gpus;
    } else {
      if (c.index >= 0 && !nic_indices.insert(c.index).second) {
        return here("expected each NIC index once in the header, found " + QuoteCell(c.name));
      }
      ++h.nics;
    }
    h.by_name[c.name] = static_cast<int>(h.devices.size());
    h.devices.push_back(c);
  }
  if (h.gpus == 0) {
    return ErrorAt(source, lines[b.header_first].number, 0,
                   "expected GPU<n> columns in the header, found none");
  }
  if (static_cast<int>(h.devices.size()) > kMaxDevices) {
    return ErrorAt(source, lines[b.header_first].number, 0,
                   "expected at most " + std::to_string(kMaxDevices) + " devices, found " +
                       std::to_string(h.devices.size()));
  }
  return h;
}

std::string DeviceList(const Header& h) {
  std::string out;
  size_t shown = 0;
  for (const Column& c : h.devices) {
    if (shown == 12) {
      out += " ...";
      break;
    }
    out += (shown++ ? " " : "") + c.name;
  }
  return out;
}

// The header column a matrix row belongs to, from its label; -1 when the line is not a row
// at all (the matrix ended); an error for a row-shaped line with a label not in the header.
StatusOr<int> RowDevice(const Header& h, const std::vector<Token>& toks, const std::string& source,
                        int line_number) {
  auto found = h.by_name.find(std::string(toks[0].text));
  if (found != h.by_name.end()) return found->second;
  if (!IsRowShaped(toks)) return -1;
  return ErrorAt(source, line_number, toks[0].begin,
                 "expected a row label from the header (" + DeviceList(h) + "), found " +
                     QuoteCell(toks[0].text));
}

// ---------------------------------------------------------------------------------------------
// Affinity cells

struct Cell {
  std::string text;  // trimmed; empty = blank cell
  size_t begin = 0;  // byte offset in the line (for errors)
};

// Maps tab-separated cells onto the k affinity columns. nvidia-smi prints an extra empty cell
// before `GPU NUMA ID` ("0-47\t0\t\tN/A"), so when there are more cells than columns the last
// column takes the single non-blank cell among the surplus.
Status MapPieces(const std::vector<Cell>& pieces, size_t k, const Line& line,
                 const std::string& source, std::vector<Cell>* out) {
  out->assign(k, Cell{});
  if (k == 0) {
    for (const Cell& p : pieces) {
      if (!p.text.empty()) {
        return ErrorAt(source, line.number, p.begin,
                       "expected nothing after the device cells (the header has no affinity "
                       "columns), found " +
                           QuoteCell(p.text));
      }
    }
    return OkStatus();
  }
  for (size_t i = 0; i < pieces.size() && i + 1 < k; ++i) (*out)[i] = pieces[i];
  if (pieces.size() <= k) {
    if (pieces.size() == k) (*out)[k - 1] = pieces[k - 1];
    return OkStatus();
  }
  for (size_t i = k - 1; i < pieces.size(); ++i) {
    if (pieces[i].text.empty()) continue;
    if (!(*out)[k - 1].text.empty()) {
      return ErrorAt(source, line.number, pieces[i].begin,
                     "expected at most " + std::to_string(k) + " affinity values, found an extra " +
                         QuoteCell(pieces[i].text));
    }
    (*out)[k - 1] = pieces[i];
  }
  return OkStatus();
}

// Reads the affinity cells after the last device cell of a row (`last` is that cell's token).
//   * One value per column, or none: take them in order, whatever runs of tabs and spaces
//     separate them (condensed, hand-edited or pasted spacing).
//   * Tabs in the tail and some values blank: split on tabs so blank cells keep their place.
//   * Spaces only, fewer values than columns (blank cells): when every value sits on an 8-column
//     tab stop, the spaces are expanded tabs and the tab cells are rebuilt from the stops;
//     otherwise each value goes to the header column nearest to it.
Status ReadAffinityCells(const Line& line, const std::vector<Token>& toks, size_t last,
                         const Header& h, const std::string& source, std::vector<Cell>* out) {
  const size_t k = h.affinity.size();
  std::string_view s = line.text;
  size_t tail_begin = toks[last].end();
  std::string_view tail = s.substr(tail_begin);
  std::vector<Token> rest(toks.begin() + static_cast<long>(last) + 1, toks.end());
  auto as_cell = [](const Token& t) { return Cell{std::string(t.text), t.begin}; };
  // One value per column (or none at all): whatever runs of tabs and spaces separate them (a
  // paste from a document or a chat turns separators into irregular runs, and cells that hold
  // only a space), they are the columns in order. Only rows with some values blank need the
  // separators to say which.
  if (k > 0 && (rest.size() == k || rest.empty())) {
    out->assign(k, Cell{});
    for (size_t i = 0; i < rest.size(); ++i) (*out)[i] = as_cell(rest[i]);
    return OkStatus();
  }

  if (tail.find('\t') != std::string_view::npos) {
    std::vector<Cell> pieces;
    bool mixed = false;
    size_t start = 0;
    while (true) {
      size_t tab = tail.find('\t', start);
      std::string_view raw =
          tail.substr(start, tab == std::string_view::npos ? tail.npos : tab - start);
      std::string_view t = Trim(raw);
      size_t off = tail_begin + start + static_cast<size_t>(t.data() - raw.data());
      if (t.find_first_of(" \t") != std::string_view::npos) mixed = true;
      pieces.push_back(Cell{std::string(t), t.empty() ? tail_begin + start : off});
      if (tab == std::string_view::npos) break;
      start = tab + 1;
    }
    // The text before the first tab is the padding of the last device cell (" X ").
    if (pieces.front().text.empty()) pieces.erase(pieces.begin());
    if (!mixed) return MapPieces(pieces, k, line, source, out);
  }

  out->assign(k, Cell{});
  if (rest.empty()) return OkStatus();
  if (rest.size() > k) {
    const Token& extra = rest[k];
    return ErrorAt(source, line.number, extra.begin,
                   k == 0 ? "expected nothing after the device cells (the header has no affinity "
                            "columns), found " +
                                QuoteCell(extra.text)
                          : "expected at most " + std::to_string(k) +
                                " affinity values after the device cells, found an extra " +
                                QuoteCell(extra.text));
  }
  bool on_grid = toks[0].vcol == 0;
  int prev_end = toks[last].vend();
  int piece = -1;
  std::vector<Cell> pieces;
  for (const Token& t : rest) {
    int tabs = t.vcol / kTabWidth - prev_end / kTabWidth;
    if (t.vcol % kTabWidth != 0 || tabs < 1) {
      on_grid = false;
      break;
    }
    piece += tabs;
    pieces.resize(static_cast<size_t>(piece) + 1);
    pieces.back() = as_cell(t);
    prev_end = t.vend();
  }
  if (on_grid) return MapPieces(pieces, k, line, source, out);

  // Nearest header column, with the header shifted so that its last device column lines up
  // with this row's last device cell (headers without indentation are offset by a tab).
  int shift = toks[last].vcol - h.devices.back().vcol;
  size_t next = 0;
  for (const Token& t : rest) {
    size_t best = next;
    for (size_t c = next; c < k; ++c) {
      int d = std::abs(t.vcol - (h.affinity[c].vcol + shift));
      if (d < std::abs(t.vcol - (h.affinity[best].vcol + shift))) best = c;
    }
    // Leave room for the values still to come.
    size_t remaining = static_cast<size_t>(&rest.back() - &t);
    best = std::min(best, k - 1 - remaining);
    (*out)[best] = as_cell(t);
    next = best + 1;
  }
  return OkStatus();
}

struct Affinity {
  std::optional<std::vector<int>> cpus;
  std::optional<int> numa;
};

bool IsNotAvailable(std::string_view t) { return t.empty() || t == "N/A"; }

StatusOr<Affinity> InterpretAffinity(const std::vector<Cell>& cells, const Header& h,
                                     const Line& line, const std::string& source) {
  Affinity a;
  for (size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = cells[i];
    if (IsNotAvailable(c.text)) continue;
    ColKind kind = h.affinity[i].kind;
    auto bad = [&](const Status& s) {
      return ErrorAt(source, line.number, c.begin,
                     std::string("expected ") + AffinityName(kind) +
                         (kind == ColKind::kGpuNumaId ? " to be a number or N/A"
                                                      : " to be a list like 0-23,48-71 or N/A") +
                         ", found " + QuoteCell(c.text) + " (" + s.message() + ")");
    };
    if (kind == ColKind::kCpuAffinity) {
      auto cpus = ParseIntList(c.text, kMaxCpus);
      if (!cpus.ok()) return bad(cpus.status());
      a.cpus = std::move(cpus).value();
    } else if (kind == ColKind::kNumaAffinity) {
      auto ids = ParseIntList(c.text, kMaxNumaIds);
      if (!ids.ok()) return bad(ids.status());
      // A list (GB200: CPU node then GPU-memory nodes; cpusets: a range): keep the smallest id.
      if (!ids->empty()) a.numa = ids->front();
    } else {
      auto id = ParseInt(c.text);
      if (!id.ok()) return bad(id.status());
      if (*id < 0 || *id > kMaxIndex) return bad(InvalidArgumentError("out of range"));
    }
  }
  return a;
}

// ---------------------------------------------------------------------------------------------
// topo -m

struct CellPos {
  int line = 0;
  size_t col = 0;
};

bool IsTruncated(const std::vector<Line>& lines) {
  for (const Line& l : lines) {
    if (StartsWith(Trim(l.text), "# TRUNCATED")) return true;
  }
  return false;
}

// `NIC Legend:` followed by `NIC<n>: <name>` lines. A legend cut short names what it lists.
Status ReadNicLegend(const std::vector<Line>& lines, size_t from, const Header& h,
                     const std::string& source, std::map<int, std::string>* names) {
  size_t i = from;
  while (i < lines.size() && Trim(lines[i].text) != "NIC Legend:") ++i;
  std::map<std::string, int> used;
  for (++i; i < lines.size(); ++i) {
    std::string_view t = Trim(lines[i].text);
    if (t.empty()) {
      if (names->empty()) continue;
      break;
    }
    size_t colon = t.find(':');
    std::optional<int> n =
        colon == std::string_view::npos ? std::nullopt : NumberedName(t.substr(0, colon), "NIC");
    std::string_view name = colon == std::string_view::npos ? "" : Trim(t.substr(colon + 1));
    if (!n || name.empty() || name.find_first_of(" \t") != std::string_view::npos) break;
    size_t col = static_cast<size_t>(name.data() - lines[i].text.data());
    // Entries for NICs the header does not list are ignored (nothing to attach them to).
    if (!h.by_name.count("NIC" + std::to_string(*n))) continue;
    auto [it, fresh] = used.emplace(std::string(name), lines[i].number);
    if (!fresh) {
      return ErrorAt(source, lines[i].number, col,
                     "expected distinct NIC names in the NIC legend, found " + QuoteCell(name) +
                         " again (first at line " + std::to_string(it->second) + ")");
    }
    (*names)[*n] = std::string(name);
  }
  return OkStatus();
}

// The device matrix of a topo block as read, before it becomes a NodeTopology: every cell's
// path (row-major, header order; nullopt on the diagonal and in rows a truncated paste lacks)
// and where it stood, each row's line, each device's affinity.
struct TopoTable {
  int n = 0;
  std::vector<std::optional<Path>> cells;
  std::vector<CellPos> cell_at;
  std::vector<int> row_line;
  std::vector<Affinity> affinity;
  size_t end = 0;  // the first line after the matrix
};

// One matrix row (device `d`, its tokens `toks`) into the table: a path per header device
// (X on the diagonal alone, no NVLink to a NIC), then its affinity cells. Tokens are
// whitespace runs, so any mix of tabs and spaces separates cells.
Status ReadTopoRow(const Header& h, const Line& line, const std::vector<Token>& toks, int d,
                   const std::string& source, TopoTable& tab) {
  const int n = tab.n;
  auto label_of = [&](int x) { return h.devices[x].name; };
  auto& cells = tab.cells;
  auto& cell_at = tab.cell_at;
  auto& row_line = tab.row_line;
  auto here = [&](size_t col, const std::string& what) {
    return ErrorAt(source, line.number, col, what);
  };
  if (row_line[d]) {
    return here(toks[0].begin, "expected one row per device, found a second row for " +
                                   label_of(d) + " (first at line " + std::to_string(row_line[d]) +
                                   ")");
  }
  row_line[d] = line.number;
  for (int c = 0; c < n; ++c) {
    size_t k = static_cast<size_t>(c) + 1;
    auto expected = [&] {
      return "expected " + std::to_string(n) + " device cells in row " + label_of(d) +
             " (one per header device)";
    };
    if (k >= toks.size()) {
      return here(line.text.size(),
                  expected() + ", found the line ending after " + std::to_string(c));
    }
    std::string_view t = toks[k].text;
    if (t == "X") {
      if (c != d) {
        return here(toks[k].begin, "expected X only on the diagonal, found X in row " +
                                       label_of(d) + " under " + label_of(c));
      }
      continue;
    }
    auto p = ParsePath(t);
    if (!p.ok()) {
      if (IsDigit(t[0]) || t == "N/A") {
        return here(toks[k].begin, expected() + ", found " + std::to_string(c) +
                                       " cells then affinity text " + QuoteCell(t));
      }
      return here(toks[k].begin,
                  "expected a path (X, NV<n>, PIX, PXB, PHB, NODE, SYS or SOC) "
                  "in row " +
                      label_of(d) + " under " + label_of(c) + ", found " + QuoteCell(t));
    }
    if (c == d) {
      return here(toks[k].begin, "expected X on the diagonal (" + label_of(d) +
                                     " to itself), "
                                     "found " +
                                     QuoteCell(t));
    }
    bool nic_pair = h.devices[d].kind == ColKind::kNic || h.devices[c].kind == ColKind::kNic;
    if (nic_pair && p->cls == PathClass::kNV) {
      return here(toks[k].begin, "expected a PCIe path between " + label_of(d) + " and " +
                                     label_of(c) + " (NVLink joins GPUs only), found " +
                                     QuoteCell(t));
    }
    cells[static_cast<size_t>(d) * n + c] = *p;
    cell_at[static_cast<size_t>(d) * n + c] = CellPos{line.number, toks[k].begin};
  }
  size_t last = static_cast<size_t>(n);
  if (last + 1 < toks.size() && IsTopoCell(toks[last + 1].text)) {
    return here(toks[last + 1].begin,
                "expected " + std::to_string(n) + " device cells in row " + label_of(d) +
                    " (one per header device), found more: " + QuoteCell(toks[last + 1].text));
  }
  std::vector<Cell> aff_cells;
  RETURN_IF_ERROR(ReadAffinityCells(line, toks, last, h, source, &aff_cells));
  ASSIGN_OR_RETURN(tab.affinity[d], InterpretAffinity(aff_cells, h, line, source));
  return OkStatus();
}

// Every row of the matrix, from b.first_row to the first line that is not a row; then a row
// for every header device (unless the paste is marked truncated) and a symmetric matrix.
StatusOr<TopoTable> ReadTopoTable(const std::vector<Line>& lines, const Block& b, const Header& h,
                                  const std::string& source) {
  TopoTable tab;
  const int n = tab.n = static_cast<int>(h.devices.size());
  auto label_of = [&](int d) { return h.devices[d].name; };
  tab.cells.resize(static_cast<size_t>(n) * n);
  tab.cell_at.resize(static_cast<size_t>(n) * n);
  tab.row_line.assign(n, 0);
  tab.affinity.resize(n);
  const auto& cells = tab.cells;
  const auto& cell_at = tab.cell_at;
  const auto& row_line = tab.row_line;
  size_t i = b.first_row;
  for (; i < lines.size(); ++i) {
    std::vector<Token> toks = Tokenize(lines[i].text);
    if (toks.empty()) break;
    ASSIGN_OR_RETURN(const int d, RowDevice(h, toks, source, lines[i].number));
    if (d < 0) break;  // the matrix ended (legend, prose)
    RETURN_IF_ERROR(ReadTopoRow(h, lines[i], toks, d, source, tab));
  }
  tab.end = i;

  const bool truncated = IsTruncated(lines);
  for (int d = 0; d < n; ++d) {
    if (row_line[d] || truncated) continue;
    int at = i < lines.size() ? lines[i].number : (lines.empty() ? 1 : lines.back().number + 1);
    return ErrorAt(source, at, 0,
                   "expected a row for " + label_of(d) + " (every header device has one), found " +
                       (i < lines.size() ? "the end of the matrix" : "the end of the input") +
                       "; mark a cut-off paste with a '# TRUNCATED' line to import the rows "
                       "present");
  }
  for (int a = 0; a < n; ++a) {
    for (int c = a + 1; c < n; ++c) {
      const auto& x = cells[static_cast<size_t>(a) * n + c];
      const auto& y = cells[static_cast<size_t>(c) * n + a];
      if (!x || !y || *x == *y) continue;
      CellPos wx = cell_at[static_cast<size_t>(a) * n + c];
      CellPos wy = cell_at[static_cast<size_t>(c) * n + a];
      bool x_later = wx.line > wy.line;
      CellPos later = x_later ? wx : wy, earlier = x_later ? wy : wx;
      const Path& here = x_later ? *x : *y;
      const Path& there = x_later ? *y : *x;
      return ErrorAt(source, later.line, later.col,
                     "expected a symmetric matrix, found " + label_of(a) + "-" + label_of(c) +
                         " = " + PathName(here) + " here but " + PathName(there) + " at line " +
                         std::to_string(earlier.line) + " column " +
                         std::to_string(earlier.col + 1));
    }
  }

  return tab;
}

// The node of a read matrix: GPUs and NICs in header order (a NIC named by the legend where it
// has one), NUMA nodes from the affinities, every pair's path.
StatusOr<NodeTopology> BuildTopology(const Header& h, const TopoTable& tab,
                                     const std::map<int, std::string>& legend,
                                     const std::vector<Line>& lines, const Block& b,
                                     const std::string& source) {
  const int n = tab.n;
  const auto& affinity = tab.affinity;
  const auto& cells = tab.cells;
  NodeTopology t;
  t.source = source;
  std::vector<int> dev_of(n);  // header position -> device number in NodeTopology
  std::map<int, std::set<int>> numa_cpus;
  for (int d = 0; d < n; ++d) {
    const Column& c = h.devices[d];
    if (c.kind != ColKind::kGpu) continue;
    Gpu g;
    g.index = c.index;
    g.numa = affinity[d].numa;
    g.cpus = affinity[d].cpus;
    if (g.numa) {
      auto& set = numa_cpus[*g.numa];
      if (g.cpus) set.insert(g.cpus->begin(), g.cpus->end());
    }
    dev_of[d] = static_cast<int>(t.gpus.size());
    t.gpus.push_back(std::move(g));
  }
  for (int d = 0; d < n; ++d) {
    const Column& c = h.devices[d];
    if (c.kind != ColKind::kNic) continue;
    Nic nic;
    nic.index = c.index >= 0 ? c.index : static_cast<int>(t.nics.size());
    if (c.index < 0) {
      nic.name = c.name;
    } else {
      auto it = legend.find(c.index);
      nic.name = it != legend.end() ? it->second : c.name;
    }
    nic.numa = affinity[d].numa;
    dev_of[d] = static_cast<int>(t.gpus.size() + t.nics.size());
    t.nics.push_back(std::move(nic));
  }
  std::set<std::string> nic_names;
  for (const Nic& nic : t.nics) {
    if (!nic_names.insert(nic.name).second) {
      return ErrorAt(source, lines[b.header_first].number, 0,
                     "expected distinct NIC names, found " + QuoteCell(nic.name) +
                         " twice (header and NIC legend)");
    }
  }
  for (const auto& [id, cpus] : numa_cpus) {
    t.numa_nodes.push_back(NumaNode{id, std::vector<int>(cpus.begin(), cpus.end())});
  }
  t.CompleteNumaNodes();
  t.ResetPaths();
  for (int a = 0; a < n; ++a) {
    for (int c = a + 1; c < n; ++c) {
      const auto& x = cells[static_cast<size_t>(a) * n + c];
      const auto& y = cells[static_cast<size_t>(c) * n + a];
      // Both rows missing (truncated input): the pair cannot be known; SYS is the safe guess.
      Path p = x ? *x : (y ? *y : Path{PathClass::kSYS, 0});
      t.set_path(dev_of[a], dev_of[c], p);
    }
  }
  t.InferNicNuma();
  t.InferNvSwitch();
  Status valid = t.Validate();
  if (!valid.ok()) return InvalidArgumentError(source + ": " + valid.message());
  return t;
}

StatusOr<NodeTopology> ParseTopoBlock(const std::vector<Line>& lines, const Block& b,
                                      const std::string& source) {
  ASSIGN_OR_RETURN(Header h, ParseHeader(lines, b, source));
  ASSIGN_OR_RETURN(TopoTable tab, ReadTopoTable(lines, b, h, source));
  std::map<int, std::string> legend;
  RETURN_IF_ERROR(ReadNicLegend(lines, tab.end, h, source, &legend));
  return BuildTopology(h, tab, legend, lines, b, source);
}

// ---------------------------------------------------------------------------------------------
// topo -p2p

std::string P2pModeName(std::string_view m) {
  if (m == "r") return "read";
  if (m == "w") return "write";
  if (m == "rw") return "read-write";
  if (m == "n") return "nvlink";
  if (m == "a") return "atomics";
  if (m == "p") return "pcie";
  return "";
}

StatusOr<P2pMatrix> ParseP2pBlock(const std::vector<Line>& lines, const Block& b,
                                  const std::string& source) {
  ASSIGN_OR_RETURN(Header h, ParseHeader(lines, b, source));
  for (const Column& c : h.devices) {
    if (c.kind != ColKind::kGpu) {
      return ErrorAt(
          source, c.line, c.begin,
          "expected only GPU<n> columns in a topo -p2p header, found " + QuoteCell(c.name));
    }
  }
  if (!h.affinity.empty()) {
    const Column& c = h.affinity.front();
    return ErrorAt(
        source, c.line, c.begin,
        "expected only GPU<n> columns in a topo -p2p header, found " + QuoteCell(c.name));
  }
  const int n = static_cast<int>(h.devices.size());
  P2pMatrix m;
  for (const Column& c : h.devices) m.gpus.push_back(c.index);
  m.status.assign(n, std::vector<std::string>(n));
  std::vector<int> row_line(n, 0);
  size_t i = b.first_row;
  for (; i < lines.size(); ++i) {
    const Line& line = lines[i];
    std::vector<Token> toks = Tokenize(line.text);
    if (toks.empty()) break;
    ASSIGN_OR_RETURN(const int d, RowDevice(h, toks, source, line.number));
    if (d < 0) break;  // the matrix ended (legend, prose)
    if (row_line[d]) {
      return ErrorAt(source, line.number, toks[0].begin,
                     "expected one row per GPU, found a second row for " + h.devices[d].name +
                         " (first at line " + std::to_string(row_line[d]) + ")");
    }
    row_line[d] = line.number;
    if (toks.size() != static_cast<size_t>(n) + 1) {
      size_t col = toks.size() > static_cast<size_t>(n) + 1 ? toks[n + 1].begin : line.text.size();
      return ErrorAt(source, line.number, col,
                     "expected " + std::to_string(n) + " cells in row " + h.devices[d].name +
                         ", found " + std::to_string(toks.size() - 1));
    }
    for (int c = 0; c < n; ++c) {
      const Token& t = toks[static_cast<size_t>(c) + 1];
      bool diag = c == d;
      if (diag ? t.text != "X" : !IsP2pCode(t.text)) {
        return ErrorAt(source, line.number, t.begin,
                       diag ? "expected X on the diagonal, found " + QuoteCell(t.text)
                            : "expected a p2p status (OK, CNS, GNS, TNS, NS, DR or U), found " +
                                  QuoteCell(t.text));
      }
      m.status[d][c] = std::string(t.text);
    }
  }
  const bool truncated = IsTruncated(lines);
  for (int d = 0; d < n; ++d) {
    if (row_line[d]) continue;
    if (!truncated) {
      int at = i < lines.size() ? lines[i].number : lines.back().number + 1;
      return ErrorAt(source, at, 0, "expected a row for " + h.devices[d].name + ", found none");
    }
    // A cut-off paste: unknown, except the diagonal.
    for (int c = 0; c < n; ++c) m.status[d][c] = c == d ? "X" : "U";
  }
  for (size_t j = 0; j < b.header_first; ++j) {
    std::vector<Token> toks = Tokenize(lines[j].text);
    for (size_t k = 0; k + 1 < toks.size(); ++k) {
      if (toks[k].text == "-p2p" || toks[k].text == "--p2pstatus") {
        m.mode = P2pModeName(toks[k + 1].text);
      }
    }
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// nvlink -s

// "<prefix><number>: <rest>" with a prefix such as "GPU " or "Link " -> the number (1 to 7
// digits, blanks around it allowed) and the trimmed text after the first colon.
std::optional<std::pair<int, std::string_view>> NumberedLine(std::string_view t,
                                                             std::string_view prefix) {
  if (!StartsWith(t, prefix)) return std::nullopt;
  size_t colon = t.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view num = Trim(t.substr(prefix.size(), colon - prefix.size()));
  if (num.empty() || num.size() > 7) return std::nullopt;
  int v = 0;
  for (char c : num) {
    if (!IsDigit(c)) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return std::make_pair(v, Trim(t.substr(colon + 1)));
}

// "GPU 3: Tesla V100-SXM2-32GB (UUID: ...)" -> 3 and the name.
std::optional<std::pair<int, std::string>> GpuHeading(std::string_view t) {
  auto heading = NumberedLine(t, "GPU ");
  if (!heading) return std::nullopt;
  std::string_view name = heading->second;
  size_t uuid = name.find("(UUID:");
  if (uuid != std::string_view::npos) name = Trim(name.substr(0, uuid));
  return std::make_pair(heading->first, std::string(name));
}

// "Link 4: 25.781 GB/s" -> link number and the text after the colon.
std::optional<std::pair<int, std::string_view>> LinkLine(std::string_view t) {
  return NumberedLine(t, "Link ");
}

bool HasTopoBlock(const std::vector<Line>& lines) {
  for (const Block& b : FindBlocks(lines).blocks) {
    if (b.kind == BlockKind::kTopo) return true;
  }
  return false;
}

}  // namespace

StatusOr<NodeTopology> ParseNvidiaSmiTopo(std::string_view text, const std::string& source) {
  ASSIGN_OR_RETURN(std::vector<Line> lines, SplitLines(text, source, true));
  Blocks found = FindBlocks(lines);
  for (const Block& b : found.blocks) {
    if (b.kind == BlockKind::kTopo) return ParseTopoBlock(lines, b, source);
  }
  if (!found.blocks.empty()) {
    return ErrorAt(source, lines[found.blocks.front().first_row].number, 0,
                   "expected a topo -m matrix (cells X, NV<n>, PIX, ... SYS), found only a "
                   "topo -p2p matrix (OK, CNS, NS, ...)");
  }
  if (found.header_without_rows) {
    size_t h = *found.header_without_rows;
    std::string next = h + 1 < lines.size() ? "line " + std::to_string(lines[h + 1].number) + " " +
                                                  QuoteCell(Trim(lines[h + 1].text))
                                            : "the end of the input";
    return ErrorAt(source, lines[h].number, 0,
                   "expected matrix rows (GPU0  X  NV...) after the header, found " + next);
  }
  if (found.orphan_row) {
    const Line& l = lines[*found.orphan_row];
    return ErrorAt(source, l.number, 0,
                   "expected a header row of device names (GPU0 GPU1 ...) before the first "
                   "matrix row, found row " +
                       QuoteCell(Trim(l.text)));
  }
  return ErrorAt(source, 1, 0,
                 lines.empty() ? "expected an nvidia-smi topo -m matrix, found empty input"
                               : "expected an nvidia-smi topo -m matrix (a header line starting "
                                 "with GPU0 followed by rows), found none");
}

bool LooksLikeNvidiaSmiTopo(std::string_view text) { return HasTopoBlock(SniffLines(text)); }

StatusOr<P2pMatrix> ParseNvidiaSmiP2p(std::string_view text, const std::string& source) {
  ASSIGN_OR_RETURN(std::vector<Line> lines, SplitLines(text, source, true));
  Blocks found = FindBlocks(lines);
  for (const Block& b : found.blocks) {
    if (b.kind == BlockKind::kP2p) return ParseP2pBlock(lines, b, source);
  }
  return ErrorAt(source, 1, 0,
                 lines.empty() ? "expected an nvidia-smi topo -p2p matrix, found empty input"
                               : "expected an nvidia-smi topo -p2p matrix (a GPU0 GPU1 ... header "
                                 "and rows of OK/CNS/NS/... cells), found none");
}

bool LooksLikeNvidiaSmiP2p(std::string_view text) {
  // A topo -m file that also carries a p2p block is a topo -m file.
  std::vector<Line> lines = SniffLines(text);
  bool p2p = false;
  for (const Block& b : FindBlocks(lines).blocks) {
    if (b.kind == BlockKind::kTopo) return false;
    p2p = true;
  }
  return p2p;
}

StatusOr<NvlinkStatus> ParseNvidiaSmiNvlinkStatus(std::string_view text,
                                                  const std::string& source) {
  ASSIGN_OR_RETURN(std::vector<Line> lines, SplitLines(text, source, true));
  NvlinkStatus out;
  std::set<int> gpu_seen;
  std::set<int> links_seen;
  for (const Line& line : lines) {
    std::string_view t = Trim(line.text);
    size_t col = static_cast<size_t>(t.data() - line.text.data());
    if (auto gpu = GpuHeading(t)) {
      if (!gpu_seen.insert(gpu->first).second) {
        return ErrorAt(
            source, line.number, col,
            "expected each GPU once, found GPU " + std::to_string(gpu->first) + " again");
      }
      out.gpus.push_back(NvlinkStatus::GpuLinks{gpu->first, gpu->second, {}, 0});
      links_seen.clear();
      continue;
    }
    auto link = LinkLine(t);
    if (!link) continue;  // prompts, elisions ("..."), other output
    if (out.gpus.empty()) {
      return ErrorAt(
          source, line.number, col,
          "expected a 'GPU <n>: <name>' line before the first link, found " + QuoteCell(t));
    }
    if (!links_seen.insert(link->first).second) {
      return ErrorAt(
          source, line.number, col,
          "expected each link once per GPU, found link " + std::to_string(link->first) + " again");
    }
    NvlinkStatus::GpuLinks& g = out.gpus.back();
    std::string_view value = link->second;
    size_t vcol = static_cast<size_t>(value.data() - line.text.data());
    if (value == "<inactive>") {
      ++g.inactive;
      continue;
    }
    std::vector<std::string> parts = SplitWhitespace(value);
    auto rate = parts.size() == 2 && parts[1] == "GB/s"
                    ? ParseDouble(parts[0])
                    : StatusOr<double>(InvalidArgumentError(""));
    if (!rate.ok() || !(*rate >= 0) || *rate > 1e6) {
      return ErrorAt(
          source, line.number, vcol,
          "expected a link rate like '26.562 GB/s' or '<inactive>', found " + QuoteCell(value));
    }
    g.link_gbps.push_back(*rate);
  }
  if (out.gpus.empty()) {
    return ErrorAt(source, 1, 0,
                   lines.empty() ? "expected nvidia-smi nvlink -s output, found empty input"
                                 : "expected nvidia-smi nvlink -s output ('GPU <n>: <name>' "
                                   "lines followed by 'Link <k>: <rate>' lines), found none");
  }
  return out;
}

bool LooksLikeNvidiaSmiNvlinkStatus(std::string_view text) {
  std::vector<Line> lines = SniffLines(text);
  if (HasTopoBlock(lines)) return false;
  bool after_gpu = false;
  for (const Line& line : lines) {
    std::string_view t = Trim(line.text);
    if (GpuHeading(t)) {
      after_gpu = true;
    } else if (after_gpu && LinkLine(t)) {
      return true;
    } else if (!t.empty()) {
      after_gpu = false;
    }
  }
  return false;
}

}  // namespace toposched::topo::io
