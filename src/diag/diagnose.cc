#include "diag/diagnose.h"

#include "diag/readers.h"
#include "diag/rules.h"

namespace toposched::diag {

StatusOr<Diagnosis> DiagnoseFiles(const std::vector<std::string>& paths, const NodeContext* node,
                                  const DiagnoseOptions& options) {
  return DiagnoseInputs(paths, {}, node, options);
}

StatusOr<Diagnosis> DiagnoseInputs(const std::vector<std::string>& paths,
                                   const std::vector<TextInput>& texts, const NodeContext* node,
                                   const DiagnoseOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  EvidenceSet evidence;
  Diagnosis d;
  const LineFn fn = [&evidence](const LineRef& line) { ReadLine(line, evidence); };
  for (const std::string& path : paths) {
    RETURN_IF_ERROR(StreamFile(path, options.stream, fn, &d.stats));
  }
  for (const TextInput& t : texts) StreamText(t.text, t.name, options.stream, fn, &d.stats);
  d.evidence_lines = evidence.total();
  d.causes = RankCauses(evidence, node);
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
  return d;
}

}  // namespace toposched::diag
