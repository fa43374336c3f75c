#include "select/node_select.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <tuple>
#include <unordered_set>

#include "core/enum_names.h"
#include "core/numeric.h"
#include "core/strings.h"

namespace toposched::sched {

namespace {

// Sets of this size or less get exact rings in the beam mode (larger: greedy + 2-opt).
constexpr int kBeamExactRing = 10;

// -1: a better (smaller), 0: tie, 1: b better. Equal infinities tie.
int CompareMs(double a, double b) {
  if (a == b) return 0;
  double scale = std::max(std::abs(a), std::abs(b));
  if (std::isfinite(scale) && std::abs(a - b) <= 1e-9 * scale) return 0;
  return a < b ? -1 : 1;
}

// Calls f(g) for every subset g of `bits` with exactly `r` members.
template <typename F>
void ForEachCombination(uint32_t bits, int r, F&& f) {
  int pos[32];
  int n = 0;
  for (uint32_t b = bits; b; b &= b - 1) pos[n++] = std::countr_zero(b);
  if (r > n || r < 0) return;
  if (r == 0) {
    f(uint32_t{0});
    return;
  }
  int idx[32];
  for (int i = 0; i < r; ++i) idx[i] = i;
  while (true) {
    uint32_t g = 0;
    for (int i = 0; i < r; ++i) g |= 1u << pos[idx[i]];
    f(g);
    int i = r - 1;
    while (i >= 0 && idx[i] == n - r + i) --i;
    if (i < 0) return;
    ++idx[i];
    for (int j = i + 1; j < r; ++j) idx[j] = idx[j - 1] + 1;
  }
}

// Lexicographically smaller sorted member list: the lowest differing member belongs to a.
bool LexSmaller(const GpuMask& a, const GpuMask& b) {
  GpuMask d = a ^ b;
  int low = d.lowest();
  return low >= 0 && a.test(low);
}

struct GpuMaskHash {
  size_t operator()(const GpuMask& m) const { return m.Hash(); }
};

uint64_t Fnv(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001B3ull;
  }
  return h;
}

uint64_t FnvStr(uint64_t h, const std::string& s) {
  for (char c : s) h = Fnv(h, static_cast<unsigned char>(c));
  return Fnv(h, s.size());
}

}  // namespace

namespace {

constexpr EnumName<Fit> kFitNames[] = {{Fit::kFit, "fit"},
                                       {Fit::kUnschedulable, "unschedulable"},
                                       {Fit::kUnresolvable, "unresolvable"}};

}  // namespace

const char* FitName(Fit f) { return NameOf(kFitNames, f, "fit"); }

