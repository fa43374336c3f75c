#include "diag/diagnose.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "diag/readers.h"
#include "diag/rules.h"

namespace toposched::diag {

namespace {

// A directory stands for the regular files in it, not hidden, by name; any other path for
// itself (a missing or unreadable one is reported when it is streamed).
StatusOr<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (!std::filesystem::is_directory(path, ec)) {
      out.push_back(path);
      continue;
    }
    std::vector<std::string> files;
    std::filesystem::directory_iterator it(path, ec);
    if (ec) return FailedPreconditionError(path + ": cannot list the directory: " + ec.message());
    for (const auto& entry : it) {
      const std::string name = entry.path().filename().string();
      std::error_code fec;
      if (!name.starts_with(".") && entry.is_regular_file(fec)) files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

// A file's part in the job's failure, from its own evidence.
LogPart PartOf(const std::string& file, const EvidenceSet& evidence, const NodeContext* node) {
  LogPart p;
  p.file = file;
  std::vector<Cause> causes = RankCauses(evidence, node);
  if (causes.empty()) return p;
  p.top = std::move(causes.front());
  for (const Evidence& e : p.top->evidence) {
    if (!p.first_seen || e.line < p.first_seen->line) p.first_seen = e;
  }
  // Its time: the first seen line's, else the earliest cited line's that has one.
  std::vector<const Evidence*> cited;
  for (const Evidence& e : p.top->evidence) cited.push_back(&e);
  std::stable_sort(cited.begin(), cited.end(),
                   [](const Evidence* a, const Evidence* b) { return a->line < b->line; });
  for (const Evidence* e : cited) {
    if ((p.time = DecodeLineTime(e->Field("line_time")))) break;
  }
  return p;
}

// The first failure's cause leads the job's causes, named as the first failure.
void LeadWithFirstFailure(const std::vector<LogPart>& parts, std::vector<Cause>& causes) {
  for (const LogPart& p : parts) {
    if (p.role != LogRole::kFirstFailure) continue;
    auto it = std::find_if(causes.begin(), causes.end(),
                           [&](const Cause& c) { return c.category == p.top->category; });
    Cause lead = it == causes.end() ? *p.top : *it;
    if (it != causes.end()) causes.erase(it);
    lead.summary = "first failure, in " + p.file + ": " + lead.summary;
    causes.insert(causes.begin(), std::move(lead));
    return;
  }
}

}  // namespace

StatusOr<Diagnosis> DiagnoseFiles(const std::vector<std::string>& paths, const NodeContext* node,
                                  const DiagnoseOptions& options) {
  return DiagnoseInputs(paths, {}, node, options);
}

StatusOr<Diagnosis> DiagnoseInputs(const std::vector<std::string>& paths,
                                   const std::vector<TextInput>& texts, const NodeContext* node,
                                   const DiagnoseOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(const std::vector<std::string> files, ExpandPaths(paths));
  // Each file is read once into its own evidence: merged in order, it is the job's evidence
  // (exactly as one stream over every file), and alone, with two or more files, its part.
  EvidenceSet evidence;
  Diagnosis d;
  for (const std::string& path : files) {
    EvidenceSet own;
    // With several logs, each line's evidence keeps the time of the line (or of the nearest
    // line above it that carries one), for the job's timeline.
    const bool timed = files.size() >= 2;
    RETURN_IF_ERROR(StreamFile(
        path, options.stream,
        [&own, timed](const LineRef& line) {
          if (timed) {
            if (auto t = TimeOfLine(line.text)) own.SetLineTime(EncodeLineTime(*t));
          }
          ReadLine(line, own);
        },
        &d.stats));
    if (files.size() >= 2) d.logs.push_back(PartOf(path, own, node));
    evidence.Merge(own);
  }
  const LineFn fn = [&evidence](const LineRef& line) { ReadLine(line, evidence); };
  for (const TextInput& t : texts) StreamText(t.text, t.name, options.stream, fn, &d.stats);
  d.evidence_lines = evidence.total();
  d.causes = RankCauses(evidence, node);
  if (d.causes.empty()) {
    d.no_cause = ExplainNoCause(evidence, d.stats.lines, [&](const LineFn& fn) {
      // Read once already: a file that cannot be read again now adds no candidates.
      for (const std::string& path : files) (void)StreamFile(path, options.stream, fn);
      for (const TextInput& t : texts) StreamText(t.text, t.name, options.stream, fn);
    });
  }
  if (!d.logs.empty()) {
    AssignLogRoles(d.logs);
    LeadWithFirstFailure(d.logs, d.causes);
    d.timeline = MergeTimeline(d.logs);
  }
  return d;
}

Diagnosis DiagnoseText(std::string_view text, const std::string& name, const NodeContext* node,
                       const DiagnoseOptions& options) {
  EvidenceSet evidence;
  Diagnosis d;
  StreamText(
      text, name, options.stream, [&evidence](const LineRef& line) { ReadLine(line, evidence); },
      &d.stats);
  d.evidence_lines = evidence.total();
  d.causes = RankCauses(evidence, node);
  if (d.causes.empty()) {
    d.no_cause = ExplainNoCause(evidence, d.stats.lines, [&](const LineFn& fn) {
      StreamText(text, name, options.stream, fn);
    });
  }
  return d;
}

}  // namespace toposched::diag
