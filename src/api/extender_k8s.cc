#include "api/extender_k8s.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <set>

#include "core/strings.h"

namespace toposched::api::k8s {

using nlohmann::json;

bool EqualFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

namespace {

Status ReadStringMap(const json& meta, std::string_view key, const std::string& path,
                     std::map<std::string, std::string>& out) {
  const json* m = Member(meta, key);
  if (m == nullptr || m->is_null()) return OkStatus();
  const std::string p = path + "." + std::string(key);
  if (!m->is_object()) return InvalidArgumentError(p + ": expected an object of strings");
  for (const auto& [k, v] : m->items()) {
    if (!v.is_string()) {
      return InvalidArgumentError(p + "[" + JsonQuoted(k) + "]: expected a string, got " +
                                  v.type_name());
    }
    out[k] = v.get<std::string>();
  }
  return OkStatus();
}

// GPUs of one container: limits[resource], else requests[resource]; 0 when neither.
StatusOr<int64_t> ContainerGpus(const json& c, const std::string& resource,
                                const std::string& path) {
  if (!c.is_object()) return InvalidArgumentError(path + ": expected a container object");
  const json* res = Member(c, "resources");
  if (res == nullptr || res->is_null()) return int64_t{0};
  if (!res->is_object()) return InvalidArgumentError(path + ".resources: expected an object");
  for (const char* kind : {"limits", "requests"}) {
    const json* m = Member(*res, kind);
    if (m == nullptr || m->is_null()) continue;
    const std::string p = path + ".resources." + kind;
    if (!m->is_object()) return InvalidArgumentError(p + ": expected an object");
    auto it = m->find(resource);
    if (it == m->end()) continue;
    return ParseCount(*it, p + "[" + JsonQuoted(resource) + "]");
  }
  return int64_t{0};
}

StatusOr<int> ParseSmallInt(const std::string& value, const std::string& what, int lo, int hi) {
  auto v = ParseInt(Trim(value));
  if (!v.ok() || *v < lo || *v > hi) {
    return FailedPreconditionError(what + ": expected an integer in [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + "], got " + JsonQuoted(value));
  }
  return static_cast<int>(*v);
}

// "required:leaf", "preferred:node", "none".
StatusOr<job::LevelConstraint> ParseConstraint(const std::string& value, const std::string& what) {
  job::LevelConstraint c;
  const std::string v(Trim(value));
  if (v == "none" || v.empty()) return c;
  const size_t colon = v.find(':');
  const std::string mode = colon == std::string::npos ? "" : std::string(Trim(v.substr(0, colon)));
  const std::string level =
      colon == std::string::npos ? "" : std::string(Trim(v.substr(colon + 1)));
  if ((mode != "required" && mode != "preferred") || level.empty()) {
    return FailedPreconditionError(what +
                                   ": expected \"required:<level>\", "
                                   "\"preferred:<level>\" or \"none\", got " +
                                   JsonQuoted(value));
  }
  c.mode = mode == "required" ? job::ConstraintMode::kRequired : job::ConstraintMode::kPreferred;
  c.level = level;
  c.where.field = what;
  return c;
}

// Job names allow letters, digits, '-', '_', '.'.
std::string JobName(const std::string& gang_key) {
  std::string out;
  for (char ch : gang_key) {
    const bool ok =
        std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
    out += ok ? ch : '.';
  }
  if (out.empty() || !std::isalnum(static_cast<unsigned char>(out[0]))) out = "g" + out;
  if (out.size() > 253) out.resize(253);
  return out;
}

}  // namespace

const json* Member(const json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it != obj.end()) return &*it;
  for (auto i = obj.begin(); i != obj.end(); ++i) {
    if (EqualFold(i.key(), key)) return &*i;
  }
  return nullptr;
}

Status CheckKnownFields(const json& obj, const std::vector<std::string>& known,
                        const std::string& path) {
  for (auto i = obj.begin(); i != obj.end(); ++i) {
    bool found = false;
    for (const std::string& k : known) found = found || EqualFold(i.key(), k);
    if (!found) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return InvalidArgumentError(path + ": unknown field " + JsonQuoted(i.key()) +
                                  " (known: " + list + ")");
    }
  }
  return OkStatus();
}

