// Rendering of an `outpost bench` report: JSON (input to `outpost plan
// --calibrate`), a text table, and HTML with SVG charts. Pure.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "outpost/bench/runner.h"

namespace outpost::bench {

nlohmann::json BenchJson(const BenchReport& r);
std::string BenchText(const BenchReport& r);
std::string BenchHtml(const BenchReport& r);

}  // namespace outpost::bench
