// Readers of Slurm's command output: `scontrol -o show node`, `scontrol -o show job` (one record
// per line, with -d for GPU indices), `scontrol show topology`, and the `#TOPOSCHED` directive
// of a batch script. Pure text in, values out; knows nothing of how the text was obtained.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "job/job_spec.h"
#include "job/job_state.h"

namespace toposched::slurm {

// One record of `scontrol -o show ...`: Key=Value fields in order. A field starts at a token
// whose key begins with an upper-case letter and holds only letters, digits, '_', ':', '/' or
// '.' ("NodeName=", "CPUs/Task=", "ReqB:S:C:T="); any other token belongs to the previous value
// (so "OS=Linux 6.1 #1 SMP" and "Comment=toposched tp=8,pp=2" keep their blanks).
using Record = std::vector<std::pair<std::string, std::string>>;
// Records of a one-record-per-line output; blank lines skipped. InvalidArgument
// "<source>:<line>: ..." for a line that does not start with a field.
StatusOr<std::vector<Record>> ParseRecords(std::string_view text, const std::string& source);
// The value of the first field named `key` (exact), nullopt when absent.
std::optional<std::string> Field(const Record& r, std::string_view key);

// "gpu:v100:8(S:0-1)" / "gpu:8" / "gpu:v100:2(IDX:0-1)" and lists of them joined by ','.
struct GresItem {
  std::string name;  // "gpu"
  std::string type;  // "v100", "" when not given
  int count = 0;
  std::vector<int> indices;  // from (IDX:...), empty when not given
};
StatusOr<std::vector<GresItem>> ParseGres(std::string_view text);

struct SlurmNode {
  std::string name;
  std::string state;           // State= as printed ("IDLE", "MIXED", "DOWN*+DRAIN", ...)
  bool usable = true;          // not DOWN, FAIL, NOT_RESPONDING ('*'), POWERED_DOWN, ...
  bool drained = false;        // DRAIN / DRAINING / DRAINED flag
  std::string gpu_type;        // from Gres=
  int gpus = 0;                // from Gres=
  std::vector<int> gpus_used;  // GPU indices in use (GresUsed=...(IDX:...)); needs -d
  bool gpus_used_known = false;
  std::vector<std::string> partitions;
  int cpus = 0;  // CPUTot=
};
// `scontrol -d -o show node`. InvalidArgument "<source>:<line>: node "gpu01": Gres=: ...".
StatusOr<std::vector<SlurmNode>> ParseNodes(std::string_view text, const std::string& source);

struct SlurmJob {
  std::string id;  // JobId= (array tasks keep Slurm's "123_4" form when printed so)
  std::string name;
  std::string user;   // UserId= without the "(uid)"
  std::string state;  // JobState= as printed
  job::JobState mapped = job::JobState::kPending;
  std::string reason;  // Reason=
  bool held = false;   // pending with Reason JobHeldUser/JobHeldAdmin (priority 0)
  std::string partition;
  std::string comment;    // "" for "(null)"
  int num_nodes = 0;      // NumNodes= lower bound
  int gpus_per_node = 0;  // TresPerNode=gres:gpu[:type]:N, or TresPerJob / nodes
  std::string gpu_type;   // from TresPerNode/TresPerJob, "" when any
  std::string node_list;  // NodeList= expanded later by callers; "" for "(null)"
  std::string req_node_list;
  bool batch = false;  // BatchFlag=1
  // Per node of a running job, with -d: GPU indices it holds ("Nodes=gpu01 ...
  // GRES=gpu:2(IDX:0-1)").
  std::map<std::string, std::vector<int>> gpus_by_node;
};
// `scontrol -d -o show job`: records without JobId= are InvalidArgument; unknown JobState is
// InvalidArgument naming the job.
StatusOr<std::vector<SlurmJob>> ParseJobs(std::string_view text, const std::string& source);

// `scontrol show topology` ("SwitchName=s Level=0 LinkSpeed=1 Nodes=... Switches=...", one
// switch per line, a switch with children listing all nodes below it) → topology.conf text
// that topo::io::ParseTopologyConf reads: Level= dropped, Nodes= reduced to the nodes attached
// directly (those under no child switch), LinkSpeed= kept. InvalidArgument "<source>:<line>:".
StatusOr<std::string> TopologyConfFromShowTopology(std::string_view text,
                                                   const std::string& source);

// A layout request: "tp=8,pp=2" (keys tp, pp, dp, ep, model — a parameter count like "7B";
// separators ',' or blanks). InvalidArgument naming the key for unknown keys or bad values.
struct LayoutRequest {
  int tp = 1, pp = 1, dp = 0, ep = 1;
  double model_params = 0;
};
StatusOr<LayoutRequest> ParseLayoutRequest(std::string_view text);
// The text after the first "#TOPOSCHED" at the start of a line of a batch script (the rest of
// that line, trimmed); nullopt when the script has none.
std::optional<std::string> FindDirective(std::string_view script);

}  // namespace toposched::slurm
