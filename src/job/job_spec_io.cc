// Readers and writer for job specs. YAML (yaml-cpp) and JSON (nlohmann, SAX) are both turned into
// one small document tree first, with line numbers where the format has them, so a single
// parser checks the fields and both formats report errors the same way. Every exception of the
// two libraries is caught here.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/enum_names.h"
#include "core/file.h"
#include "core/source_error.h"
#include "core/strings.h"
#include "job/job_spec.h"

namespace toposched::job {

namespace {

constexpr int kMaxDepth = 64;           // nesting of the document tree
constexpr size_t kMaxValues = 1 << 18;  // values in one document (anchors can multiply them)
constexpr size_t kMaxFileBytes = 64u << 20;

struct Field;

// One document, format-independent.
struct Value {
  enum class Kind { kNull, kScalar, kList, kMap };
  Kind kind = Kind::kNull;
  // A JSON scalar's type; YAML scalars are untyped (YAML users write `priority: "7"` and
  // `rdma_required: yes`), JSON's are what the schema (docs/openapi.yaml) says they must be.
  enum class Type { kUntyped, kString, kNumber, kBool };
  Type type = Type::kUntyped;
  std::string text;  // scalars; JSON numbers and booleans as their text
  int line = 0;      // 1-based; 0 when unknown
  std::vector<Value> items;
  std::vector<Field> fields;  // a vector of an incomplete type is allowed; a pair of one is not
  std::vector<int> key_lines;
};

struct Field {
  std::string first;  // the key
  Value second;
};

constexpr EnumName<Value::Kind> kValueKindNames[] = {{Value::Kind::kScalar, "a scalar"},
                                                     {Value::Kind::kList, "a list"},
                                                     {Value::Kind::kMap, "a map"}};

const char* KindName(const Value& v) { return NameOf(kValueKindNames, v.kind, "null"); }

using ::toposched::FieldPath;
using ::toposched::IndexPath;

// ---- YAML -> Value ----

class YamlConverter {
 public:
  explicit YamlConverter(std::string source) : source_(std::move(source)) {}

