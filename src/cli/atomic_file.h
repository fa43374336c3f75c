// Writing an output file all or nothing, for the subcommands that take --out: a failed run
// leaves the target as it was and no temporary behind. Only the cli module writes files.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"

namespace toposched::cli {

// Writes `text` to `path`.tmp beside the target and renames it over `path`. On any failure the
// temporary is removed and `path` is untouched. InvalidArgument naming the file and the step
// ("cannot open for writing", "write failed", "rename failed: <reason>").
Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text);

// Writes several files into `dir` (created when missing) as a set: every file goes to its
// NAME.tmp first, and only when all are written are they renamed over their targets. A failure
// while writing removes the temporaries and leaves every target as it was (an earlier report in
// `dir` stays whole, not half replaced). Names are plain file names. Errors as above; a rename
// that fails after others succeeded (the file system refused it) names the file it stopped at.
Status WriteFilesAtomically(const std::filesystem::path& dir,
                            const std::vector<std::pair<std::string, std::string>>& files);

}  // namespace toposched::cli
