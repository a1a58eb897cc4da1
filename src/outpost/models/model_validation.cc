#include "outpost/models/model_validation.h"

#include <regex.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "outpost/engine/context.h"
#include "outpost/engine/kv_layout.h"
#include "outpost/engine/model.h"
#include "outpost/engine/model_info.h"
#include "outpost/engine/quality.h"
#include "outpost/models/memory_ledger.h"
#include "outpost/models/model_store.h"
#include "outpost/util/status_macros.h"
#include "outpost/util/units.h"
#include "outpost/util/yaml_file.h"

namespace outpost::models {
namespace {

using nlohmann::json;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

StatusOr<double> Number(const YAML::Node& n, const std::string& key, double lo, double hi) {
  double v = 0;
  try {
    v = n.as<double>();
  } catch (const YAML::Exception&) {
    return Status::InvalidArgument("'" + key + "' must be a number", key);
  }
  if (!(v >= lo && v <= hi)) {
    return Status::InvalidArgument(
        "'" + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi), key);
  }
  return v;
}

Status OnlyKeys(const YAML::Node& n, const std::string& where,
                const std::vector<std::string>& allowed) {
  if (!n.IsMap()) return Status::InvalidArgument("'" + where + "' must be a mapping", where);
  for (const auto& kv : n) {
    const std::string k = kv.first.as<std::string>();
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      std::string names;
      for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
      const std::string key = where.empty() ? k : where + "." + k;
      return Status::InvalidArgument("unknown key '" + key + "' (allowed: " + names + ")", key);
    }
  }
  return Status::Ok();
}

json Check(const std::string& name, bool passed, const std::string& detail, json figures = {}) {
  json c = {{"name", name}, {"passed", passed}, {"detail", detail}};
  if (!figures.is_null()) c["figures"] = std::move(figures);
  return c;
}

// POSIX extended regular expressions (not std::regex: GCC 12 warns inside
// it under the sanitizer builds). "" on success, else the error.
std::string RegexError(const std::string& pattern) {
  regex_t re;
  const int rc = regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB);
  if (rc == 0) {
    regfree(&re);
    return "";
  }
  char buf[256];
  regerror(rc, &re, buf, sizeof buf);
  return buf;
}

bool RegexMatches(const std::string& pattern, const std::string& text) {
  regex_t re;
  if (regcomp(&re, pattern.c_str(), REG_EXTENDED | REG_NOSUB) != 0) return false;
  const bool m = regexec(&re, text.c_str(), 0, nullptr, 0) == 0;
  regfree(&re);
  return m;
}

std::string Fixed(double v, int digits = 2) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

}  // namespace