  Status Convert(const YAML::Node& node, int depth, int fallback_line, Value& out) {
    if (++count_ > kMaxValues) return Err(fallback_line, "document has too many values");
    if (depth > kMaxDepth) {
      return Err(fallback_line, "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    const YAML::Mark mark = node.Mark();
    out.line = mark.is_null() ? fallback_line : mark.line + 1;
    switch (node.Type()) {
      case YAML::NodeType::Scalar:
        out.kind = Value::Kind::kScalar;
        out.text = node.Scalar();
        return OkStatus();
      case YAML::NodeType::Sequence:
        out.kind = Value::Kind::kList;
        for (size_t i = 0; i < node.size(); ++i) {
          const YAML::Node item = node[i];
          out.items.emplace_back();
          RETURN_IF_ERROR(Convert(item, depth + 1, out.line, out.items.back()));
        }
        return OkStatus();
      case YAML::NodeType::Map:
        out.kind = Value::Kind::kMap;
        for (auto it = node.begin(); it != node.end(); ++it) {
          const YAML::Node key = it->first;  // copies: the iterator hands out a temporary
          const YAML::Node value = it->second;
          const int key_line = key.Mark().is_null() ? out.line : key.Mark().line + 1;
          if (!key.IsScalar()) return Err(key_line, "map keys must be plain names");
          out.fields.push_back(Field{key.Scalar(), Value{}});
          out.key_lines.push_back(key_line);
          RETURN_IF_ERROR(Convert(value, depth + 1, key_line, out.fields.back().second));
        }
        return OkStatus();
      default:
        out.kind = Value::Kind::kNull;
        return OkStatus();
    }
  }

 private:
  Status Err(int line, const std::string& msg) const { return SourceError(source_, line, msg); }
  std::string source_;
  size_t count_ = 0;
};

StatusOr<Value> YamlToValue(const std::string& text, const std::string& source) {
  try {
    YAML::Node root = YAML::Load(text);
    Value v;
    YamlConverter conv(source);
    RETURN_IF_ERROR(conv.Convert(root, 0, 0, v));
    return v;
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    return InvalidArgumentError(source + (line > 0 ? ":" + std::to_string(line) : "") +
                                ": YAML error: " + e.msg);
  } catch (const std::exception& e) {
    return InvalidArgumentError(source + ": cannot read YAML: " + e.what());
  }
}

// ---- JSON -> Value (SAX: bounded depth, repeated keys detected, number text kept) ----

class JsonBuilder {
 public:
  using json = nlohmann::json;
  explicit JsonBuilder(std::string source) : source_(std::move(source)) {}

  bool null() { return Add(Value{}); }
  bool boolean(bool b) { return Scalar(b ? "true" : "false", Value::Type::kBool); }
  bool number_integer(json::number_integer_t v) {
    return Scalar(std::to_string(v), Value::Type::kNumber);
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return Scalar(std::to_string(v), Value::Type::kNumber);
  }
  bool number_float(json::number_float_t, const json::string_t& s) {
    return Scalar(s, Value::Type::kNumber);
  }
  bool string(json::string_t& s) { return Scalar(s, Value::Type::kString); }
  bool binary(json::binary_t&) { return Fail(Path(), "binary values are not supported"); }
  bool start_object(std::size_t) { return Open(Value::Kind::kMap); }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) { return Open(Value::Kind::kList); }
  bool end_array() { return Close(); }
  bool key(json::string_t& k) {
    if (!seen_.back().insert(k).second) return Fail(FieldPath(Path(), k), "key given twice");
    keys_.back() = k;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    if (error_.ok()) error_ = InvalidArgumentError(source_ + ": not valid JSON: " + e.what());
    return false;
  }

  Status error() const { return error_; }
  Value& root() { return root_; }

 private:
  bool Scalar(std::string text, Value::Type type) {
    Value v;
    v.kind = Value::Kind::kScalar;
    v.type = type;
    v.text = std::move(text);
    return Add(std::move(v));
  }
  bool Open(Value::Kind kind) {
    if (stack_.size() >= static_cast<size_t>(kMaxDepth)) {
      return Fail(Path(), "nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    stack_.emplace_back();
    stack_.back().kind = kind;
    keys_.emplace_back();
    seen_.emplace_back();
    return true;
  }
  bool Close() {
    Value v = std::move(stack_.back());
    stack_.pop_back();
    keys_.pop_back();
    seen_.pop_back();
    return Add(std::move(v));
  }
  bool Add(Value v) {
    if (++count_ > kMaxValues) return Fail("$", "document has too many values");
    if (stack_.empty()) {
      root_ = std::move(v);
      return true;
    }
    Value& top = stack_.back();
    if (top.kind == Value::Kind::kList) {
      top.items.push_back(std::move(v));
    } else {
      top.fields.push_back(Field{keys_.back(), std::move(v)});
      top.key_lines.push_back(0);
    }
    return true;
  }
  // The JSON path of the value being read now.
  std::string Path() const {
    std::string p = "$";
    for (size_t i = 0; i + 1 < stack_.size(); ++i) {
      if (stack_[i].kind == Value::Kind::kList) {
        p = IndexPath(p, stack_[i].items.size());
      } else {
        p = FieldPath(p, keys_[i]);
      }
    }
    return p;
  }
  bool Fail(const std::string& path, const std::string& msg) {
    if (error_.ok()) error_ = InvalidArgumentError(source_ + ": " + path + ": " + msg);
    return false;
  }

  std::string source_;
  std::vector<Value> stack_;
  std::vector<std::string> keys_;
  std::vector<std::unordered_set<std::string>> seen_;  // keys of each open map
  Value root_;
  Status error_;
  size_t count_ = 0;
};

StatusOr<Value> JsonToValue(const std::string& text, const std::string& source) {
  JsonBuilder builder(source);
  try {
    const bool ok = nlohmann::json::sax_parse(text, &builder);
    if (!ok || !builder.error().ok()) {
      if (!builder.error().ok()) return builder.error();
      return InvalidArgumentError(source + ": not valid JSON");
    }
  } catch (const std::exception& e) {
    return InvalidArgumentError(source + ": not valid JSON: " + e.what());
  }
  return std::move(builder.root());
}

// ---- The spec parser, over Value ----

class Ctx : public SourceContext {
 public:
  using SourceContext::Err;
  using SourceContext::SourceContext;
  Status Err(const Value& at, const std::string& field, const std::string& msg) const {
    return Err(at.line, field, msg);
  }
};

class Fields {
 public:
  static StatusOr<Fields> Read(const Ctx& ctx, const Value& v, const std::string& path,
                               std::initializer_list<const char*> allowed) {
    if (v.kind != Value::Kind::kMap) {
      return ctx.Err(v, path, std::string("expected a map, got ") + KindName(v));
    }
    Fields f;
    f.node_ = &v;
    f.path_ = path;
    for (size_t i = 0; i < v.fields.size(); ++i) {
      const std::string& name = v.fields[i].first;
      const int line = v.key_lines[i];
      bool known = false;
      for (const char* a : allowed) known = known || name == a;
      if (!known) {
        std::string list;
        for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
        return ctx.Err(line, FieldPath(path, name), "unknown key (expected one of: " + list + ")");
      }
      for (size_t j = 0; j < i; ++j) {
        if (v.fields[j].first == name) {
          return ctx.Err(line, FieldPath(path, name),
                         "key given twice (first at line " + std::to_string(v.key_lines[j]) + ")");
        }
      }
    }
    return f;
  }
  const Value* Get(const std::string& key) const {
    for (const auto& [k, v] : node_->fields) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  std::string Path(const std::string& key) const { return FieldPath(path_, key); }
  const Value& node() const { return *node_; }

 private:
  const Value* node_ = nullptr;
  std::string path_;
};

// "a number 12345", "a boolean true" or "a string \"7\"": what a JSON scalar was.
std::string Typed(const Value& v) {
  switch (v.type) {
    case Value::Type::kNumber:
      return "a number " + v.text;
    case Value::Type::kBool:
      return "a boolean " + v.text;
    case Value::Type::kString:
      return "a string " + Quote(v.text);
    default:
      return Quote(v.text);
  }
}

// A string, or (for the fields the schema lets be either) a number written as text.
StatusOr<std::string> AsText(const Ctx& ctx, const Value& v, const std::string& field) {
  if (v.kind != Value::Kind::kScalar) {
    return ctx.Err(v, field, std::string("expected a string, got ") + KindName(v));
  }
  return v.text;
}

StatusOr<std::string> AsString(const Ctx& ctx, const Value& v, const std::string& field) {
  if (v.kind == Value::Kind::kScalar &&
      (v.type == Value::Type::kNumber || v.type == Value::Type::kBool)) {
    return ctx.Err(v, field, "expected a string, got " + Typed(v));
  }
  return AsText(ctx, v, field);
}

StatusOr<std::string> AsName(const Ctx& ctx, const Value& v, const std::string& field) {
  ASSIGN_OR_RETURN(std::string s, AsString(ctx, v, field));
  if (s.empty()) return ctx.Err(v, field, "must not be empty");
  if (Trim(s).size() != s.size()) return ctx.Err(v, field, "leading or trailing blanks");
  return s;
}

StatusOr<int> AsInt(const Ctx& ctx, const Value& v, const std::string& field, long long min,
                    long long max, const char* what) {
  const std::string expected = std::string("expected ") + what;
  if (v.kind != Value::Kind::kScalar) {
    return ctx.Err(v, field, expected + ", got " + KindName(v));
  }
  if (v.type == Value::Type::kString || v.type == Value::Type::kBool) {
    return ctx.Err(v, field, expected + ", got " + Typed(v));
  }
  auto n = ParseInt(Trim(v.text));
  if (!n.ok() || *n < min) return ctx.Err(v, field, expected + ", got " + Quote(v.text));
  if (*n > max) {
    return ctx.Err(v, field, "must be at most " + std::to_string(max) + ", got " + v.text);
  }
  return static_cast<int>(*n);
}

constexpr long long kMaxCount = 1 << 20;

StatusOr<int> AsPositive(const Ctx& ctx, const Value& v, const std::string& field) {
  return AsInt(ctx, v, field, 1, kMaxCount, "a positive integer");
}

StatusOr<bool> AsBool(const Ctx& ctx, const Value& v, const std::string& field) {
  if (v.kind == Value::Kind::kScalar &&
      (v.type == Value::Type::kString || v.type == Value::Type::kNumber)) {
    return ctx.Err(v, field, "expected true or false, got " + Typed(v));
  }
  if (v.kind == Value::Kind::kScalar) {
    const std::string t = ToLower(Trim(v.text));
    if (t == "true" || t == "yes") return true;
    if (t == "false" || t == "no") return false;
  }
  return ctx.Err(v, field,
                 "expected true or false, got " +
                     (v.kind == Value::Kind::kScalar ? Quote(v.text) : KindName(v)));
}

// Bytes: a non-negative integer, optionally with a unit (KB, MB, GB, KiB, MiB, GiB, TB, TiB).
StatusOr<int64_t> AsBytes(const Ctx& ctx, const Value& v, const std::string& field) {
  auto bad = [&]() {
    return ctx.Err(v, field,
                   "expected a byte count such as 4194304 or \"64MiB\", got " +
                       (v.kind == Value::Kind::kScalar ? Quote(v.text) : KindName(v)));
  };
  if (v.kind != Value::Kind::kScalar) return bad();
  std::string s(Trim(v.text));
  size_t digits = 0;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0 || digits > 18) return bad();
  const std::string unit(Trim(std::string_view(s).substr(digits)));
  static const std::pair<const char*, int64_t> kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000 * 1000 * 1000},
      {"TB", int64_t{1000} * 1000 * 1000 * 1000},
      {"KiB", 1 << 10},
      {"MiB", 1 << 20},
      {"GiB", 1 << 30},
      {"TiB", int64_t{1} << 40}};
  for (const auto& [name, scale] : kUnits) {
    if (unit == name) {
      auto n = ParseInt(s.substr(0, digits));
      if (!n.ok()) return bad();
      if (*n > (int64_t{1} << 60) / scale) {
        return ctx.Err(v, field, "must be at most 2^60 bytes, got " + Quote(v.text));
      }
      return static_cast<int64_t>(*n * scale);
    }
  }
  return bad();
}

// A fraction in [0, 1], written as a number.
StatusOr<double> AsFraction(const Ctx& ctx, const Value& v, const std::string& field) {
  const std::string expected = "expected a number from 0 to 1";
  if (v.kind != Value::Kind::kScalar) return ctx.Err(v, field, expected + ", got " + KindName(v));
  if (v.type == Value::Type::kString || v.type == Value::Type::kBool) {
    return ctx.Err(v, field, expected + ", got " + Typed(v));
  }
  auto d = ParseDouble(Trim(v.text));
  if (!d.ok() || !(*d >= 0 && *d <= 1))
    return ctx.Err(v, field, expected + ", got " + Quote(v.text));
  return *d;
}

class SpecParser {
 public:
  explicit SpecParser(const Ctx& ctx) : ctx_(ctx) {}

