#include "outpost/app/model_requantize.h"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "outpost/app/model_command.h"
#include "outpost/app/model_validate.h"
#include "outpost/engine/model.h"
#include "outpost/engine/requantize.h"
#include "outpost/models/model_store.h"
#include "outpost/models/model_validation.h"
#include "outpost/models/version_json.h"
#include "outpost/util/units.h"

namespace outpost::app {
namespace {

int Failed(const Status& st) {
  std::fprintf(stderr, "outpost model requantize: %s\n", st.message().c_str());
  const bool usage =
      st.code() == StatusCode::kInvalidArgument && (st.param() == "ref" || st.param() == "head");
  return usage ? 2 : 1;
}

}  // namespace

int RunRequantize(const ModelFlags& f, models::ModelStore* s) {
  engine::InstallLlamaLogger(false);
  auto src = s->Get(f.ref);
  if (!src.ok()) return Failed(src.status());
  if (!src->verified_file()) {
    std::fprintf(stderr,
                 "outpost model requantize: %s is %s; only a verified version is requantized\n",
                 f.ref.c_str(), src->state.c_str());
    return 1;
  }
  std::string name, version;
  if (Status st = models::ParseModelRef(f.new_ref, &name, &version); !st.ok()) return Failed(st);
  if (auto existing = s->Get(f.new_ref); existing.ok()) {
    std::fprintf(stderr,
                 "outpost model requantize: %s already exists (%s); name a new version, or "
                 "remove it first\n",
                 f.new_ref.c_str(), existing->state.c_str());
    return 2;
  }
  models::ValidationSuite suite;
  if (!LoadSuiteFlag("outpost model requantize", f.suite, &suite)) return 2;
  // Written beside the store's blobs, then adopted: renamed to its digest, so
  // the disk holds the new bytes once (and a crash leaves nothing behind).
  const std::string tmp = s->PartialPath();
  std::fprintf(stderr, "requantizing %s: output head to %s …\n", f.ref.c_str(), f.head.c_str());
  auto r = engine::RequantizeHead(s->ModelPath(*src), tmp, f.head);
  if (!r.ok()) return Failed(r.status());
  const std::string source = "requantized from " + src->ref() + " (" + r->tensor + " " +
                             r->from_type + " → " + r->to_type + ")";
  auto v = s->Adopt(tmp, f.new_ref, source);
  if (!v.ok()) return Failed(v.status());
  std::fprintf(stderr, "%s: %s, %s %s → %s; file %s → %s\n", v->ref().c_str(), v->state.c_str(),
               r->tensor.c_str(), util::FormatBytes(r->head_bytes_before).c_str(),
               util::FormatBytes(r->head_bytes_after).c_str(),
               util::FormatBytes(r->file_bytes_before).c_str(),
               util::FormatBytes(r->file_bytes_after).c_str());
  nlohmann::json out = {{"version", models::VersionJson(*v)},
                        {"head",
                         {{"tensor", r->tensor},
                          {"from", r->from_type},
                          {"to", r->to_type},
                          {"bytes_before", r->head_bytes_before},
                          {"bytes_after", r->head_bytes_after}}},
                        {"file_bytes_before", r->file_bytes_before},
                        {"file_bytes_after", r->file_bytes_after}};
  bool passed = true;
  if (!f.no_validate) {
    std::fprintf(stderr,
                 "validating %s against %s (perplexity on the pinned text, decode speed) …\n",
                 v->ref().c_str(), src->ref().c_str());
    models::ValidateRequest req;
    req.ref = v->ref();
    req.against = src->ref();
    req.suite = suite;
    auto report = models::ValidateVersion(s, req);
    if (!report.ok()) return Failed(report.status());
    passed = report->value("passed", false);
    out["validation"] = *report;
    if (!f.json) PrintValidationReport(*report, v->ref());
  } else if (!f.json) {
    std::printf("%s: %s (not validated: `outpost model validate %s --against %s`)\n",
                v->ref().c_str(), v->state.c_str(), v->ref().c_str(), src->ref().c_str());
  }
  if (f.json) std::printf("%s\n", out.dump(2).c_str());
  return passed ? 0 : 1;
}

}  // namespace outpost::app