StatusOr<json> ParseBody(std::string_view body, const std::string& what) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Parse again with exceptions only to get nlohmann's position and reason.
    std::string detail = "not valid JSON";
    try {
      json again = json::parse(body.begin(), body.end());
      detail = "unexpected " + std::string(again.type_name());
    } catch (const json::exception& e) {
      detail = e.what();
    }
    return InvalidArgumentError(what + ": malformed JSON: " + detail);
  }
  if (!j.is_object()) {
    return InvalidArgumentError(what + ": expected a JSON object, got " + j.type_name());
  }
  return j;
}

StatusOr<int64_t> ParseCount(const json& v, const std::string& path) {
  constexpr int64_t kMax = int64_t{1} << 20;
  if (v.is_number_unsigned() || v.is_number_integer()) {
    const int64_t n = v.get<int64_t>();
    if (n >= 0 && n <= kMax) return n;
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    auto n = ParseInt(s);
    if (!s.empty() &&
        std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }) && n.ok() &&
        *n <= kMax) {
      return static_cast<int64_t>(*n);
    }
  }
  return InvalidArgumentError(path + ": expected a whole, non-negative number of devices, got " +
                              v.dump());
}

const std::string* Pod::Get(const std::string& key) const {
  auto it = labels.find(key);
  if (it != labels.end()) return &it->second;
  it = annotations.find(key);
  if (it != annotations.end()) return &it->second;
  return nullptr;
}

StatusOr<Pod> ParsePod(const json& j, const std::string& gpu_resource, const std::string& path) {
  if (!j.is_object()) return InvalidArgumentError(path + ": expected a v1.Pod object");
  Pod pod;
  const json* meta = Member(j, "metadata");
  if (meta == nullptr || !meta->is_object()) {
    return InvalidArgumentError(path + ".metadata: missing");
  }
  const std::string mpath = path + ".metadata";
  auto str = [&](std::string_view key, std::string& out) -> Status {
    const json* v = Member(*meta, key);
    if (v == nullptr || v->is_null()) return OkStatus();
    if (!v->is_string()) {
      return InvalidArgumentError(mpath + "." + std::string(key) + ": expected a string");
    }
    out = v->get<std::string>();
    return OkStatus();
  };
  if (Status s = str("name", pod.name); !s.ok()) return s;
  if (Status s = str("namespace", pod.name_space); !s.ok()) return s;
  if (Status s = str("uid", pod.uid); !s.ok()) return s;
  if (pod.name.empty()) return InvalidArgumentError(mpath + ".name: missing");
  if (pod.name_space.empty()) pod.name_space = "default";
  if (Status s = ReadStringMap(*meta, "labels", mpath, pod.labels); !s.ok()) return s;
  if (Status s = ReadStringMap(*meta, "annotations", mpath, pod.annotations); !s.ok()) return s;

  const json* spec = Member(j, "spec");
  if (spec == nullptr || spec->is_null()) return pod;
  if (!spec->is_object()) return InvalidArgumentError(path + ".spec: expected an object");
  int64_t sum = 0, init_max = 0;
  for (const char* list : {"containers", "initContainers"}) {
    const json* cs = Member(*spec, list);
    if (cs == nullptr || cs->is_null()) continue;
    const std::string lp = path + ".spec." + list;
    if (!cs->is_array()) return InvalidArgumentError(lp + ": expected an array");
    for (size_t i = 0; i < cs->size(); ++i) {
      auto g = ContainerGpus((*cs)[i], gpu_resource, IndexPath(lp, i));
      if (!g.ok()) return g.status();
      if (std::string_view(list) == "containers") {
        sum += *g;
      } else {
        init_max = std::max(init_max, *g);
      }
    }
  }
  if (const json* prio = Member(*spec, "priority"); prio != nullptr && !prio->is_null()) {
    if (!prio->is_number_integer() || prio->get<int64_t>() < INT32_MIN ||
        prio->get<int64_t>() > INT32_MAX) {
      return InvalidArgumentError(path + ".spec.priority: expected a 32-bit integer");
    }
    pod.priority = static_cast<int>(prio->get<int64_t>());
  }
  const int64_t gpus = std::max(sum, init_max);
  if (gpus > (int64_t{1} << 20)) {
    return InvalidArgumentError(path + ".spec: more than 1048576 " + gpu_resource);
  }
  pod.gpus = static_cast<int>(gpus);
  return pod;
}

