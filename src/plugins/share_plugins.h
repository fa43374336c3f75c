// The `shares` choice point as plugin objects: where a fractional job (gpu_milli < 1000) goes.
// A plugin sees the shared GPUs that could take work and every node's free GPUs, and answers
// with a shared GPU, a node whose free GPU opens, or "as a 1-GPU job" (the `nodes` and `gpus`
// plugins decide); the gang search builds the placement and its explanation from the answer
// (gang_fractional.cc). The rules themselves are documented at PlacementPlugins::shares.
#pragma once

#include <string>
#include <vector>

#include "plugins/slots.h"
#include "topo/cluster.h"

namespace toposched::sched {

// What a share plugin sees, built once per placement of a fractional job.
struct ShareView {
  struct Shared {
    int node = 0;
    int gpu = 0;
    int room = 0;  // 1000 - used milli
  };
  // The shared GPUs of nodes that take work, healthy ones only, by (node, GPU).
  std::vector<Shared> shared;
  // Per node: its free GPUs; -1 for a node that takes no work (health, drain, the job's filters).
  std::vector<int> free;
  // Per node: its lowest-numbered free GPU; -1 when it has none or takes no work.
  std::vector<int> lowest_free;
  // Shared GPUs cluster-wide, those on nodes that take no work included.
  int shared_total = 0;
};

struct ShareChoice {
  enum class Kind {
    kShared,    // view.shared[index] takes the job
    kOpenFree,  // a free GPU of `node` becomes shared (the `gpus` plugin picks which)
    kAsWhole,   // the job is placed as a 1-GPU job would be (or told why it cannot be)
  };
  Kind kind = Kind::kAsWhole;
  int index = -1;  // kShared: into view.shared
  int node = -1;   // kOpenFree
  // Why, for the explanation: kShared and kOpenFree, the choice ("best fit among 2 shared GPUs
  // with room"); kAsWhole, why no share was taken ("no GPU is shared yet").
  std::string why;
};

class SharePlugin : public Plugin<ShareRule> {
 public:
  // Deterministic: ties by node, then GPU. `cluster` names the nodes in `why`.
  virtual ShareChoice Choose(const ShareView& view, int milli,
                             const topo::Cluster& cluster) const = 0;
};

// The registered share plugins, in registry order (the order of ShareRule).
const std::vector<const SharePlugin*>& SharePlugins();

}  // namespace toposched::sched
