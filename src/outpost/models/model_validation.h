// Validating a model version before it serves: does it answer, is it no
// worse than the version it would replace, is it fast enough. A suite (YAML,
// every key optional; the defaults below) of
//
//   smoke:                       prompts with what the answer must contain
//     - prompt: "What is the capital of France? Answer in one word."
//       expect: "Paris"          # a substring (case-insensitive), or
//       regex: "Par(is|ee)"      # a POSIX extended regular expression
//       max_tokens: 48
//   quality:                     against the active version on the pinned
//     max_ppl_increase_pct: 10   # text (engine/quality.h); skipped when
//     max_mean_kl: 0.5           # there is no active version, or `against`
//     min_same_top_pct: 70       # is the version itself
//     chunks: 4
//   speed:
//     min_decode_tps: 0          # 0 = not checked
//     max_ttft_ms: 0
//     min_decode_ratio: 0        # candidate / base decode tokens/s, one
//                                # stream, measured in turns (0 = reported,
//                                # not checked; needs a base)
//
// Each check passes or fails with its figures; the report is kept with the
// version (ModelStore::MarkValidated) and a version whose report failed is
// not activated without --force.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/util/status.h"

namespace outpost::models {

struct ValidationSuite {
  struct Smoke {
    std::string prompt;
    std::string expect;  // substring, case-insensitive ("" = none)
    std::string regex;   // ("" = none)
    int max_tokens = 48;
  };
  std::vector<Smoke> smoke = {
      {"What is the capital of France? Answer in one word.", "Paris", "", 48}};
  double max_ppl_increase_pct = 10;
  double max_mean_kl = 0.5;
  double min_same_top_pct = 70;
  int chunks = 4;
  double min_decode_tps = 0;
  double max_ttft_ms = 0;
  double min_decode_ratio = 0;
};

// Reads a suite file. Errors: NotFound, InvalidArgument naming the key and
// the rule (unknown keys, bad numbers, an invalid regex, a smoke prompt
// without a check).
StatusOr<ValidationSuite> LoadValidationSuite(const std::string& path);

struct ValidationReport {
  bool passed = false;
  nlohmann::json checks = nlohmann::json::array();  // {name, passed, detail, figures}
  nlohmann::json ToJson() const;
};

// Runs the suite on the GGUF at `candidate_path`, comparing with the one at
// `base_path` ("" = no quality comparison). Loads each model once (the
// candidate and the base side by side during the comparison). Errors: the
// model that cannot load (the report is then a failure the caller records).
StatusOr<ValidationReport> ValidateModel(const std::string& candidate_path,
                                         const std::string& base_path, const ValidationSuite& suite,
                                         int n_threads = 0);

// The text quality is scored on (pinned_text.cc).
const char* PinnedText();

// What ValidateModel holds at its peak, by the serving plan's math: the
// candidate's weights with the larger of its contexts — the largest smoke
// prompt's (engine::GreedyContextOptions, the prompt counted as one token per
// byte plus the template's kSmokeTemplateTokens) or, when a base is given,
// the quality comparison's (engine::QualityContextOptions) — and the base's
// weights with a quality context too. A context is its KV and
// compute scratch as llama.cpp's dry run sizes them (estimated from the
// shapes if it fails), its logits rows, and the runtime allowance
// (engine::EstimateOverheadBytes). Conservative: the base's weights are
// counted although a serving box has them mapped already. Errors: as
// engine::ReadModelInfo.
StatusOr<uint64_t> EstimateValidationBytes(const std::string& candidate_path,
                                           const std::string& base_path,
                                           const ValidationSuite& suite = {});
// Tokens a chat template may add around a smoke prompt (role markers, a
// default system message), counted in its context.
inline constexpr int32_t kSmokeTemplateTokens = 256;

class ModelStore;
class MemoryLedger;

struct ValidateRequest {
  std::string ref;      // NAME:VERSION, verified
  std::string against;  // "" = the active version of NAME (none: no quality check)
  ValidationSuite suite;
  int n_threads = 0;
  // A serving box: the validation's peak is reserved in the live ledger for
  // its duration, and refused (ResourceExhausted naming both figures) when
  // it does not fit beside what is loaded. Null: not checked (the CLI).
  MemoryLedger* ledger = nullptr;
};

// Validates a stored version and records the report with it
// (ModelStore::MarkValidated; a model that does not load is recorded as a
// failed report). Returns the report as JSON (with "against" and, when a
// ledger was given, "reserved_bytes"). Errors: NotFound (no such version),
// InvalidArgument (not verified), ResourceExhausted (does not fit), the
// load's error.
StatusOr<nlohmann::json> ValidateVersion(ModelStore* store, const ValidateRequest& request);

}  // namespace outpost::models