StatusOr<ValidationSuite> LoadValidationSuite(const std::string& path) {
  YAML::Node root;
  OUTPOST_ASSIGN_OR_RETURN(root, LoadYamlFile(path, "validation suite", "suite"));
  ValidationSuite s;
  if (root.IsNull()) return s;
  OUTPOST_RETURN_IF_ERROR(OnlyKeys(root, "", {"smoke", "quality", "speed"}));
  if (root["smoke"]) {
    if (!root["smoke"].IsSequence()) {
      return Status::InvalidArgument("'smoke' must be a list of prompts", "smoke");
    }
    s.smoke.clear();
    int i = 0;
    for (const auto& p : root["smoke"]) {
      const std::string where = "smoke[" + std::to_string(i++) + "]";
      OUTPOST_RETURN_IF_ERROR(OnlyKeys(p, where, {"prompt", "expect", "regex", "max_tokens"}));
      ValidationSuite::Smoke sm;
      sm.prompt = p["prompt"] ? p["prompt"].as<std::string>() : "";
      sm.expect = p["expect"] ? p["expect"].as<std::string>() : "";
      sm.regex = p["regex"] ? p["regex"].as<std::string>() : "";
      if (sm.prompt.empty()) {
        return Status::InvalidArgument("'" + where + ".prompt' is required", where + ".prompt");
      }
      if (sm.expect.empty() && sm.regex.empty()) {
        return Status::InvalidArgument("'" + where + "' needs 'expect' or 'regex'", where);
      }
      if (!sm.regex.empty()) {
        if (const std::string e = RegexError(sm.regex); !e.empty()) {
          return Status::InvalidArgument("'" + where + ".regex' is not a valid regex: " + e,
                                         where + ".regex");
        }
      }
      if (p["max_tokens"]) {
        double v = 0;
        OUTPOST_ASSIGN_OR_RETURN(v, Number(p["max_tokens"], where + ".max_tokens", 1, 4096));
        sm.max_tokens = static_cast<int>(v);
      }
      s.smoke.push_back(sm);
    }
  }
  if (const auto q = root["quality"]) {
    OUTPOST_RETURN_IF_ERROR(OnlyKeys(
        q, "quality", {"max_ppl_increase_pct", "max_mean_kl", "min_same_top_pct", "chunks"}));
    if (q["max_ppl_increase_pct"]) {
      OUTPOST_ASSIGN_OR_RETURN(
          s.max_ppl_increase_pct,
          Number(q["max_ppl_increase_pct"], "quality.max_ppl_increase_pct", 0, 1e6));
    }
    if (q["max_mean_kl"]) {
      OUTPOST_ASSIGN_OR_RETURN(s.max_mean_kl,
                               Number(q["max_mean_kl"], "quality.max_mean_kl", 0, 100));
    }
    if (q["min_same_top_pct"]) {
      OUTPOST_ASSIGN_OR_RETURN(s.min_same_top_pct,
                               Number(q["min_same_top_pct"], "quality.min_same_top_pct", 0, 100));
    }
    if (q["chunks"]) {
      double v = 0;
      OUTPOST_ASSIGN_OR_RETURN(v, Number(q["chunks"], "quality.chunks", 1, 64));
      s.chunks = static_cast<int>(v);
    }
  }
  if (const auto sp = root["speed"]) {
    OUTPOST_RETURN_IF_ERROR(
        OnlyKeys(sp, "speed", {"min_decode_tps", "max_ttft_ms", "min_decode_ratio"}));
    if (sp["min_decode_ratio"]) {
      OUTPOST_ASSIGN_OR_RETURN(s.min_decode_ratio,
                               Number(sp["min_decode_ratio"], "speed.min_decode_ratio", 0, 100));
    }
    if (sp["min_decode_tps"]) {
      OUTPOST_ASSIGN_OR_RETURN(s.min_decode_tps,
                               Number(sp["min_decode_tps"], "speed.min_decode_tps", 0, 1e6));
    }
    if (sp["max_ttft_ms"]) {
      OUTPOST_ASSIGN_OR_RETURN(s.max_ttft_ms,
                               Number(sp["max_ttft_ms"], "speed.max_ttft_ms", 0, 1e7));
    }
  }
  return s;
}

namespace {

// One stream's decode speed of both models on this box, measured in turns
// (base, candidate, three times) so that a busy moment slows both; medians.
// A check only when the suite sets speed.min_decode_ratio.
json CompareDecodeSpeed(const engine::Model& base, const engine::Model& cand,
                        const ValidationSuite& suite, int n_threads) {
  std::vector<double> b, c;
  for (int round = 0; round < 3; ++round) {
    for (auto [model, out] : {std::pair{&base, &b}, std::pair{&cand, &c}}) {
      auto tps = engine::DecodeTokensPerSecond(*model, 32, 1, n_threads);
      if (!tps.ok()) return Check("speed.against", false, tps.status().message());
      out->push_back(*tps);
    }
  }
  std::sort(b.begin(), b.end());
  std::sort(c.begin(), c.end());
  const double ratio = c[1] / std::max(1e-9, b[1]);
  const bool checked = suite.min_decode_ratio > 0;
  return Check("speed.against", !checked || ratio >= suite.min_decode_ratio,
               "decode " + Fixed(b[1], 1) + " → " + Fixed(c[1], 1) + " tokens/s (" +
                   Fixed(ratio, 2) + "×, one stream on this box)" +
                   (checked ? ", at least " + Fixed(suite.min_decode_ratio, 2) + "×" : ""),
               {{"decode_tps_base", b[1]}, {"decode_tps_candidate", c[1]}, {"ratio", ratio}});
}

}  // namespace

json ValidationReport::ToJson() const {
  return {{"passed", passed}, {"checks", checks}};
}

