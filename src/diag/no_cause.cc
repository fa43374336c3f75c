// A diagnosis that found no cause says what it read: the lines of each known family, the nearest
// candidates, and why none decided. Lines worded as a fault that no family knows are found by a
// second read of the inputs, made only when no cause was found, so that the readers' single pass
// over a log with a cause costs nothing more.
#include "diag/no_cause.h"

#include <string>
#include <string_view>

#include "diag/readers.h"
#include "diag/text.h"

namespace toposched::diag {

namespace {

// Words of a line that reports a fault in most tools' wording.
bool WordedAsFault(std::string_view t) {
  return Has(t, "rror") || Has(t, "ailed") || Has(t, "ailure") || Has(t, "WARN") ||
         Has(t, "imed out") || Has(t, "imeout") || Has(t, "Killed") || Has(t, "xception") ||
         Has(t, "bort") || Has(t, "atal") || Has(t, "FATAL");
}

// Collects, over a second read, the lines worded as a fault that no reader recognises.
class UnrecognisedFaults {
 public:
  explicit UnrecognisedFaults(NoCauseReport& report) : report_(report) {}
  void operator()(const LineRef& line) {
    const int64_t before = scratch_.total();
    ReadLine(line, scratch_);
    if (scratch_.total() != before || !WordedAsFault(line.text)) return;
    ++report_.unrecognised_faults;
    if (report_.candidates.size() >= NoCauseReport::kMaxCandidates) return;
    report_.candidates.push_back({line.file ? *line.file : std::string(), line.line,
                                  std::string(line.text.substr(0, kMaxEvidenceText)),
                                  "unrecognised"});
  }

 private:
  NoCauseReport& report_;
  EvidenceSet scratch_;
};

std::string WhyNone(const NoCauseReport& r, int64_t lines, int64_t known) {
  if (lines == 0) return "the input holds no lines";
  std::string why;
  if (known == 0) {
    why = "no line is of a known family";
  } else {
    why = known == 1
              ? std::string("the one line of a known family (its kind above) names")
              : "the " + std::to_string(known) + " lines of known families (by kind above) name";
    why += " no cause on its own, and no sign of a correct set-up or of progress came with it";
  }
  if (r.unrecognised_faults == 0) return why + "; no other line is worded as a fault";
  return why + "; " + std::to_string(r.unrecognised_faults) +
         " lines are worded as a fault but match no family (the first of them are the "
         "candidates)";
}

}  // namespace

NoCauseReport ExplainNoCause(const EvidenceSet& evidence, int64_t lines,
                             const std::function<void(const LineFn&)>& reread) {
  NoCauseReport r;
  int64_t known = 0;
  for (int k = 0; k < kKindCount; ++k) {
    const Kind kind = static_cast<Kind>(k);
    const int64_t n = evidence.count(kind);
    if (n == 0) continue;
    known += n;
    r.kinds.push_back({KindName(kind), n});
    const std::string family = SourceName(KindSource(kind));
    bool added = false;
    for (NoCauseReport::Count& f : r.families) {
      if (f.name == family) {
        f.lines += n;
        added = true;
      }
    }
    if (!added) r.families.push_back({family, n});
    for (const Evidence& e : evidence.examples(kind)) {
      if (r.candidates.size() >= NoCauseReport::kMaxCandidates) break;
      r.candidates.push_back({e.file, e.line, e.text, KindName(kind)});
      break;  // one line per kind
    }
  }
  UnrecognisedFaults collect(r);
  reread([&collect](const LineRef& line) { collect(line); });
  r.why = WhyNone(r, lines, known);
  return r;
}

}  // namespace toposched::diag
