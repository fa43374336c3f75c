#include "deviceplugin/gang_choice.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "core/enum_names.h"

namespace toposched::deviceplugin {

namespace {

constexpr EnumName<ChoiceFallback> kChoiceFallbackNames[] = {
    {ChoiceFallback::kLookupFailed, "lookup_failed"},
    {ChoiceFallback::kNoPod, "no_pod"},
    {ChoiceFallback::kNoChoice, "no_choice"},
    {ChoiceFallback::kBadChoice, "bad_choice"},
    {ChoiceFallback::kUnavailable, "unavailable"}};

}  // namespace

const char* ChoiceFallbackName(ChoiceFallback f) {
  return NameOf(kChoiceFallbackNames, f, "unknown");
}

StatusOr<std::vector<NodePod>> GangChoices::ListPods() {
  ASSIGN_OR_RETURN(const std::string body, list_());
  return ReadNodePods(body, resource_, annotation_);
}

const NodePod* GangChoices::Admitting(const std::vector<NodePod>& pods) {
  std::set<std::string> listed;
  for (const NodePod& p : pods) listed.insert(p.uid);
  std::erase_if(given_, [&](const auto& e) { return listed.count(e.first) == 0; });
  const NodePod* best = nullptr;
  for (const NodePod& p : pods) {
    if (p.taken || p.requested == 0) continue;
    auto it = given_.find(p.uid);
    if (it != given_.end() && it->second >= p.requested) continue;
    if (best == nullptr || std::tie(p.created, p.name) < std::tie(best->created, best->name)) {
      best = &p;
    }
  }
  return best;
}

ChoiceAnswer GangChoices::Fallback(ChoiceAnswer a, ChoiceFallback f, std::string reason) {
  a.followed = false;
  a.ids.clear();
  a.fallback = f;
  a.reason = std::move(reason);
  ++fallbacks_[static_cast<int>(f)];
  spdlog::warn("msg=\"own choice, not the gang's\" reason={} pod=\"{}\" why=\"{}\"",
               ChoiceFallbackName(f), a.pod, a.reason);
  return a;
}

ChoiceAnswer GangChoices::Choose(const DeviceTable& devices, std::span<const std::string> available,
                                 std::span<const std::string> must_include, int size) {
  StatusOr<std::vector<NodePod>> pods = ListPods();  // outside mu_: it waits on the API server
  std::lock_guard<std::mutex> lock(mu_);
  ChoiceAnswer a;
  last_uid_.clear();
  if (!pods.ok()) return Fallback(a, ChoiceFallback::kLookupFailed, pods.status().message());
  const NodePod* p = Admitting(*pods);
  if (p == nullptr) {
    return Fallback(a, ChoiceFallback::kNoPod,
                    "no pod on this node waits for " + resource_ + " devices");
  }
  a.pod = p->name;
  last_uid_ = p->uid;
  last_size_ = size;
  if (!p->has_choice) return Fallback(a, ChoiceFallback::kNoChoice, "no " + annotation_);
  StatusOr<std::vector<int>> indices = ParseChoice(p->choice, annotation_);
  if (!indices.ok()) return Fallback(a, ChoiceFallback::kBadChoice, indices.status().message());
  if (static_cast<int>(indices->size()) != p->requested) {
    return Fallback(a, ChoiceFallback::kBadChoice,
                    annotation_ + " names " + std::to_string(indices->size()) +
                        " GPUs, the pod asks " + std::to_string(p->requested));
  }
  const int given = given_.count(p->uid) ? given_.at(p->uid) : 0;
  if (given + size > static_cast<int>(indices->size())) {
    return Fallback(a, ChoiceFallback::kBadChoice,
                    "the container asks " + std::to_string(size) + " GPUs, " +
                        std::to_string(indices->size() - given) + " of the choice are left");
  }
  const std::set<std::string> avail(available.begin(), available.end());
  for (int i = given; i < given + size; ++i) {
    const int index = (*indices)[i];
    const GpuDevice* d = nullptr;
    for (const GpuDevice& g : devices.devices()) {
      if (g.index == index) d = &g;
    }
    if (d == nullptr) {
      return Fallback(a, ChoiceFallback::kUnavailable,
                      "GPU " + std::to_string(index) + " is not on this node");
    }
    if (avail.count(d->id) == 0) {
      return Fallback(a, ChoiceFallback::kUnavailable,
                      "GPU " + std::to_string(index) + " (" + d->id +
                          ") is not available (in use or unhealthy)");
    }
    a.ids.push_back(d->id);
  }
  for (const std::string& m : must_include) {
    if (std::find(a.ids.begin(), a.ids.end(), m) == a.ids.end()) {
      return Fallback(a, ChoiceFallback::kUnavailable,
                      "must-include device " + m + " is not among the chosen GPUs");
    }
  }
  a.followed = true;
  ++followed_;
  spdlog::info("msg=\"the gang's choice\" pod=\"{}\" devices={}", a.pod, a.ids.size());
  return a;
}

void GangChoices::NoteAllocated(int count) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_uid_.empty() && last_size_ == count) {
    given_[last_uid_] += count;
    last_uid_.clear();
    return;
  }
  last_uid_.clear();
  // No request before this Allocate (the kubelet skips GetPreferredAllocation when the Topology
  // Manager's aligned devices are exactly what is needed): count it against the pod admitted now.
  // Rare, so the list is read under the lock.
  StatusOr<std::vector<NodePod>> pods = ListPods();
  if (!pods.ok()) return;
  if (const NodePod* p = Admitting(*pods); p != nullptr) given_[p->uid] += count;
}

int64_t GangChoices::followed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return followed_;
}

int64_t GangChoices::fallbacks(ChoiceFallback f) const {
  std::lock_guard<std::mutex> lock(mu_);
  return fallbacks_[static_cast<int>(f)];
}

std::string GangChoices::MetricsText() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out =
      "# HELP toposched_device_plugin_gang_choices_total Container requests answered with the "
      "GPUs the extender chose for the pod.\n"
      "# TYPE toposched_device_plugin_gang_choices_total counter\n"
      "toposched_device_plugin_gang_choices_total " +
      std::to_string(followed_) +
      "\n# HELP toposched_device_plugin_gang_fallbacks_total Container requests answered with "
      "the plugin's own choice, by reason.\n"
      "# TYPE toposched_device_plugin_gang_fallbacks_total counter\n";
  for (int f = 0; f < static_cast<int>(ChoiceFallback::kCount); ++f) {
    out += std::string("toposched_device_plugin_gang_fallbacks_total{reason=\"") +
           ChoiceFallbackName(static_cast<ChoiceFallback>(f)) + "\"} " +
           std::to_string(fallbacks_[f]) + "\n";
  }
  return out;
}

}  // namespace toposched::deviceplugin