StatusOr<ValidationReport> ValidateModel(const std::string& candidate_path,
                                         const std::string& base_path, const ValidationSuite& suite,
                                         int n_threads) {
  ValidationReport r;
  engine::ModelOptions mo;
  mo.path = candidate_path;
  std::unique_ptr<engine::Model> cand;
  OUTPOST_ASSIGN_OR_RETURN(cand, engine::Model::Load(mo));
  r.checks.push_back(Check("load", true, "loaded"));
  double worst_ttft_ms = 0, decode_tps_sum = 0;
  int decode_n = 0;
  for (const auto& sm : suite.smoke) {
    auto a = engine::AnswerGreedily(*cand, sm.prompt, sm.max_tokens, n_threads);
    if (!a.ok()) {
      r.checks.push_back(Check("smoke", false, sm.prompt + ": " + a.status().message()));
      continue;
    }
    bool ok = true;
    if (!sm.expect.empty()) ok = Lower(a->text).find(Lower(sm.expect)) != std::string::npos;
    if (ok && !sm.regex.empty()) ok = RegexMatches(sm.regex, a->text);
    r.checks.push_back(Check(
        "smoke", ok,
        "\"" + sm.prompt + "\" → \"" + a->text + "\"" +
            (ok ? ""
                : " (expected " +
                      (sm.expect.empty() ? "/" + sm.regex + "/" : "\"" + sm.expect + "\"") + ")"),
        {{"ttft_ms", 1000 * a->ttft_s}, {"decode_tps", a->decode_tps}}));
    worst_ttft_ms = std::max(worst_ttft_ms, 1000 * a->ttft_s);
    if (a->decode_tps > 0) {
      decode_tps_sum += a->decode_tps;
      ++decode_n;
    }
  }
  const double decode_tps = decode_n > 0 ? decode_tps_sum / decode_n : 0;
  if (suite.min_decode_tps > 0) {
    r.checks.push_back(Check(
        "speed.decode", decode_tps >= suite.min_decode_tps,
        Fixed(decode_tps, 1) + " tokens/s against a floor of " + Fixed(suite.min_decode_tps, 1),
        {{"decode_tps", decode_tps}}));
  }
  if (suite.max_ttft_ms > 0) {
    r.checks.push_back(
        Check("speed.ttft", worst_ttft_ms <= suite.max_ttft_ms,
              Fixed(worst_ttft_ms, 0) + " ms against a ceiling of " + Fixed(suite.max_ttft_ms, 0),
              {{"ttft_ms", worst_ttft_ms}}));
  }
  if (!base_path.empty()) {
    mo.path = base_path;
    auto base = engine::Model::Load(mo);
    if (!base.ok()) {
      r.checks.push_back(Check("quality", false, "the base version: " + base.status().message()));
    } else {
      engine::QualityOptions qo;
      qo.max_chunks = suite.chunks;
      qo.n_threads = n_threads;
      auto q = engine::CompareQuality(**base, *cand, PinnedText(), qo);
      if (!q.ok()) {
        r.checks.push_back(Check("quality", false, q.status().message()));
      } else {
        const json fig = {{"tokens", q->tokens},
                          {"ppl_base", q->ppl_base},
                          {"ppl_candidate", q->ppl_candidate},
                          {"ppl_change_pct", q->ppl_change_pct},
                          {"mean_kl", q->mean_kl},
                          {"same_top_pct", q->same_top_pct}};
        r.checks.push_back(Check("quality.perplexity",
                                 q->ppl_change_pct <= suite.max_ppl_increase_pct,
                                 "perplexity " + Fixed(q->ppl_base) + " → " +
                                     Fixed(q->ppl_candidate) + " (" + Fixed(q->ppl_change_pct, 1) +
                                     "%, at most +" + Fixed(suite.max_ppl_increase_pct, 1) +
                                     "%) over " + std::to_string(q->tokens) + " tokens",
                                 fig));
        r.checks.push_back(Check(
            "quality.kl", q->mean_kl <= suite.max_mean_kl,
            "mean KL " + Fixed(q->mean_kl, 4) + " (at most " + Fixed(suite.max_mean_kl, 4) + ")"));
        r.checks.push_back(Check("quality.same_top", q->same_top_pct >= suite.min_same_top_pct,
                                 "same top token " + Fixed(q->same_top_pct, 1) + "% (at least " +
                                     Fixed(suite.min_same_top_pct, 1) + "%)"));
      }
      r.checks.push_back(CompareDecodeSpeed(**base, *cand, suite, n_threads));
    }
  }
  r.passed = true;
  for (const auto& c : r.checks) r.passed = r.passed && c["passed"].get<bool>();
  return r;
}