  // `path`: the spec's path from the root ("" for a single-spec YAML file, "$" for JSON,
  // "jobs[2]" in a jobs file).
  StatusOr<JobSpec> Parse(const Value& v, const std::string& path) {
    lines_.clear();
    path_ = path;
    ASSIGN_OR_RETURN(Fields f,
                     Fields::Read(ctx_, v, path, {"name",         "user",        "queue",
                                                  "priority",     "replicas",    "gpus_per_replica",
                                                  "total_gpus",   "gpu_milli",   "layout",
                                                  "model_params", "hidden_size", "seq_len",
                                                  "micro_batch",  "constraints", "time_limit",
                                                  "elastic",      "on_failure",  "on_degraded",
                                                  "pytorchjob",   "checkpoint",  "estimate"}));
    JobSpec s;
    s.where = SourceRef{ctx_.source(), v.line, path};
    const Value* name = Get(f, "name");
    if (!name) return ctx_.Err(v, f.Path("name"), "missing");
    ASSIGN_OR_RETURN(s.name, AsName(ctx_, *name, f.Path("name")));
    if (const Value* x = Get(f, "user")) {
      ASSIGN_OR_RETURN(s.user, AsString(ctx_, *x, f.Path("user")));
    }
    if (const Value* x = Get(f, "queue")) {
      ASSIGN_OR_RETURN(s.queue, AsName(ctx_, *x, f.Path("queue")));
    }
    if (const Value* x = Get(f, "priority")) {
      ASSIGN_OR_RETURN(s.priority, AsInt(ctx_, *x, f.Path("priority"), -1000000000LL, 1000000000LL,
                                         "an integer"));
    }
    if (const Value* x = Get(f, "replicas")) {
      ASSIGN_OR_RETURN(s.replicas, AsPositive(ctx_, *x, f.Path("replicas")));
    }
    if (const Value* x = Get(f, "gpus_per_replica")) {
      ASSIGN_OR_RETURN(s.gpus_per_replica, AsPositive(ctx_, *x, f.Path("gpus_per_replica")));
    }
    if (const Value* x = Get(f, "total_gpus")) {
      ASSIGN_OR_RETURN(s.total_gpus, AsPositive(ctx_, *x, f.Path("total_gpus")));
    }
    if (const Value* x = Get(f, "gpu_milli")) {
      ASSIGN_OR_RETURN(s.gpu_milli, AsInt(ctx_, *x, f.Path("gpu_milli"), 1, 1000,
                                          "an integer from 1 to 1000 (thousandths of one GPU)"));
    }
    if (const Value* x = Get(f, "pytorchjob")) RETURN_IF_ERROR(ParsePyTorchJob(f, *x, s));
    if (const Value* x = Get(f, "layout")) RETURN_IF_ERROR(ParseLayout(*x, f.Path("layout"), s));
    if (const Value* x = Get(f, "model_params")) {
      ASSIGN_OR_RETURN(std::string t, AsText(ctx_, *x, f.Path("model_params")));
      auto p = ParseParamCount(t);
      if (!p.ok()) return ctx_.Err(*x, f.Path("model_params"), p.status().message());
      s.model_params = *p;
    }
    if (const Value* x = Get(f, "hidden_size")) {
      ASSIGN_OR_RETURN(s.hidden_size, AsPositive(ctx_, *x, f.Path("hidden_size")));
    }
    if (const Value* x = Get(f, "seq_len")) {
      ASSIGN_OR_RETURN(s.seq_len,
                       AsInt(ctx_, *x, f.Path("seq_len"), 1, 1 << 24, "a positive integer"));
    }
    if (const Value* x = Get(f, "micro_batch")) {
      ASSIGN_OR_RETURN(s.micro_batch,
                       AsInt(ctx_, *x, f.Path("micro_batch"), 1, 1 << 16, "a positive integer"));
    }
    if (const Value* x = Get(f, "constraints")) {
      RETURN_IF_ERROR(ParseConstraints(*x, f.Path("constraints"), s.constraints));
    }
    if (const Value* x = Get(f, "time_limit")) {
      ASSIGN_OR_RETURN(std::string t, AsText(ctx_, *x, f.Path("time_limit")));
      auto d = ParseDuration(t);
      if (!d.ok()) return ctx_.Err(*x, f.Path("time_limit"), d.status().message());
      s.time_limit_s = *d;
    }
    if (const Value* x = Get(f, "checkpoint")) {
      ASSIGN_OR_RETURN(Fields c,
                       Fields::Read(ctx_, *x, f.Path("checkpoint"), {"interval", "restart"}));
      for (const auto& [key, out] : {std::pair{"interval", &s.checkpoint_interval_s},
                                     std::pair{"restart", &s.restart_cost_s}}) {
        const Value* y = Get(c, key);
        if (!y) return ctx_.Err(*x, c.Path(key), "missing (checkpoint needs interval and restart)");
        ASSIGN_OR_RETURN(std::string t, AsText(ctx_, *y, c.Path(key)));
        auto d = ParseDuration(t);
        if (!d.ok()) return ctx_.Err(*y, c.Path(key), d.status().message());
        *out = *d;
      }
    }
    if (const Value* x = Get(f, "estimate")) {
      ASSIGN_OR_RETURN(s.estimate, ParseEstimate(*x, f.Path("estimate")));
    }
    if (const Value* x = Get(f, "elastic")) {
      ASSIGN_OR_RETURN(Fields e,
                       Fields::Read(ctx_, *x, f.Path("elastic"), {"min_replicas", "max_replicas"}));
      ElasticRange r;
      for (const char* key : {"min_replicas", "max_replicas"}) {
        const Value* n = Get(e, key);
        if (!n) return ctx_.Err(*x, e.Path(key), "missing");
        ASSIGN_OR_RETURN(int value, AsPositive(ctx_, *n, e.Path(key)));
        (std::string(key) == "min_replicas" ? r.min_replicas : r.max_replicas) = value;
      }
      if (r.min_replicas > r.max_replicas) {
        return ctx_.Err(*x, e.Path("min_replicas"),
                        "min_replicas = " + std::to_string(r.min_replicas) +
                            " is above max_replicas = " + std::to_string(r.max_replicas));
      }
      s.elastic = r;
    }
    if (const Value* x = Get(f, "on_failure")) {
      ASSIGN_OR_RETURN(std::string t, AsString(ctx_, *x, f.Path("on_failure")));
      if (t == "requeue") {
        s.on_failure = FailurePolicy::kRequeue;
      } else if (t == "shrink") {
        s.on_failure = FailurePolicy::kShrink;
      } else if (t == "fail") {
        s.on_failure = FailurePolicy::kFail;
      } else {
        return ctx_.Err(*x, f.Path("on_failure"),
                        "expected requeue, shrink or fail, got " + Quote(t));
      }
    }
    if (const Value* x = Get(f, "on_degraded")) {
      ASSIGN_OR_RETURN(std::string t, AsString(ctx_, *x, f.Path("on_degraded")));
      if (t == "continue") {
        s.on_degraded = DegradedPolicy::kContinue;
      } else if (t == "wait") {
        s.on_degraded = DegradedPolicy::kWait;
      } else {
        return ctx_.Err(*x, f.Path("on_degraded"), "expected continue or wait, got " + Quote(t));
      }
    }
    if (auto e = NormalizeSpec(s)) {
      const std::string field = FieldPath(path, e->field);
      return ctx_.Err(LineFor(field, v.line), field, e->message);
    }
    return s;
  }

