// Subcommand groups of the `toposched` binary. Each Register* adds its subcommands to the app;
// a subcommand's callback writes its exit code into `rc` (0 ok, 1 bad input, 2 usage).
// Only the cli module reads flags and the environment.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "core/status.h"

namespace toposched::cli {

// Prints "toposched: <message>" to stderr; returns the exit code for bad input, 1.
inline int Fail(const Status& s) {
  std::fprintf(stderr, "toposched: %s\n", s.message().c_str());
  return 1;
}

void RegisterTopoCommands(CLI::App& app, int& rc);     // topo import|show|discover
void RegisterClusterCommands(CLI::App& app, int& rc);  // cluster check, export slurm, demo
void RegisterCostCommands(CLI::App& app, int& rc);     // cost, place-node
void RegisterSimCommands(CLI::App& app, int& rc);      // simulate
void RegisterGoodputCommand(CLI::App& app, int& rc);   // goodput (one big job under failures)
void RegisterCheckCommands(CLI::App& app, int& rc);    // check pollux|crux
void RegisterTraceCommands(CLI::App& app, int& rc);    // trace generate
void RegisterSlurmCommands(CLI::App& app, int& rc);    // slurm import|place|watch|cost, exec
void RegisterServeCommand(CLI::App& app, int& rc);     // serve (the daemon)
void RegisterStoreCommands(CLI::App& app, int& rc);    // store check (a log replayed, checked)
void RegisterDiagnoseCommand(CLI::App& app, int& rc);  // diagnose (logs -> causes)
void RegisterAgentCommand(CLI::App& app, int& rc);     // agent (a node's topology -> daemon)
// device-plugin (the kubelet's Device Plugin API on a GPU node)
void RegisterDevicePluginCommand(CLI::App& app, int& rc);
// submit, queue, show, cancel, complete, explain, nodes, drain, resume, events
void RegisterClientCommands(CLI::App& app, int& rc);
// completion bash|zsh, man (hidden): generated from the commands registered before it.
void RegisterDocsCommands(CLI::App& app, int& rc, const std::string& version);

}  // namespace toposched::cli