StatusOr<Membership> MembershipOf(const Pod& pod, const ExtenderOptions& o) {
  Membership m;
  const std::string* group = pod.Get(o.group_name_key);
  const std::string* kf_job = pod.Get(o.kubeflow_job_key);
  if (group != nullptr && group->empty()) {
    return FailedPreconditionError(o.group_name_key + ": empty pod-group name");
  }
  if (group == nullptr && kf_job == nullptr) {
    m.key = pod.FullName();
    m.size = 1;
    m.index = 0;
    return m;
  }
  m.lone = false;
  m.key = pod.name_space + "/" + (group != nullptr ? *group : *kf_job);
  if (const std::string* s = pod.Get(o.group_size_key)) {
    auto v = ParseSmallInt(*s, o.group_size_key, 1, 1 << 20);
    if (!v.ok()) return v.status();
    m.size = *v;
  }
  if (group != nullptr) {
    for (const std::string& k : o.pod_index_keys) {
      if (const std::string* s = pod.Get(k)) {
        auto v = ParseSmallInt(*s, k, 0, (1 << 20) - 1);
        if (!v.ok()) return v.status();
        m.index = *v;
        break;
      }
    }
  } else {
    // Kubeflow: heads (master/chief/launcher) first, then workers.
    const std::string* type = pod.Get(o.kubeflow_type_key);
    const std::string* idx = pod.Get(o.kubeflow_index_key);
    if (type == nullptr || idx == nullptr) {
      return FailedPreconditionError(
          o.kubeflow_job_key + " is set but " +
          (type == nullptr ? o.kubeflow_type_key : o.kubeflow_index_key) + " is missing");
    }
    auto v = ParseSmallInt(*idx, o.kubeflow_index_key, 0, (1 << 20) - 1);
    if (!v.ok()) return v.status();
    int heads = 1;
    if (const std::string* h = pod.Get(o.master_replicas_key)) {
      auto hv = ParseSmallInt(*h, o.master_replicas_key, 0, 1 << 20);
      if (!hv.ok()) return hv.status();
      heads = *hv;
    }
    const std::string t = ToLower(*type);
    if (t == "master" || t == "chief" || t == "launcher") {
      if (*v >= heads) {
        return FailedPreconditionError(o.kubeflow_type_key + "=" + *type + " index " +
                                       std::to_string(*v) + " but " + o.master_replicas_key +
                                       " = " + std::to_string(heads));
      }
      m.index = *v;
    } else if (t == "worker") {
      m.index = heads + *v;
    } else {
      return FailedPreconditionError(o.kubeflow_type_key + ": unknown replica type " +
                                     JsonQuoted(*type) +
                                     " (known: master, chief, launcher, worker)");
    }
  }
  if (m.size > 0 && m.index >= m.size) {
    return FailedPreconditionError("pod rank " + std::to_string(m.index) + " is outside the " +
                                   "group of " + std::to_string(m.size) + " (" + o.group_size_key +
                                   ")");
  }
  return m;
}