StatusOr<uint64_t> EstimateValidationBytes(const std::string& candidate_path,
                                           const std::string& base_path,
                                           const ValidationSuite& suite) {
  // One context of `path`'s model: KV, compute scratch, logits rows, allowance.
  auto context_bytes = [](const std::string& path, const engine::ModelInfo& info,
                          const engine::ContextOptions& co) {
    uint64_t kv = engine::KvBytesPerToken(info.n_layers, info.n_kv_heads, info.head_dim_k,
                                          info.head_dim_v, engine::KvBytesPerElement(co.kv_type)) *
                  static_cast<uint64_t>(co.ctx_per_session);
    uint64_t compute = 0;  // 0: estimated from the shapes
    if (auto dry = engine::Context::DryRun(path, 0, co); dry.ok()) {
      kv = dry->context_bytes;
      compute = dry->compute_bytes;
    }
    return kv + engine::EstimateOverheadBytes(info, co.batch_size, co.max_outputs,
                                              co.ctx_per_session, compute);
  };
  const engine::ContextOptions quality = engine::QualityContextOptions(engine::QualityOptions{});
  uint64_t total = 0;
  for (const std::string& path : {candidate_path, base_path}) {
    if (path.empty()) continue;
    engine::ModelInfo info;
    OUTPOST_ASSIGN_OR_RETURN(info, engine::ReadModelInfo(path));
    // The quality comparison runs only against a base.
    uint64_t peak = base_path.empty() ? 0 : context_bytes(path, info, quality);
    if (path == candidate_path) {
      // The smoke prompts run first, one context at a time.
      for (const auto& sm : suite.smoke) {
        const int32_t prompt = static_cast<int32_t>(sm.prompt.size()) + kSmokeTemplateTokens;
        peak = std::max(
            peak,
            context_bytes(path, info, engine::GreedyContextOptions(prompt, sm.max_tokens, 0)));
      }
    }
    total += info.weight_bytes + peak;
  }
  return total;
}

StatusOr<nlohmann::json> ValidateVersion(ModelStore* store, const ValidateRequest& request) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, store->Get(request.ref));
  if (!v.verified_file()) {
    return Status::InvalidArgument(
        request.ref + " is " + v.state + "; only a verified version validates", "model");
  }
  std::string base_path, base_ref;
  if (!request.against.empty()) {
    ModelVersion b;
    OUTPOST_ASSIGN_OR_RETURN(b, store->Get(request.against));
    base_ref = b.ref();
    base_path = store->ModelPath(b);
  } else if (auto a = store->ActiveOf(v.name); a.ok() && a->version != v.version) {
    base_ref = a->ref();
    base_path = store->ModelPath(*a);
  }
  const std::string path = store->ModelPath(v);
  std::unique_ptr<MemoryReservation> reservation;
  uint64_t need = 0;
  if (request.ledger != nullptr) {
    OUTPOST_ASSIGN_OR_RETURN(need, EstimateValidationBytes(path, base_path, request.suite));
    auto r = request.ledger->Reserve("validation of " + request.ref, need);
    if (!r.ok()) {
      return Status::ResourceExhausted(
          "validating " + request.ref + (base_ref.empty() ? "" : " against " + base_ref) +
          " needs " + util::FormatBytes(need) + " (the planner's estimate), and " +
          util::FormatBytes(request.ledger->available()) + " of the budget " +
          util::FormatBytes(request.ledger->budget()) +
          " is free beside what is loaded; validate on a box with room, or with "
          "`outpost model validate` while the server is stopped");
    }
    reservation = std::move(r).value();
  }
  spdlog::info("validating {}{}", request.ref,
               base_ref.empty() ? " (no version to compare with: quality not checked)"
                                : " against " + base_ref);
  auto report = ValidateModel(path, base_path, request.suite, request.n_threads);
  if (!report.ok()) {
    ValidationReport failed;
    failed.checks.push_back(
        {{"name", "load"}, {"passed", false}, {"detail", report.status().message()}});
    (void)store->MarkValidated(request.ref, failed.ToJson().dump(), false);
    return report.status();
  }
  nlohmann::json j = report->ToJson();
  j["against"] = base_ref;
  if (request.ledger != nullptr) j["reserved_bytes"] = need;
  OUTPOST_RETURN_IF_ERROR(store->MarkValidated(request.ref, j.dump(), report->passed));
  return j;
}

}  // namespace outpost::models
