// `toposched slurm import|place|watch|cost` (beside a live Slurm, through scontrol) and
// `toposched exec -- CMD` (inside a Slurm job step).
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <thread>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/strings.h"
#include "core/time_units.h"
#include "cost/cost_model.h"
#include "placer/policy.h"
#include "slurm/exec_env.h"
#include "slurm/import.h"
#include "slurm/place.h"
#include "slurm/runner.h"
#include "slurm/scontrol.h"
#include "topo/io/cluster_yaml.h"
#include "topo/io/discover.h"
#include "topo/io/import.h"
#include "topo/io/json_io.h"
#include "topo/summary.h"

extern char** environ;

namespace toposched::cli {

namespace {

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

StatusOr<topo::Cluster> ReadCluster(const std::string& path) {
  if (path.size() > 5 && path.substr(path.size() - 5) == ".json") {
    ASSIGN_OR_RETURN(std::string text, topo::io::ReadFileToString(path));
    ASSIGN_OR_RETURN(topo::Cluster c, topo::io::ClusterFromJson(text, path));
    c.Finalize();
    return c;
  }
  return topo::io::ReadClusterYamlFile(path);
}

std::string Fmt3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

std::string JoinStr(const std::vector<std::string>& v, const char* sep) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

void PrintReport(const slurm::PlaceReport& r, bool dry_run) {
  for (const slurm::PlaceDecision& d : r.decisions) {
    std::cout << "job " << d.job_id;
    if (!d.job_name.empty()) std::cout << " (" << d.job_name << ")";
    std::cout << ": " << slurm::ActionName(d.action);
    if (d.action == slurm::PlaceDecision::Action::kPlaced) {
      std::cout << (dry_run ? " [dry run]" : "") << " on " << JoinStr(d.nodes, ",") << " GPUs";
      for (size_t i = 0; i < d.slurm_gpus.size(); ++i) {
        std::cout << (i ? " " : " ") << d.nodes[i] << ":" << FormatIntList(d.slurm_gpus[i]);
      }
      std::cout << ", " << d.layout << ", predicted " << Fmt3(d.predicted_ms) << " ms";
    }
    if (!d.marked_by.empty()) std::cout << " (marked by " << d.marked_by << ")";
    std::cout << "\n  " << d.detail << "\n";
  }
  if (r.unmarked_held > 0) {
    std::cout << r.unmarked_held << " held job(s) not marked for toposched: left to Slurm\n";
  }
  if (!r.unknown_nodes.empty()) {
    std::cout << "nodes not in the cluster model (ignored): " << JoinStr(r.unknown_nodes, ",")
              << "\n";
  }
}

struct PlaceArgs {
  std::string cluster;
  std::string partition = "toposched";
  std::string comment = "toposched";
  bool no_scripts = false;
  bool dry_run = false;
  std::string policy = "toposched";
  double interval_s = 5;
};

StatusOr<slurm::PlaceOptions> SlurmPlaceOptionsOf(const PlaceArgs& a) {
  slurm::PlaceOptions o;
  o.mark.partition = a.partition;
  o.mark.comment = a.comment;
  o.mark.read_scripts = !a.no_scripts;
  o.dry_run = a.dry_run;
  ASSIGN_OR_RETURN(o.placer, sched::PolicyOptions(a.policy));
  RETURN_IF_ERROR(o.Validate());
  return o;
}

int RunSlurmPlace(const PlaceArgs& a) {
  auto c = ReadCluster(a.cluster);
  if (!c.ok()) return Fail(c.status());
  auto o = SlurmPlaceOptionsOf(a);
  if (!o.ok()) return Fail(o.status());
  slurm::ProcessRunner runner;
  auto r = slurm::PlaceOnce(*c, runner, *o);
  if (!r.ok()) return Fail(r.status());
  PrintReport(*r, a.dry_run);
  return 0;
}

int RunWatch(const PlaceArgs& a) {
  if (!(a.interval_s > 0)) return Fail(InvalidArgumentError("--interval must be > 0 seconds"));
  auto c = ReadCluster(a.cluster);
  if (!c.ok()) return Fail(c.status());
  auto o = SlurmPlaceOptionsOf(a);
  if (!o.ok()) return Fail(o.status());
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  slurm::ProcessRunner runner;
  int passes = 0;
  while (!g_stop) {
    auto r = slurm::PlaceOnce(*c, runner, *o);
    ++passes;
    if (!r.ok()) {
      // A failed pass (slurmctld restarting) is reported and retried, not fatal.
      std::cerr << "toposched: pass " << passes << ": " << r.status().message() << "\n";
    } else {
      bool placed_any = false;
      for (const auto& d : r->decisions) {
        if (d.action == slurm::PlaceDecision::Action::kPlaced) placed_any = true;
      }
      if (placed_any) PrintReport(*r, a.dry_run);
      std::cout.flush();
    }
    auto until = std::chrono::steady_clock::now() +
                 std::chrono::microseconds(static_cast<int64_t>(a.interval_s * kUsPerS));
    while (!g_stop && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  std::cout << "toposched slurm watch: stopped after " << passes << " pass(es)\n";
  return 0;
}

int RunSlurmCost(const std::string& cluster_file, bool ring, const std::vector<std::string>& ids) {
  auto c = ReadCluster(cluster_file);
  if (!c.ok()) return Fail(c.status());
  slurm::ProcessRunner runner;
  auto text = slurm::RunChecked(runner, {"scontrol", "-d", "-o", "show", "job"});
  if (!text.ok()) return Fail(text.status());
  auto jobs = slurm::ParseJobs(*text, "scontrol show job");
  if (!jobs.ok()) return Fail(jobs.status());
  cost::CostModel model(*c);
  std::cout << "job\tname\tstate\tlayout\tnodes\tGPUs\tpredicted_ms\tdp_ms\ttp_ms\tpp_ms\n";
  for (const slurm::SlurmJob& j : *jobs) {
    if (!ids.empty() && std::find(ids.begin(), ids.end(), j.id) == ids.end()) continue;
    if (j.gpus_by_node.empty()) continue;  // not started
    std::string script;
    if (j.batch) {
      auto r = runner.Run({"scontrol", "write", "batch_script", j.id, "-"});
      if (r.ok() && r->exit_code == 0) script = r->out;
    }
    slurm::MarkOptions mo;
    mo.partition = "";
    auto mark = slurm::MarkOf(j, script, mo);
    slurm::LayoutRequest layout =
        mark.ok() && mark->has_value() ? (*mark)->layout : slurm::LayoutRequest{};
    auto spec = slurm::SpecForJob(j, layout);
    if (!spec.ok()) return Fail(spec.status());
    auto hosts = ExpandHostList(j.node_list);
    if (!hosts.ok()) return Fail(hosts.status());
    auto ranks = slurm::RanksOf(*c, *hosts, j.gpus_by_node, ring);
    if (!ranks.ok()) return Fail(ranks.status().WithPrefix("job " + j.id));
    auto t = slurm::PredictCommTime(model, spec->layout, *ranks);
    if (!t.ok()) return Fail(t.status().WithPrefix("job " + j.id));
    std::string gpus;
    for (const std::string& h : *hosts) {
      gpus += (gpus.empty() ? "" : " ") + h + ":" + FormatIntList(j.gpus_by_node.at(h));
    }
    std::cout << j.id << "\t" << j.name << "\t" << j.state << "\ttp=" << spec->layout.tp
              << " pp=" << spec->layout.pp << " dp=" << spec->layout.dp << "\t" << j.node_list
              << "\t" << gpus << "\t" << Fmt3(t->total_ms) << "\t" << Fmt3(t->dp_ms) << "\t"
              << Fmt3(t->tp_ms) << "\t" << Fmt3(t->pp_ms) << "\n";
  }
  return 0;
}

struct ImportArgs {
  std::string topo;
  std::vector<std::string> node_topo;  // NODE=FILE
  std::string name = "slurm";
  std::string gpu_model;
  std::string out;
};

int RunSlurmImport(const ImportArgs& a) {
  slurm::ImportOptions o;
  o.cluster_name = a.name;
  o.default_topology = a.topo;
  o.gpu_model = a.gpu_model;
  for (const std::string& nt : a.node_topo) {
    StatusOr<std::pair<std::string, std::string>> kv =
        SplitAssignment("--node-topo", nt, "NODES=FILE");
    if (!kv.ok()) return Fail(kv.status());
    auto hosts = ExpandHostList(kv->first);
    if (!hosts.ok()) return Fail(hosts.status().WithPrefix("--node-topo"));
    for (const std::string& h : *hosts) o.per_node[h] = kv->second;
  }
  slurm::ProcessRunner runner;
  auto c = slurm::ImportCluster(runner, o);
  if (!c.ok()) return Fail(c.status());
  std::string json = topo::io::ClusterToJson(*c) + "\n";
  if (a.out.empty()) {
    std::cout << json;
  } else {
    std::ofstream f(a.out, std::ios::binary | std::ios::trunc);
    f << json;
    f.close();
    if (!f) return Fail(InvalidArgumentError(a.out + ": cannot write"));
    std::cout << "wrote " << a.out << "\n";
  }
  std::cerr << topo::FormatClusterSummary(*c);
  return 0;
}

struct ExecArgs {
  std::string topo;
  bool print = false;
  std::vector<std::string> cmd;
};

int RunExec(const ExecArgs& a) {
  StatusOr<topo::NodeTopology> t =
      a.topo.empty() ? topo::io::DiscoverLocal()
                     : topo::io::ImportTopologyFile(a.topo, topo::io::TopoFormat::kAuto);
  if (!t.ok()) return Fail(t.status());
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  auto plan = slurm::PlanExec(env, *t);
  if (!plan.ok()) return Fail(plan.status());
  for (const auto& [k, v] : plan->env) setenv(k.c_str(), v.c_str(), 1);
  std::string bound = "not bound";
  if (!plan->cpus.empty()) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
      cpu_set_t want;
      CPU_ZERO(&want);
      std::vector<int> got;
      for (int cpu : plan->cpus) {
        if (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) {
          CPU_SET(cpu, &want);
          got.push_back(cpu);
        }
      }
      if (got.empty()) {
        bound = "not bound: none of the NUMA node's CPUs is available here";
      } else if (sched_setaffinity(0, sizeof want, &want) == 0) {
        bound = "bound to CPUs " + FormatIntList(got);
      } else {
        bound = std::string("not bound: sched_setaffinity: ") + std::strerror(errno);
      }
    }
  }
  std::string line = slurm::FormatExecPlan(*plan) + "; " + bound + "\n";
  (a.print ? std::cout : std::cerr) << line;
  (a.print ? std::cout : std::cerr).flush();
  if (a.cmd.empty()) return 0;
  std::vector<char*> argv;
  for (const std::string& s : a.cmd) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  return Fail(InvalidArgumentError(a.cmd[0] + ": cannot run: " + std::strerror(errno)));
}

}  // namespace

void RegisterSlurmCommands(CLI::App& app, int& rc) {
  CLI::App* sl = app.add_subcommand("slurm", "Work beside a live Slurm (through scontrol)");
  sl->require_subcommand(1);

  auto ia = std::make_shared<ImportArgs>();
  CLI::App* imp = sl->add_subcommand("import", "Read the live cluster into a cluster model (JSON)");
  imp->add_option("--topo", ia->topo, "topology file for every node without --node-topo");
  imp->add_option("--node-topo", ia->node_topo, "NODES=FILE: topology file for a host list");
  imp->add_option("--name", ia->name, "cluster name");
  imp->add_option("--gpu-model", ia->gpu_model, "GPU model when the files do not name it");
  imp->add_option("--out", ia->out, "write the cluster JSON here (default: stdout)");
  imp->callback([ia, &rc] { rc = RunSlurmImport(*ia); });

  auto add_place_args = [](CLI::App* c, PlaceArgs& a) {
    c->add_option("--cluster", a.cluster, "cluster spec (YAML, or JSON from slurm import)")
        ->required();
    c->add_option("--partition", a.partition, "partition whose held jobs are toposched's");
    c->add_option("--comment", a.comment, "comment word that marks a job");
    c->add_flag("--no-scripts", a.no_scripts, "do not read batch scripts for #TOPOSCHED");
    c->add_flag("--dry-run", a.dry_run, "decide and print, change nothing");
    c->add_option("--policy", a.policy,
                  "placement policy (toposched, first-fit, best-fit, pair-score, kueue-tas, "
                  "slurm-tree)");
  };
  auto pa = std::make_shared<PlaceArgs>();
  CLI::App* place = sl->add_subcommand("place", "Place the marked held jobs once, then release");
  add_place_args(place, *pa);
  place->callback([pa, &rc] { rc = RunSlurmPlace(*pa); });

  auto wa = std::make_shared<PlaceArgs>();
  CLI::App* watch = sl->add_subcommand("watch", "Place marked held jobs in a loop until SIGTERM");
  add_place_args(watch, *wa);
  watch->add_option("--interval", wa->interval_s, "seconds between passes (default 5)");
  watch->callback([wa, &rc] { rc = RunWatch(*wa); });

  auto cc = std::make_shared<std::string>();
  auto ring = std::make_shared<bool>(false);
  auto ids = std::make_shared<std::vector<std::string>>();
  CLI::App* cost = sl->add_subcommand(
      "cost", "Predicted communication time of running jobs on the GPUs Slurm gave them");
  cost->add_option("--cluster", *cc, "cluster spec")->required();
  cost->add_flag("--ring", *ring, "ranks in ring order inside each node (as toposched exec sets)");
  cost->add_option("JOBID", *ids, "only these jobs");
  cost->callback([cc, ring, ids, &rc] { rc = RunSlurmCost(*cc, *ring, *ids); });

  auto ea = std::make_shared<ExecArgs>();
  CLI::App* ex = app.add_subcommand(
      "exec", "Inside srun: ring-order the job's GPUs, set NCCL_IB_HCA, bind to NUMA, exec CMD");
  ex->add_option("--topo", ea->topo, "node topology file (default: discover this machine)");
  ex->add_flag("--print", ea->print, "print what was set to stdout (default: stderr)");
  ex->add_option("CMD", ea->cmd, "command and arguments (after --)");
  ex->callback([ea, &rc] { rc = RunExec(*ea); });
}

}  // namespace toposched::cli
