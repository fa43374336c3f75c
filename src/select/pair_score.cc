#include "select/pair_score.h"

#include <algorithm>

namespace toposched::sched {

int PairScore(const topo::Path& p) {
  switch (p.cls) {
    case topo::PathClass::kNV:
      return 100 * p.nvlinks;
    case topo::PathClass::kPIX:
      return 50;
    case topo::PathClass::kPXB:
      return 40;
    case topo::PathClass::kPHB:
      return 30;
    case topo::PathClass::kNODE:
      return 20;
    case topo::PathClass::kSYS:
      return 10;
  }
  return 0;
}

int SetPairScore(const topo::NodeTopology& t, std::span<const int> gpus) {
  int s = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    for (size_t j = i + 1; j < gpus.size(); ++j) s += PairScore(t.gpu_gpu(gpus[i], gpus[j]));
  }
  return s;
}

namespace {

// Partition search state. Slots hold GPU positions, or -1 for padding (scores 0 with anyone).
struct Search {
  int k = 0;
  int slots = 0;
  std::vector<int> item;                // slot -> GPU position or -1
  std::vector<std::vector<int>> score;  // slot x slot pair score
  std::vector<char> used;
  std::vector<int> sets;  // current partition, k slots per set
  std::vector<int> best_sets;
  long long best = -1;

  void Run(int assigned, long long total) {
    if (assigned == slots) {
      if (total > best && HasFullSet()) {
        best = total;
        best_sets = sets;
      }
      return;
    }
    int first = 0;
    while (used[first]) ++first;
    used[first] = 1;
    sets.push_back(first);
    Extend(first + 1, 1, assigned, total);
    sets.pop_back();
    used[first] = 0;
  }

  bool HasFullSet() const {
    for (int i = 0; i < slots; i += k) {
      bool full = true;
      for (int j = i; j < i + k; ++j) full = full && item[sets[j]] >= 0;
      if (full) return true;
    }
    return false;
  }

  // Chooses the remaining members of the set being built (its first slot is fixed).
  void Extend(int from, int have, int assigned, long long total) {
    if (have == k) {
      Run(assigned + k, total);
      return;
    }
    for (int s = from; s < slots; ++s) {
      if (used[s]) continue;
      long long add = 0;
      for (size_t i = sets.size() - have; i < sets.size(); ++i) add += score[sets[i]][s];
      used[s] = 1;
      sets.push_back(s);
      Extend(s + 1, have + 1, assigned, total + add);
      sets.pop_back();
      used[s] = 0;
    }
  }
};

}  // namespace

std::vector<int> PairScoreSelect(const topo::NodeTopology& t, std::span<const int> free, int k) {
  const int m = static_cast<int>(free.size());
  if (k <= 0 || k > m) return {};
  std::vector<int> sorted(free.begin(), free.end());
  std::sort(sorted.begin(), sorted.end());
  if (k == m) return sorted;
  Search s;
  s.k = k;
  s.slots = (m + k - 1) / k * k;
  s.item = sorted;
  s.item.resize(s.slots, -1);
  s.score.assign(s.slots, std::vector<int>(s.slots, 0));
  for (int a = 0; a < s.slots; ++a) {
    for (int b = 0; b < s.slots; ++b) {
      if (a != b && s.item[a] >= 0 && s.item[b] >= 0) {
        s.score[a][b] = PairScore(t.gpu_gpu(s.item[a], s.item[b]));
      }
    }
  }
  s.used.assign(s.slots, 0);
  s.Run(0, 0);
  // The best full set of the best partition.
  std::vector<int> pick;
  long long pick_score = -1;
  for (int i = 0; i + k <= static_cast<int>(s.best_sets.size()); i += k) {
    std::vector<int> set;
    long long sc = 0;
    bool full = true;
    for (int j = i; j < i + k; ++j) {
      if (s.item[s.best_sets[j]] < 0) full = false;
      set.push_back(s.item[s.best_sets[j]]);
      for (int q = i; q < j; ++q) sc += s.score[s.best_sets[q]][s.best_sets[j]];
    }
    if (full && sc > pick_score) {
      pick_score = sc;
      pick = set;
    }
  }
  std::sort(pick.begin(), pick.end());
  return pick;
}

}  // namespace toposched::sched