 private:
  const Value* Get(const Fields& f, const std::string& key) {
    const Value* v = f.Get(key);
    if (v) lines_[f.Path(key)] = v->line;
    return v;
  }

  // The line of `field`, or of the nearest enclosing field that was read.
  int LineFor(std::string field, int fallback) const {
    while (!field.empty()) {
      auto it = lines_.find(field);
      if (it != lines_.end() && it->second > 0) return it->second;
      const size_t dot = field.find_last_of('.');
      if (dot == std::string::npos || field.substr(0, dot) == path_) break;
      field.resize(dot);
    }
    return fallback;
  }

  Status ParseLayout(const Value& v, const std::string& path, JobSpec& s) {
    ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, v, path,
                                            {"tp", "pp", "dp", "ep", "tp_bytes", "pp_bytes",
                                             "dp_bytes", "ep_bytes"}));
    Layout& l = s.layout;
    if (const Value* x = Get(f, "tp")) {
      ASSIGN_OR_RETURN(l.tp, AsPositive(ctx_, *x, f.Path("tp")));
    }
    if (const Value* x = Get(f, "pp")) {
      ASSIGN_OR_RETURN(l.pp, AsPositive(ctx_, *x, f.Path("pp")));
    }
    if (const Value* x = Get(f, "dp")) {
      ASSIGN_OR_RETURN(l.dp, AsPositive(ctx_, *x, f.Path("dp")));
    }
    if (const Value* x = Get(f, "ep")) {
      ASSIGN_OR_RETURN(l.ep, AsPositive(ctx_, *x, f.Path("ep")));
    }
    const std::pair<const char*, int64_t*> bytes[] = {{"tp_bytes", &l.tp_bytes},
                                                      {"pp_bytes", &l.pp_bytes},
                                                      {"dp_bytes", &l.dp_bytes},
                                                      {"ep_bytes", &l.ep_bytes}};
    for (const auto& [key, out] : bytes) {
      if (const Value* x = Get(f, key)) {
        ASSIGN_OR_RETURN(*out, AsBytes(ctx_, *x, f.Path(key)));
      }
    }
    return OkStatus();
  }

