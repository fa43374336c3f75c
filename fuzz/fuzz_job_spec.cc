// libFuzzer target: job specs as YAML (files, `submit`) and as JSON (REST bodies of
// POST /api/v1/jobs, with the schema's types enforced) over any bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "job/job_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  namespace job = toposched::job;
  (void)job::ParseJobsYaml(text, "fuzz");
  (void)job::ParseJobJson(text, "fuzz");
  (void)job::ParseJobsJson(text, "fuzz");
  return 0;
}