StatusOr<job::JobSpec> GangSpec(const Pod& pod, const Membership& m, const ExtenderOptions& o) {
  job::JobSpec spec;
  spec.name = JobName(m.key);
  spec.user = JobName(pod.name_space);
  spec.queue = JobName(pod.name_space);
  spec.priority = pod.priority;
  // Also skipped: the GPU choice the bind verb wrote (a bound pod seen again carries it).
  const std::set<std::string> membership_keys = {o.group_name_key, o.group_size_key,
                                                 o.master_replicas_key, o.gpus_annotation_key};
  std::set<std::string> given;
  job::RunEstimate estimate;
  // Annotations and labels under the prefix; labels win (as in Pod::Get).
  std::map<std::string, std::string> values = pod.annotations;
  for (const auto& [k, v] : pod.labels) values[k] = v;
  for (const auto& entry : values) {
    // Named references, not structured bindings: a lambda below captures them.
    const std::string& key = entry.first;
    const std::string& value = entry.second;
    if (!StartsWith(key, o.annotation_prefix) || membership_keys.count(key)) continue;
    if (std::find(o.pod_index_keys.begin(), o.pod_index_keys.end(), key) !=
        o.pod_index_keys.end()) {
      continue;
    }
    const std::string name = key.substr(o.annotation_prefix.size());
    auto dim = [&](int& out) -> Status {
      auto v = ParseSmallInt(value, key, 1, 1 << 20);
      if (!v.ok()) return v.status();
      out = *v;
      return OkStatus();
    };
    Status s;
    if (name == "tp") {
      s = dim(spec.layout.tp);
    } else if (name == "pp") {
      s = dim(spec.layout.pp);
    } else if (name == "dp") {
      s = dim(spec.layout.dp);
    } else if (name == "ep") {
      s = dim(spec.layout.ep);
    } else if (name == "hidden-size") {
      s = dim(spec.hidden_size);
    } else if (name == "seq-len") {
      s = dim(spec.seq_len);
    } else if (name == "micro-batch") {
      s = dim(spec.micro_batch);
    } else if (name == "model-params") {
      auto v = job::ParseParamCount(value);
      if (!v.ok()) return FailedPreconditionError(key + ": " + v.status().message());
      spec.model_params = *v;
    } else if (name == "job-constraint" || name == "tp-constraint") {
      auto c = ParseConstraint(value, key);
      if (!c.ok()) return c.status();
      (name == "job-constraint" ? spec.constraints.job : spec.constraints.tp) = *c;
    } else if (name == "user" || name == "queue") {
      const std::string v(Trim(value));
      if (v.empty()) return FailedPreconditionError(key + ": empty");
      (name == "user" ? spec.user : spec.queue) = v;
    } else if (name == "gpu-model") {
      spec.constraints.gpu_model = std::string(Trim(value));
    } else if (name == "run-time") {
      auto v = job::ParseDuration(std::string(Trim(value)));
      if (!v.ok()) return FailedPreconditionError(key + ": " + v.status().message());
      estimate.run_s = *v;
    } else if (name == "comm-share") {
      auto v = ParseDouble(Trim(value));
      if (!v.ok() || !(*v >= 0 && *v <= 1)) {
        return FailedPreconditionError(key + ": expected a number from 0 to 1, got " +
                                       JsonQuoted(value));
      }
      estimate.comm_share = *v;
    } else if (name == "rdma-required") {
      const std::string v = ToLower(Trim(value));
      if (v != "true" && v != "false") {
        return FailedPreconditionError(key + ": expected \"true\" or \"false\", got " +
                                       JsonQuoted(value));
      }
      spec.constraints.rdma_required = v == "true";
    } else {
      return FailedPreconditionError(
          key +
          ": unknown toposched key (known: tp, pp, dp, ep, model-params, hidden-size, "
          "seq-len, micro-batch, job-constraint, tp-constraint, gpu-model, rdma-required, "
          "run-time, comm-share, user, queue, " +
          o.group_name_key + ", " + o.group_size_key + ", " + o.master_replicas_key + ")");
    }
    if (!s.ok()) return s;
    given.insert(name);
  }
  // The run-time estimate (docs/jobs.md, "Run-time estimate"): both keys or neither.
  if (given.count("run-time") != given.count("comm-share")) {
    const char* missing = given.count("run-time") ? "comm-share" : "run-time";
    return FailedPreconditionError(o.annotation_prefix + missing + ": missing (" +
                                   o.annotation_prefix + "run-time and " + o.annotation_prefix +
                                   "comm-share go together)");
  }
  if (given.count("run-time")) spec.estimate = estimate;
  if (pod.gpus <= 0) return FailedPreconditionError("the pod requests no " + o.gpu_resource);
  // TP defaults to the pod's GPUs: one tensor-parallel group per pod.
  if (!given.count("tp")) spec.layout.tp = pod.gpus;
  int size = m.size;
  if (size == 0) {
    if (!given.count("dp")) {
      return FailedPreconditionError("gang " + m.key + ": group size unknown: set " +
                                     o.group_size_key + " (pods) or " + o.annotation_prefix + "dp");
    }
    const int64_t world = int64_t{spec.layout.tp} * spec.layout.pp * spec.layout.dp;
    if (world % pod.gpus != 0) {
      return FailedPreconditionError("gang " + m.key + ": tp*pp*dp = " + std::to_string(world) +
                                     " is not a multiple of the pod's " + std::to_string(pod.gpus) +
                                     " GPUs");
    }
    size = static_cast<int>(world / pod.gpus);
  }
  spec.replicas = size;
  spec.gpus_per_replica = pod.gpus;
  if (Status s = spec.Normalize(); !s.ok()) {
    return FailedPreconditionError("gang " + m.key + " (" + std::to_string(size) + " pods x " +
                                   std::to_string(pod.gpus) + " GPUs): " + s.message());
  }
  return spec;
}

void AppendJsonString(std::string& out, std::string_view s) {
  out += '"';
  // Node names and most texts need no escaping: one append.
  if (std::none_of(s.begin(), s.end(), [](char ch) {
        return static_cast<unsigned char>(ch) < 0x20 || ch == '"' || ch == '\\';
      })) {
    out.append(s);
    out += '"';
    return;
  }
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

std::string JsonQuoted(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

}  // namespace toposched::api::k8s