  // `estimate: {run_time: 10h, comm_share: 0.3}`: both keys.
  StatusOr<RunEstimate> ParseEstimate(const Value& v, const std::string& path) {
    ASSIGN_OR_RETURN(Fields e, Fields::Read(ctx_, v, path, {"run_time", "comm_share"}));
    RunEstimate out;
    const Value* run = Get(e, "run_time");
    if (!run)
      return ctx_.Err(v, e.Path("run_time"), "missing (estimate needs run_time and comm_share)");
    ASSIGN_OR_RETURN(std::string t, AsText(ctx_, *run, e.Path("run_time")));
    auto d = ParseDuration(t);
    if (!d.ok()) return ctx_.Err(*run, e.Path("run_time"), d.status().message());
    if (*d > RunEstimate::kMaxRunS) {
      return ctx_.Err(*run, e.Path("run_time"), "must be at most 1e9 s, got " + t);
    }
    out.run_s = *d;
    const Value* share = Get(e, "comm_share");
    if (!share) {
      return ctx_.Err(v, e.Path("comm_share"), "missing (estimate needs run_time and comm_share)");
    }
    ASSIGN_OR_RETURN(out.comm_share, AsFraction(ctx_, *share, e.Path("comm_share")));
    return out;
  }

  Status ParseLevel(const Value& v, const std::string& path, LevelConstraint& c) {
    ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, v, path, {"required", "preferred"}));
    const Value* req = Get(f, "required");
    const Value* pref = Get(f, "preferred");
    if (req && pref) {
      return ctx_.Err(v, path, "give either required or preferred, not both");
    }
    if (!req && !pref) return ctx_.Err(v, path, "expected {required: LEVEL} or {preferred: LEVEL}");
    const char* key = req ? "required" : "preferred";
    const Value& lv = req ? *req : *pref;
    ASSIGN_OR_RETURN(c.level, AsName(ctx_, lv, f.Path(key)));
    c.mode = req ? ConstraintMode::kRequired : ConstraintMode::kPreferred;
    c.where = SourceRef{ctx_.source(), lv.line, f.Path(key)};
    return OkStatus();
  }

  Status ParseConstraints(const Value& v, const std::string& path, Constraints& c) {
    ASSIGN_OR_RETURN(Fields f,
                     Fields::Read(ctx_, v, path, {"job", "tp", "gpu_model", "rdma_required"}));
    if (const Value* x = Get(f, "job")) RETURN_IF_ERROR(ParseLevel(*x, f.Path("job"), c.job));
    if (const Value* x = Get(f, "tp")) RETURN_IF_ERROR(ParseLevel(*x, f.Path("tp"), c.tp));
    if (const Value* x = Get(f, "gpu_model")) {
      ASSIGN_OR_RETURN(c.gpu_model, AsName(ctx_, *x, f.Path("gpu_model")));
    }
    if (const Value* x = Get(f, "rdma_required")) {
      ASSIGN_OR_RETURN(c.rdma_required, AsBool(ctx_, *x, f.Path("rdma_required")));
    }
    return OkStatus();
  }

  // pytorchjob: {master: {replicas: 1, gpus: 8}, workers: {replicas: 3, gpus: 8}}
  // -> replicas = master.replicas + workers.replicas, gpus_per_replica = gpus (same for both).
  Status ParsePyTorchJob(const Fields& spec, const Value& v, JobSpec& s) {
    const std::string path = spec.Path("pytorchjob");
    for (const char* k : {"replicas", "gpus_per_replica", "total_gpus"}) {
      if (spec.Get(k)) return ctx_.Err(v, path, std::string("cannot be combined with ") + k);
    }
    ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx_, v, path, {"master", "workers"}));
    const Value* master = Get(f, "master");
    if (!master) return ctx_.Err(v, f.Path("master"), "missing");
    int count[2] = {1, 0};
    int gpus[2] = {0, 0};
    const std::pair<const Value*, const char*> roles[] = {{master, "master"},
                                                          {Get(f, "workers"), "workers"}};
    for (int i = 0; i < 2; ++i) {
      const auto& [node, role] = roles[i];
      if (!node) continue;
      const std::string rp = f.Path(role);
      ASSIGN_OR_RETURN(Fields r, Fields::Read(ctx_, *node, rp, {"replicas", "gpus"}));
      if (const Value* x = Get(r, "replicas")) {
        ASSIGN_OR_RETURN(count[i], i == 0 ? AsInt(ctx_, *x, r.Path("replicas"), 1, 1,
                                                  "1 (a PyTorchJob has one master)")
                                          : AsPositive(ctx_, *x, r.Path("replicas")));
      } else if (i == 1) {
        return ctx_.Err(*node, r.Path("replicas"), "missing");
      }
      const Value* g = Get(r, "gpus");
      if (!g) return ctx_.Err(*node, r.Path("gpus"), "missing");
      ASSIGN_OR_RETURN(gpus[i], AsPositive(ctx_, *g, r.Path("gpus")));
      if (i == 1 && gpus[1] != gpus[0]) {
        return ctx_.Err(*g, r.Path("gpus"),
                        "workers must have as many GPUs as the master (" + std::to_string(gpus[0]) +
                            "): replicas are homogeneous");
      }
    }
    s.replicas = count[0] + count[1];
    s.gpus_per_replica = gpus[0];
    return OkStatus();
  }

  const Ctx& ctx_;
  std::string path_;
  std::unordered_map<std::string, int> lines_;
};