Status NodeSelectOptions::Validate() const {
  if (beam_width < 1 || beam_width > 4096) {
    return InvalidArgumentError("node select: beam_width must be 1..4096");
  }
  if (exact_pool_max < 0 || exact_pool_max > SubsetRings::kMaxGpus) {
    return InvalidArgumentError("node select: exact_pool_max must be 0..16");
  }
  return OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Exact tables over at most 16 GPU positions.

class NodeSelector::ExactTables {
 public:
  // One value per subset, filled on first use; NaN = not computed yet. Entries are written with
  // relaxed atomics: threads that compute the same entry store the same value.
  class Lazy {
   public:
    Lazy(size_t n, double bytes, int param)
        : bytes_(bytes), param_(param), v_(new std::atomic<double>[n]) {
      for (size_t i = 0; i < n; ++i) v_[i].store(kNaN, std::memory_order_relaxed);
    }
    double bytes() const { return bytes_; }
    int param() const { return param_; }
    double get(uint32_t s) const { return v_[s].load(std::memory_order_relaxed); }
    void put(uint32_t s, double x) { v_[s].store(x, std::memory_order_relaxed); }

   private:
    static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
    double bytes_;
    int param_;
    std::unique_ptr<std::atomic<double>[]> v_;
  };

  ExactTables(const PairMatrix& w, std::vector<int> positions, const SetTimeFn* fn)
      : rings_(w, std::move(positions)), fn_(fn) {
    const int m = rings_.size();
    const uint32_t full = Full();
    conn_.assign(size_t{1} << m, 0.0);
    for (uint32_t s = 1; m > 0; ++s) {
      int low = std::countr_zero(s);
      uint32_t rest = s & (s - 1);
      double c = conn_[rest];
      for (uint32_t b = rest; b; b &= b - 1) {
        c += w.gbps(rings_.positions()[low], rings_.positions()[std::countr_zero(b)]);
      }
      conn_[s] = c;
      if (s == full) break;
    }
  }

  const SubsetRings& rings() const { return rings_; }
  int m() const { return rings_.size(); }
  uint32_t Full() const { return m() == 0 ? 0 : (m() >= 32 ? ~0u : (1u << m()) - 1); }
  // Sum of pair bandwidths inside each subset (GB/s).
  const std::vector<double>& conn() const { return conn_; }

  // Stable pointers; the tables live as long as this object.
  Lazy* Times(double bytes) { return Get(0, bytes, 0); }
  Lazy* Parts(int tp, double bytes) { return Get(1, bytes, tp); }
  Lazy* Followups(int k, double bytes) { return Get(2, bytes, k); }

  // The objective on subset s.
  double Time(Lazy* t, uint32_t s) const {
    double v = t->get(s);
    if (!std::isnan(v)) return v;
    int buf[32];
    int n = 0;
    for (uint32_t b = s; b; b &= b - 1) buf[n++] = rings_.positions()[std::countr_zero(b)];
    v = n <= 1 ? 0.0 : (*fn_)(std::span<const int>(buf, n), t->bytes());
    t->put(s, v);
    return v;
  }

  // Best partition of s into groups of p->param() GPUs: the slowest group's time (+inf when
  // |s| is no multiple). `group`, when given, receives the group holding lowest(s).
  double Part(Lazy* p, Lazy* times, uint32_t s, uint32_t* group = nullptr) const {
    if (s == 0) return 0.0;
    const int tp = p->param();
    if (std::popcount(s) % tp != 0) return kInf;
    double v = p->get(s);
    if (!std::isnan(v) && !group) return v;
    const uint32_t low = s & (~s + 1);
    double best = kInf;
    uint32_t best_g = 0;
    ForEachCombination(s ^ low, tp - 1, [&](uint32_t g) {
      g |= low;
      double x = std::max(Time(times, g), Part(p, times, s ^ g));
      if (best_g == 0 || x < best) {
        best = x;
        best_g = g;
      }
    });
    p->put(s, best);
    if (group) *group = best_g;
    return best;
  }

  // Best time of min(k, |s|) GPUs of s (the follow-up job on a leftover); +inf for s = 0.
  double Followup(Lazy* f, Lazy* times, uint32_t s) const {
    if (s == 0) return kInf;
    if (std::popcount(s) <= f->param()) return Time(times, s);
    double v = f->get(s);
    if (!std::isnan(v)) return v;
    v = kInf;
    for (uint32_t b = s; b; b &= b - 1) v = std::min(v, Followup(f, times, s & ~(b & (~b + 1))));
    f->put(s, v);
    return v;
  }

 private:
  Lazy* Get(int kind, double bytes, int param) {
    std::lock_guard lock(mu_);
    auto& slot = tables_[{kind, param, bytes}];
    if (!slot) slot = std::make_unique<Lazy>(size_t{1} << m(), bytes, param);
    return slot.get();
  }

  SubsetRings rings_;
  const SetTimeFn* fn_;
  std::vector<double> conn_;
  std::mutex mu_;
  std::map<std::tuple<int, int, double>, std::unique_ptr<Lazy>> tables_;
};

// ---------------------------------------------------------------------------------------------

NodeSelector::NodeSelector(const topo::NodeTopology& topology, Objective objective,
                           NodeSelectOptions options, SelectionCache* cache)
    : topo_(topology),
      objective_(std::move(objective)),
      options_(options),
      cache_(cache),
      n_(static_cast<int>(topology.gpus.size())),
      pairs_(topology) {
  for (int i = 0; i < n_; ++i) {
    if (topo_.gpus[i].health != topo::Health::kUnhealthy) healthy_.set(i);
  }
  uint64_t h = 0xCBF29CE484222325ull;
  h = FnvStr(h, objective_.id);
  h = Fnv(h, static_cast<uint64_t>(n_));
  h = Fnv(h, topo_.nvswitch ? 1 : 0);
  for (const topo::Gpu& g : topo_.gpus) {
    h = Fnv(h, static_cast<uint64_t>(g.index));
    h = Fnv(h, static_cast<uint64_t>(g.numa.value_or(-1)));
    h = Fnv(h, static_cast<uint64_t>(g.health));
    if (g.cpus) {
      for (int c : *g.cpus) h = Fnv(h, static_cast<uint64_t>(c));
    }
    h = Fnv(h, 0xFFFF);
  }
  for (const topo::Nic& c : topo_.nics) {
    h = FnvStr(h, c.name);
    h = Fnv(h, static_cast<uint64_t>(c.link_layer));
    h = Fnv(h, static_cast<uint64_t>(c.health));
  }
  for (const topo::NumaNode& nn : topo_.numa_nodes) {
    h = Fnv(h, static_cast<uint64_t>(nn.id));
    for (int c : nn.cpus) h = Fnv(h, static_cast<uint64_t>(c));
  }
  for (int a = 0; a < topo_.num_devices(); ++a) {
    for (int b = a + 1; b < topo_.num_devices(); ++b) {
      const topo::Path& p = topo_.path(a, b);
      h = Fnv(h, static_cast<uint64_t>(p.cls) * 131 + static_cast<uint64_t>(p.nvlinks));
    }
  }
  for (int a = 0; a < n_; ++a) {
    for (int b = a + 1; b < n_; ++b) h = Fnv(h, std::bit_cast<uint64_t>(pairs_.gbps(a, b)));
  }
  fingerprint_ = h;
  if (n_ <= SubsetRings::kMaxGpus) {
    std::vector<int> all(n_);
    for (int i = 0; i < n_; ++i) all[i] = i;
    tables_ = std::make_shared<ExactTables>(pairs_, all, &objective_.set_ms);
  }
}

StatusOr<std::unique_ptr<NodeSelector>> NodeSelector::Create(const topo::NodeTopology& topology,
                                                             Objective objective,
                                                             NodeSelectOptions options,
                                                             SelectionCache* cache) {
  RETURN_IF_ERROR(options.Validate());
  if (topology.gpus.empty()) {
    return InvalidArgumentError("node select: " + topology.source + ": topology has no GPU");
  }
  if (topology.gpus.size() > static_cast<size_t>(GpuMask::kMaxGpus)) {
    return InvalidArgumentError("node select: " + topology.source + ": " +
                                std::to_string(topology.gpus.size()) + " GPUs, at most " +
                                std::to_string(GpuMask::kMaxGpus) + " supported");
  }
  if (!objective.set_ms) return InvalidArgumentError("node select: objective has no function");
  return std::unique_ptr<NodeSelector>(
      new NodeSelector(topology, std::move(objective), options, cache));
}

StatusOr<std::shared_ptr<const NodeChoice>> NodeSelector::Select(const GpuMask& free,
                                                                 const NodeRequest& request) const {
  RETURN_IF_ERROR(request.Validate());
  SelectionKey key{fingerprint_, free & healthy_, request};
  if (cache_) {
    if (auto hit = cache_->Find(key)) return hit;
  }
  ASSIGN_OR_RETURN(NodeChoice c, SelectUncached(free, request));
  auto shared = std::make_shared<const NodeChoice>(std::move(c));
  if (cache_) cache_->Insert(key, shared);
  return shared;
}

StatusOr<NodeChoice> NodeSelector::SelectUncached(const GpuMask& free,
                                                  const NodeRequest& request) const {
  RETURN_IF_ERROR(request.Validate());
  const GpuMask usable = free & healthy_;
  const int k = request.gpus;
  NodeChoice c;
  if (k > healthy_.count()) {
    c.fit = Fit::kUnresolvable;
    c.reason = "asked for " + std::to_string(k) + " GPUs; the node has " +
               std::to_string(healthy_.count()) + " healthy";
    return c;
  }
  if (k > usable.count()) {
    c.fit = Fit::kUnschedulable;
    c.reason =
        "asked for " + std::to_string(k) + " GPUs; " + std::to_string(usable.count()) + " free";
    return c;
  }
  if (tables_) {
    c = SelectExact(*tables_, static_cast<uint32_t>(usable.lo()), request, "exact");
  } else if (usable.count() <= options_.exact_pool_max) {
    auto pool = PoolTables(usable);
    c = SelectExact(*pool, pool->Full(), request, "pool");
  } else {
    c = SelectBeam(usable, request);
  }
  c.layout = LayOutRanks(topo_, c.order, request.tp);
  return c;
}

std::shared_ptr<NodeSelector::ExactTables> NodeSelector::PoolTables(const GpuMask& pool) const {
  std::lock_guard lock(pool_mu_);
  if (!pool_tables_ || !(pool_mask_ == pool)) {
    pool_tables_ = std::make_shared<ExactTables>(pairs_, pool.Positions(), &objective_.set_ms);
    pool_mask_ = pool;
  }
  return pool_tables_;
}

NodeChoice NodeSelector::SelectExact(ExactTables& tables, uint32_t free_local,
                                     const NodeRequest& req, const char* method) const {
  const int k = req.gpus;
  ExactTables::Lazy* dp = tables.Times(req.dp_bytes);
  ExactTables::Lazy* tp_times = req.has_tp() ? tables.Times(req.tp_bytes) : nullptr;
  ExactTables::Lazy* part = req.has_tp() ? tables.Parts(req.tp, req.tp_bytes) : nullptr;
  ExactTables::Lazy* follow = nullptr;  // looked up on the first tie
  const std::vector<double>& conn = tables.conn();
  const std::vector<int>& local_pos = tables.rings().positions();
  // NUMA nodes a set spans: among equally fast sets that leave equally good leftovers, fewer
  // sockets keep the workers' host memory, data loading and NICs on one CPU.
  uint32_t numa_bit[32] = {};
  for (size_t i = 0; i < local_pos.size() && i < 32; ++i) {
    const auto& numa = topo_.gpus[local_pos[i]].numa;
    numa_bit[i] = numa ? 1u << (*numa & 31) : 0u;
  }
  auto numa_span = [&](uint32_t s) {
    uint32_t nodes = 0;
    for (uint32_t b = s; b; b &= b - 1) nodes |= numa_bit[std::countr_zero(b)];
    return std::popcount(nodes);
  };
  auto set_ms = [&](uint32_t s) {
    return tables.Time(dp, s) + (part ? tables.Part(part, tp_times, s) : 0.0);
  };

  // Every k-subset of the m free GPUs: Gosper's hack over m-bit combinations, each deposited
  // onto the free positions through two byte tables (m ≤ 16).
  int free_pos[32];
  const int m = std::popcount(free_local);
  {
    int i = 0;
    for (uint32_t b = free_local; b; b &= b - 1) free_pos[i++] = std::countr_zero(b);
  }
  uint32_t deposit_lo[256], deposit_hi[256];
  deposit_lo[0] = deposit_hi[0] = 0;
  for (uint32_t i = 1; i < 256; ++i) {
    const int bit = std::countr_zero(i);
    deposit_lo[i] = deposit_lo[i & (i - 1)] | (bit < m ? 1u << free_pos[bit] : 0);
    deposit_hi[i] = deposit_hi[i & (i - 1)] | (bit + 8 < m ? 1u << free_pos[bit + 8] : 0);
  }
  uint32_t best = 0;
  int best_span = -1;  // NUMA span of `best`, computed on its first tie
  double best_ms = kInf;
  bool have = false;
  const uint32_t last = m >= 32 ? ~0u : (1u << m) - 1;
  for (uint32_t comb = k >= 32 ? ~0u : (1u << k) - 1; comb <= last && comb != 0;) {
    const uint32_t s = deposit_lo[comb & 255] | deposit_hi[(comb >> 8) & 255];
    {
      const double ms = set_ms(s);
      int cmp = have ? CompareMs(ms, best_ms) : -1;
      if (cmp == 0) {
        if (!follow) follow = tables.Followups(k, req.dp_bytes);
        const uint32_t l = free_local ^ s, bl = free_local ^ best;
        cmp = CompareMs(tables.Followup(follow, dp, l), tables.Followup(follow, dp, bl));
        if (cmp == 0) {
          const int span = numa_span(s);
          if (best_span < 0) best_span = numa_span(best);
          cmp = (span > best_span) - (span < best_span);
        }
        if (cmp == 0) cmp = -CompareMs(conn[l], conn[bl]);
        if (cmp == 0) {
          uint32_t d = s ^ best;
          cmp = (s & d & (~d + 1)) ? -1 : 1;
        }
      }
      if (cmp < 0) {
        best = s;
        best_ms = ms;
        best_span = -1;
        have = true;
      }
    }
    // Next combination with k bits (Gosper); stops past the last one.
    const uint32_t low = comb & (~comb + 1);
    const uint32_t ripple = comb + low;
    if (ripple == 0) break;
    comb = ripple | (((comb ^ ripple) >> 2) / low);
  }

  NodeChoice c;
  c.method = method;
  const std::vector<int>& pos = tables.rings().positions();
  for (uint32_t b = best; b; b &= b - 1) c.gpus.set(pos[std::countr_zero(b)]);
  c.dp_ms = tables.Time(dp, best);
  c.tp_ms = part ? tables.Part(part, tp_times, best) : 0.0;
  c.predicted_ms = c.dp_ms + c.tp_ms;
  c.ring_bottleneck_gbps = tables.rings().bottleneck_gbps(best);
  if (!follow) follow = tables.Followups(k, req.dp_bytes);
  c.followup_ms = tables.Followup(follow, dp, free_local ^ best);
  std::span<const uint8_t> ring = tables.rings().local_ring(best);
  if (!part) {
    for (uint8_t i : ring) c.order.push_back(pos[i]);
    return c;
  }
  // TP groups, ordered by where they first appear on the whole-set ring; each group's own ring
  // rotated to start at that member.
  std::vector<int> where(tables.m(), 0);
  for (size_t i = 0; i < ring.size(); ++i) where[ring[i]] = static_cast<int>(i);
  std::vector<uint32_t> groups;
  for (uint32_t s = best; s;) {
    uint32_t g = 0;
    tables.Part(part, tp_times, s, &g);
    groups.push_back(g);
    s ^= g;
  }
  auto first = [&](uint32_t g) {
    int w = 1 << 30;
    for (uint32_t b = g; b; b &= b - 1) w = std::min(w, where[std::countr_zero(b)]);
    return w;
  };
  std::sort(groups.begin(), groups.end(),
            [&](uint32_t a, uint32_t b) { return first(a) < first(b); });
  for (uint32_t g : groups) {
    std::span<const uint8_t> gr = tables.rings().local_ring(g);
    size_t start = 0;
    for (size_t i = 0; i < gr.size(); ++i) {
      if (where[gr[i]] < where[gr[start]]) start = i;
    }
    for (size_t i = 0; i < gr.size(); ++i) c.order.push_back(pos[gr[(start + i) % gr.size()]]);
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Beam mode (n > 16).

double NodeSelector::HeuristicSetTime(const std::vector<int>& set, const NodeRequest& req,
                                      std::vector<int>* order, double* dp_ms, double* tp_ms,
                                      double* bottleneck) const {
  auto ring_of = [&](std::span<const int> gpus) { return BestRing(pairs_, gpus, kBeamExactRing); };
  Ring whole = ring_of(set);
  const double dp = whole.order.size() <= 1 ? 0.0 : objective_.set_ms(whole.order, req.dp_bytes);
  double tp = 0;
  std::vector<int> best_order = whole.order;
  if (req.has_tp()) {
    // TP groups: consecutive stretches of the whole ring; the best of the tp rotations.
    const int k = static_cast<int>(whole.order.size());
    tp = kInf;
    for (int off = 0; off < req.tp && off < k; ++off) {
      double slowest = 0;
      std::vector<int> ord;
      for (int g = 0; g < k / req.tp; ++g) {
        std::vector<int> members;
        for (int i = 0; i < req.tp; ++i) members.push_back(whole.order[(off + g * req.tp + i) % k]);
        Ring gr = ring_of(members);
        // Keep the group's ring starting at its first member along the whole ring.
        auto it = std::find(gr.order.begin(), gr.order.end(), members.front());
        std::rotate(gr.order.begin(), it, gr.order.end());
        slowest = std::max(slowest, objective_.set_ms(gr.order, req.tp_bytes));
        ord.insert(ord.end(), gr.order.begin(), gr.order.end());
      }
      if (slowest < tp) {
        tp = slowest;
        best_order = std::move(ord);
      }
    }
  }
  if (order) *order = std::move(best_order);
  if (dp_ms) *dp_ms = dp;
  if (tp_ms) *tp_ms = tp;
  if (bottleneck) *bottleneck = whole.bottleneck_gbps;
  return dp + tp;
}

double NodeSelector::HeuristicFollowupMs(const GpuMask& leftover, int k, double bytes) const {
  std::vector<int> left = leftover.Positions();
  if (left.empty()) return kInf;
  // Greedy: from the lowest leftover GPU, add the GPU with the best bandwidth to all chosen.
  std::vector<int> chosen{left.front()};
  std::vector<char> used(left.size(), 0);
  used[0] = 1;
  const int want = std::min<int>(k, static_cast<int>(left.size()));
  while (static_cast<int>(chosen.size()) < want) {
    int pick = -1;
    double pick_bw = -1;
    for (size_t i = 0; i < left.size(); ++i) {
      if (used[i]) continue;
      double worst = kInf;
      for (int c : chosen) worst = std::min(worst, pairs_.gbps(c, left[i]));
      if (worst > pick_bw) {
        pick_bw = worst;
        pick = static_cast<int>(i);
      }
    }
    used[pick] = 1;
    chosen.push_back(left[pick]);
  }
  return chosen.size() <= 1 ? 0.0 : objective_.set_ms(chosen, bytes);
}

NodeChoice NodeSelector::SelectBeam(const GpuMask& free, const NodeRequest& req) const {
  const int k = req.gpus;
  // Candidate pools: the NVLink islands that hold the whole job, else every free GPU.
  std::vector<GpuMask> pools;
  for (const std::vector<int>& island : topo_.NvlinkIslands()) {
    GpuMask p = GpuMask::FromPositions(island) & free;
    if (p.count() >= k) pools.push_back(p);
  }
  if (pools.empty()) pools.push_back(free);

  struct Final {
    GpuMask set;
    double ms = kInf;
    double follow = kInf;
    double conn = 0;
    bool follow_done = false;
  };
  Final best;
  bool have = false;
  auto leftover_conn = [&](const GpuMask& l) {
    std::vector<int> p = l.Positions();
    double c = 0;
    for (size_t i = 0; i < p.size(); ++i)
      for (size_t j = i + 1; j < p.size(); ++j) c += pairs_.gbps(p[i], p[j]);
    return c;
  };
  auto consider = [&](const GpuMask& set, double ms) {
    Final f;
    f.set = set;
    f.ms = ms;
    int cmp = have ? CompareMs(ms, best.ms) : -1;
    if (cmp == 0) {
      const GpuMask l = free & ~set, bl = free & ~best.set;
      if (!best.follow_done) {
        best.follow = HeuristicFollowupMs(bl, k, req.dp_bytes);
        best.conn = leftover_conn(bl);
        best.follow_done = true;
      }
      f.follow = HeuristicFollowupMs(l, k, req.dp_bytes);
      f.conn = leftover_conn(l);
      f.follow_done = true;
      cmp = CompareMs(f.follow, best.follow);
      if (cmp == 0) cmp = -CompareMs(f.conn, best.conn);
      if (cmp == 0) cmp = LexSmaller(set, best.set) ? -1 : 1;
    }
    if (cmp < 0) {
      best = f;
      have = true;
    }
  };

  for (const GpuMask& pool : pools) {
    std::vector<int> cand = pool.Positions();
    const int p = static_cast<int>(cand.size());
    // Classes of interchangeable GPUs: same NUMA node, same bandwidth to every other candidate.
    std::vector<int> cls(p, -1);
    std::vector<std::vector<int>> classes;
    for (int a = 0; a < p; ++a) {
      if (cls[a] >= 0) continue;
      cls[a] = static_cast<int>(classes.size());
      classes.push_back({cand[a]});
      for (int b = a + 1; b < p; ++b) {
        if (cls[b] >= 0 || topo_.gpus[cand[a]].numa != topo_.gpus[cand[b]].numa) continue;
        bool same = true;
        for (int x = 0; x < p && same; ++x) {
          if (x == a || x == b) continue;
          same = pairs_.gbps(cand[a], cand[x]) == pairs_.gbps(cand[b], cand[x]);
        }
        if (same) {
          cls[b] = cls[a];
          classes.back().push_back(cand[b]);
        }
      }
    }
    struct State {
      GpuMask set;
      std::vector<int> members;
      double ms = 0;
      double conn = 0;
    };
    std::vector<State> beam(1);
    for (int step = 0; step < k; ++step) {
      std::vector<State> next;
      std::unordered_set<GpuMask, GpuMaskHash> seen;
      for (const State& st : beam) {
        for (const std::vector<int>& members : classes) {
          int rep = -1;
          for (int g : members) {
            if (!st.set.test(g)) {
              rep = g;
              break;
            }
          }
          if (rep < 0) continue;
          State ns;
          ns.set = st.set;
          ns.set.set(rep);
          if (!seen.insert(ns.set).second) continue;
          ns.members = st.members;
          ns.members.push_back(rep);
          ns.conn = st.conn;
          for (int x : st.members) ns.conn += pairs_.gbps(x, rep);
          ns.ms = ns.members.size() <= 1 ? 0.0 : objective_.set_ms(ns.members, req.dp_bytes);
          next.push_back(std::move(ns));
        }
      }
      std::sort(next.begin(), next.end(), [](const State& a, const State& b) {
        int cmp = CompareMs(a.ms, b.ms);
        if (cmp != 0) return cmp < 0;
        cmp = -CompareMs(a.conn, b.conn);
        if (cmp != 0) return cmp < 0;
        return LexSmaller(a.set, b.set);
      });
      if (static_cast<int>(next.size()) > options_.beam_width) next.resize(options_.beam_width);
      beam = std::move(next);
    }
    for (const State& st : beam) {
      consider(st.set, HeuristicSetTime(st.members, req, nullptr, nullptr, nullptr, nullptr));
    }
  }

  NodeChoice c;
  c.method = "beam";
  c.gpus = best.set;
  c.predicted_ms = HeuristicSetTime(best.set.Positions(), req, &c.order, &c.dp_ms, &c.tp_ms,
                                    &c.ring_bottleneck_gbps);
  c.followup_ms = HeuristicFollowupMs(free & ~best.set, k, req.dp_bytes);
  return c;
}

double NodeSelector::SetTimeMs(const GpuMask& set, const NodeRequest& req) const {
  if (tables_) {
    const uint32_t s = static_cast<uint32_t>(set.lo());
    double ms = tables_->Time(tables_->Times(req.dp_bytes), s);
    if (req.has_tp()) {
      ms += tables_->Part(tables_->Parts(req.tp, req.tp_bytes), tables_->Times(req.tp_bytes), s);
    }
    return ms;
  }
  return HeuristicSetTime(set.Positions(), req, nullptr, nullptr, nullptr, nullptr);
}

}  // namespace toposched::sched
