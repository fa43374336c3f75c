// Where the binary finds its data files (example clusters and jobs, node topology samples,
// calibration cases, hardware tables) when a command defaults to one. Part of the cli module: it
// reads the environment and the executable's own path, which only main may do.
#pragma once

#include <string>

namespace toposched::cli {

// The data directory, the first that applies of:
//   1. $TOPOSCHED_DATA_DIR when set and not empty (taken as given);
//   2. ../share/toposched beside the executable (an installed tree under any prefix);
//   3. the source tree's data/ when the executable is the one in its build directory;
//   4. the install prefix compiled in (CMAKE_INSTALL_PREFIX/share/toposched).
// Candidates 2-4 count only when they hold hardware/links.json. The build tree comes before the
// compiled-in prefix so that a build-tree binary never reads an older installed copy.
// Returns "" when none applies. A few stat calls; no caching.
std::string DataDir();

// DataDir()/relative, or "data/" + relative (relative to the working directory, as from the
// source tree's root) when there is no data directory.
std::string DataFile(const std::string& relative);

}  // namespace toposched::cli