StatusOr<std::vector<JobSpec>> ParseJobsValue(const Value& root, const Ctx& ctx,
                                              const std::string& root_path) {
  if (root.kind == Value::Kind::kNull) return ctx.Err(0, "", "empty jobs file (expected jobs:)");
  ASSIGN_OR_RETURN(Fields f, Fields::Read(ctx, root, root_path, {"jobs"}));
  const Value* list = f.Get("jobs");
  const std::string path = f.Path("jobs");
  if (!list) return ctx.Err(root, path, "missing");
  if (list->kind != Value::Kind::kList) {
    return ctx.Err(*list, path,
                   std::string("expected a list of job specs, got ") + KindName(*list));
  }
  std::vector<JobSpec> out;
  std::map<std::string, int> first_line;
  SpecParser parser(ctx);
  for (size_t i = 0; i < list->items.size(); ++i) {
    const std::string p = IndexPath(path, i);
    ASSIGN_OR_RETURN(JobSpec s, parser.Parse(list->items[i], p));
    auto [it, fresh] = first_line.emplace(s.name, list->items[i].line);
    if (!fresh) {
      std::string first = it->second > 0 ? " (first at line " + std::to_string(it->second) + ")"
                                         : " (first in an earlier entry)";
      return ctx.Err(list->items[i], p + ".name", "duplicate job name " + Quote(s.name) + first);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

StatusOr<std::vector<JobSpec>> ParseJobsYaml(const std::string& text, const std::string& source) {
  ASSIGN_OR_RETURN(Value root, YamlToValue(text, source));
  return ParseJobsValue(root, Ctx(source), "");
}

StatusOr<JobSpec> ParseJobYaml(const std::string& text, const std::string& source) {
  ASSIGN_OR_RETURN(Value root, YamlToValue(text, source));
  Ctx ctx(source);
  if (root.kind == Value::Kind::kNull) return ctx.Err(0, "", "empty job spec");
  return SpecParser(ctx).Parse(root, "");
}

StatusOr<JobSpec> ParseJobJson(const std::string& text, const std::string& source) {
  ASSIGN_OR_RETURN(Value root, JsonToValue(text, source));
  Ctx ctx(source);
  return SpecParser(ctx).Parse(root, "$");
}

StatusOr<std::vector<JobSpec>> ParseJobsJson(const std::string& text, const std::string& source) {
  ASSIGN_OR_RETURN(Value root, JsonToValue(text, source));
  return ParseJobsValue(root, Ctx(source), "$");
}

namespace {

// .json (any case) is JSON; anything else YAML.
bool IsJsonPath(const std::string& path) {
  return path.size() >= 5 && ToLower(path.substr(path.size() - 5)) == ".json";
}

// A root that is a map whose only key is `jobs` is a jobs file; anything else one spec.
bool IsJobsList(const Value& root) {
  return root.kind == Value::Kind::kMap && root.fields.size() == 1 &&
         root.fields[0].first == "jobs";
}

StatusOr<std::vector<JobSpec>> OneOrMany(const Value& root, const std::string& source,
                                         const std::string& root_path) {
  Ctx ctx(source);
  if (IsJobsList(root)) return ParseJobsValue(root, ctx, root_path);
  if (root.kind == Value::Kind::kNull) {
    return ctx.Err(0, "", "empty job spec (expected one job spec or a jobs: list)");
  }
  ASSIGN_OR_RETURN(JobSpec spec, SpecParser(ctx).Parse(root, root_path));
  return std::vector<JobSpec>{std::move(spec)};
}

}  // namespace

StatusOr<std::vector<JobSpec>> ParseJobSpecsYaml(const std::string& text,
                                                 const std::string& source) {
  ASSIGN_OR_RETURN(Value root, YamlToValue(text, source));
  return OneOrMany(root, source, "");
}

StatusOr<std::vector<JobSpec>> ParseJobSpecsJson(const std::string& text,
                                                 const std::string& source) {
  ASSIGN_OR_RETURN(Value root, JsonToValue(text, source));
  return OneOrMany(root, source, "$");
}

StatusOr<std::vector<JobSpec>> ReadJobSpecsFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, kMaxFileBytes, "a job file"));
  return IsJsonPath(path) ? ParseJobSpecsJson(text, path) : ParseJobSpecsYaml(text, path);
}

