// `outpost model validate REF [--against BASE] [--suite F]`, and the two parts
// of it that `outpost model requantize` shares: reading --suite and printing a
// report (models/model_validation.h makes the report).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace outpost::models {
class ModelStore;
struct ValidationSuite;
}  // namespace outpost::models

namespace outpost::app {

struct ModelFlags;

// Reads the suite file at `path` into *suite ("" leaves the default suite).
// On a bad file prints "<command>: <why>" on stderr and returns false.
bool LoadSuiteFlag(const char* command, const std::string& path, models::ValidationSuite* suite);

// One line per check ("ok  " or "FAIL", its name, what it measured), then the
// verdict for `ref`, on stdout.
void PrintValidationReport(const nlohmann::json& report, const std::string& ref);

// Exit codes as RunModel: 0 passed, 1 failed (or could not run), 2 usage.
int RunValidate(const ModelFlags& f, models::ModelStore* store);

}  // namespace outpost::app
