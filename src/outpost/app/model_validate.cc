#include "outpost/app/model_validate.h"

#include <cstdio>

#include "outpost/app/model_command.h"
#include "outpost/engine/model.h"
#include "outpost/models/model_store.h"
#include "outpost/models/model_validation.h"

namespace outpost::app {
namespace {

constexpr const char* kCommand = "outpost model validate";

int Failed(const Status& st) {
  std::fprintf(stderr, "%s: %s\n", kCommand, st.message().c_str());
  return st.code() == StatusCode::kInvalidArgument && st.param() == "ref" ? 2 : 1;
}

}  // namespace

bool LoadSuiteFlag(const char* command, const std::string& path, models::ValidationSuite* suite) {
  if (path.empty()) return true;
  auto loaded = models::LoadValidationSuite(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s: %s\n", command, loaded.status().message().c_str());
    return false;
  }
  *suite = *loaded;
  return true;
}

void PrintValidationReport(const nlohmann::json& report, const std::string& ref) {
  for (const auto& c : report["checks"]) {
    std::printf("%s %-20s %s\n", c["passed"].get<bool>() ? "ok  " : "FAIL",
                c["name"].get<std::string>().c_str(), c["detail"].get<std::string>().c_str());
  }
  std::printf("%s: validation %s\n", ref.c_str(),
              report.value("passed", false) ? "passed" : "FAILED (activation needs --force)");
}

int RunValidate(const ModelFlags& f, models::ModelStore* s) {
  engine::InstallLlamaLogger(false);
  auto v = s->Get(f.ref);
  if (!v.ok()) return Failed(v.status());
  if (!v->verified_file()) {
    std::fprintf(stderr, "%s: %s is %s; only a verified version validates\n", kCommand,
                 f.ref.c_str(), v->state.c_str());
    return 1;
  }
  models::ValidateRequest req;
  req.ref = f.ref;
  req.against = f.against;
  if (!LoadSuiteFlag(kCommand, f.suite, &req.suite)) return 2;
  auto report = models::ValidateVersion(s, req);
  if (!report.ok()) return Failed(report.status());
  if (f.json) {
    std::printf("%s\n", report->dump(2).c_str());
  } else {
    PrintValidationReport(*report, f.ref);
  }
  return report->value("passed", false) ? 0 : 1;
}

}  // namespace outpost::app