StatusOr<std::vector<JobSpec>> ReadJobsFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileBounded(path, kMaxFileBytes, "a jobs file"));
  return IsJsonPath(path) ? ParseJobsJson(text, path) : ParseJobsYaml(text, path);
}

namespace {

nlohmann::ordered_json SpecJson(const JobSpec& s) {
  using oj = nlohmann::ordered_json;
  oj j;
  j["name"] = s.name;
  if (!s.user.empty()) j["user"] = s.user;
  j["queue"] = s.queue;
  j["priority"] = s.priority;
  j["replicas"] = s.replicas;
  j["gpus_per_replica"] = s.gpus_per_replica;
  j["total_gpus"] = s.total_gpus;
  if (s.Fractional()) j["gpu_milli"] = s.gpu_milli;
  const Layout& l = s.layout;
  j["layout"] = oj{{"tp", l.tp},
                   {"pp", l.pp},
                   {"dp", l.dp},
                   {"ep", l.ep},
                   {"tp_bytes", l.tp_bytes},
                   {"pp_bytes", l.pp_bytes},
                   {"dp_bytes", l.dp_bytes},
                   {"ep_bytes", l.ep_bytes}};
  if (s.model_params > 0) j["model_params"] = s.model_params;
  if (s.hidden_size > 0) j["hidden_size"] = s.hidden_size;
  j["seq_len"] = s.seq_len;
  j["micro_batch"] = s.micro_batch;
  oj c = oj::object();
  for (const auto& [lc, key] : {std::pair{&s.constraints.job, "job"}, {&s.constraints.tp, "tp"}}) {
    if (lc->mode != ConstraintMode::kNone) c[key] = oj{{ConstraintModeName(lc->mode), lc->level}};
  }
  if (!s.constraints.gpu_model.empty()) c["gpu_model"] = s.constraints.gpu_model;
  c["rdma_required"] = s.constraints.rdma_required;
  j["constraints"] = c;
  if (s.time_limit_s > 0) j["time_limit"] = FormatDuration(s.time_limit_s);
  if (s.checkpoint_interval_s > 0) {
    j["checkpoint"] = oj{{"interval", FormatDuration(s.checkpoint_interval_s)},
                         {"restart", FormatDuration(s.restart_cost_s)}};
  }
  if (s.estimate) {
    j["estimate"] =
        oj{{"run_time", FormatDuration(s.estimate->run_s)}, {"comm_share", s.estimate->comm_share}};
  }
  if (s.elastic) {
    j["elastic"] =
        oj{{"min_replicas", s.elastic->min_replicas}, {"max_replicas", s.elastic->max_replicas}};
  }
  j["on_failure"] = FailurePolicyName(s.on_failure);
  j["on_degraded"] = DegradedPolicyName(s.on_degraded);
  return j;
}

}  // namespace

std::string JobSpecToJson(const JobSpec& spec, int indent) {
  return SpecJson(spec).dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string JobsToJson(const std::vector<JobSpec>& specs, int indent) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const JobSpec& s : specs) list.push_back(SpecJson(s));
  return nlohmann::ordered_json{{"jobs", list}}.dump(
      indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace toposched::job
