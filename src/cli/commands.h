// Subcommand groups of the `toposched` binary. Each Register* adds its subcommands to the app;
// a subcommand's callback writes its exit code into `rc` (0 ok, 1 bad input, 2 usage).
// Only the cli module reads flags and the environment.
#pragma once

#include <CLI/CLI.hpp>

namespace toposched::cli {

void RegisterTopoCommands(CLI::App& app, int& rc);     // topo import|show|discover
void RegisterClusterCommands(CLI::App& app, int& rc);  // cluster check, export slurm, demo
void RegisterCostCommands(CLI::App& app, int& rc);     // cost, place-node

}  // namespace toposched::cli
