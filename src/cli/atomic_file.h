// Writing an output file all or nothing, for the subcommands that take --out: a failed run
// leaves the target as it was and no temporary behind. Only the cli module writes files.
#pragma once

#include <filesystem>
#include <string>

#include "core/status.h"

namespace toposched::cli {

// Writes `text` to `path`.tmp beside the target and renames it over `path`. On any failure the
// temporary is removed and `path` is untouched. InvalidArgument naming the file and the step
// ("cannot open for writing", "write failed", "rename failed: <reason>").
Status WriteFileAtomically(const std::filesystem::path& path, const std::string& text);

}  // namespace toposched::cli
