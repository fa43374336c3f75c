// The toposched binary: parses the command line and dispatches to the subcommand groups.
#include <cstdio>

#include "cli/commands.h"

#ifndef TS_VERSION
#define TS_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"toposched: topology-aware GPU cluster scheduler"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "toposched " TS_VERSION);
  int rc = 0;
  toposched::cli::RegisterTopoCommands(app, rc);
  toposched::cli::RegisterClusterCommands(app, rc);
  toposched::cli::RegisterCostCommands(app, rc);
  toposched::cli::RegisterServeCommand(app, rc);
  toposched::cli::RegisterStoreCommands(app, rc);
  toposched::cli::RegisterClientCommands(app, rc);
  toposched::cli::RegisterSimCommands(app, rc);
  toposched::cli::RegisterGoodputCommand(app, rc);
  toposched::cli::RegisterCheckCommands(app, rc);
  toposched::cli::RegisterTraceCommands(app, rc);
  toposched::cli::RegisterSlurmCommands(app, rc);
  toposched::cli::RegisterDiagnoseCommand(app, rc);
  toposched::cli::RegisterAgentCommand(app, rc);
  toposched::cli::RegisterDevicePluginCommand(app, rc);
  // Last: it documents the commands registered above.
  toposched::cli::RegisterDocsCommands(app, rc, TS_VERSION);
  // An unknown first word is named as such (CLI11 would answer "A subcommand is required", or
  // print the top-level help with exit 0 when --help follows it).
  if (argc > 1 && argv[1][0] != '-' &&
      app.get_subcommands([&](CLI::App* c) { return c->check_name(argv[1]); }).empty()) {
    std::fprintf(stderr, "toposched: unknown command \"%s\" (toposched --help lists them)\n",
                 argv[1]);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return rc;
}
