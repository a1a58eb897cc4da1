#include "outpost/app/audit_command.h"

#include <cstdio>
#include <ctime>
#include <deque>
#include <fstream>

#include <nlohmann/json.hpp>

#include "outpost/app/config.h"
#include "outpost/audit/audit_verify.h"
#include "outpost/util/units.h"

namespace outpost::app {
namespace {

std::string DefaultDir(const AuditFlags& f) {
  if (!f.dir.empty()) return f.dir;
  ServeConfig cfg;
  return StateDir(cfg) + "/audit";
}

int Verify(const AuditFlags& f) {
  audit::VerifyOptions o;
  o.allow_partial = f.allow_partial;
  if (!f.public_key.empty()) {
    std::ifstream in(f.public_key);
    if (!in) {
      std::fprintf(stderr, "outpost audit verify: --public-key: cannot read %s\n",
                   f.public_key.c_str());
      return 2;
    }
    o.public_pem.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!f.checkpoint.empty()) {
    const size_t colon = f.checkpoint.find(':');
    char* end = nullptr;
    const long long n =
        colon == std::string::npos ? 0 : std::strtoll(f.checkpoint.c_str(), &end, 10);
    if (colon == std::string::npos || n <= 0 || end != f.checkpoint.c_str() + colon ||
        f.checkpoint.size() - colon - 1 != 64) {
      std::fprintf(stderr,
                   "outpost audit verify: --checkpoint must be COUNT:HEAD (a record count and a "
                   "64-digit hash), got '%s'\n",
                   f.checkpoint.c_str());
      return 2;
    }
    o.expect_count = n;
    o.expect_head = f.checkpoint.substr(colon + 1);
  }
  const std::vector<std::string> files =
      f.files.empty() ? audit::AuditFilesIn(DefaultDir(f)) : f.files;
  if (files.empty()) {
    std::fprintf(stderr, "outpost audit verify: no audit files in %s\n", DefaultDir(f).c_str());
    return 2;
  }
  const auto r = audit::VerifyAuditFiles(files, o);
  if (f.json) {
    nlohmann::json j = {{"ok", r.ok},
                        {"records", r.records},
                        {"checkpoints", r.checkpoints},
                        {"last_seq", r.last_seq},
                        {"last_hash", r.last_hash},
                        {"last_checkpoint_seq", r.last_checkpoint_seq},
                        {"warnings", r.warnings}};
    if (!r.ok) {
      j["error"] = r.error;
      j["kind"] = r.kind;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return r.ok ? 0 : 1;
  }
  for (const auto& w : r.warnings) std::printf("warning: %s\n", w.c_str());
  if (!r.ok) {
    std::printf("FAIL: %s\n", r.error.c_str());
    if (r.last_checkpoint_seq > 0) {
      std::printf("last good checkpoint before it: seq %lld\n",
                  static_cast<long long>(r.last_checkpoint_seq));
    }
    return 1;
  }
  std::printf("PASS: %lld record(s) in %zu file(s), %lld signed checkpoint(s); head seq %lld %s\n",
              static_cast<long long>(r.records), files.size(),
              static_cast<long long>(r.checkpoints), static_cast<long long>(r.last_seq),
              r.last_hash.c_str());
  return 0;
}

int Tail(const AuditFlags& f) {
  std::string since_text;
  if (!f.since.empty()) {
    if (f.since.find('T') != std::string::npos) {
      since_text = f.since;  // ISO: compared as text (same format as the records)
    } else {
      auto ms = util::ParseDurationMs(f.since);
      if (!ms.ok()) {
        std::fprintf(stderr,
                     "outpost audit tail: --since must be a duration (10m, 2h) or a time "
                     "(2026-12-01T10:00:00Z), got '%s'\n",
                     f.since.c_str());
        return 2;
      }
      const time_t t = std::time(nullptr) - static_cast<time_t>(*ms / 1000);
      tm utc{};
      gmtime_r(&t, &utc);
      char buf[32];
      strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
      since_text = buf;
    }
  }
  const auto files = audit::AuditFilesIn(DefaultDir(f));
  if (files.empty()) {
    std::fprintf(stderr, "outpost audit tail: no audit files in %s\n", DefaultDir(f).c_str());
    return 2;
  }
  std::deque<nlohmann::json> keep;
  for (const auto& path : files) {
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_object()) continue;
      if (!since_text.empty() && j.value("time", "") < since_text) continue;
      if (!f.tenant.empty() && j.value("tenant", "") != f.tenant) continue;
      if (!f.route.empty() && j.value("route", "") != f.route &&
          j.value("route", "").rfind(f.route + ":", 0) != 0) {
        continue;
      }
      if (!f.type.empty() && j.value("type", "") != f.type) continue;
      keep.push_back(j);
      if (f.lines > 0 && static_cast<int>(keep.size()) > f.lines) keep.pop_front();
    }
  }
  for (const auto& j : keep) {
    if (f.json) {
      std::printf("%s\n", j.dump().c_str());
      continue;
    }
    const std::string type = j.value("type", "");
    std::string what;
    if (type == "request") {
      what = j.value("endpoint", "") + " " + std::to_string(j.value("status", 0)) +
             " route=" + j.value("route", "") + " model=" + j.value("model", "") +
             " tokens=" + std::to_string(j.value("prompt_tokens", 0)) + "+" +
             std::to_string(j.value("completion_tokens", 0));
      if (!j.value("tenant", "").empty()) what += " tenant=" + j.value("tenant", "");
      what += " id=" + j.value("request_id", "");
    } else if (type == "checkpoint") {
      what = "checkpoint of " + std::to_string(j.value("count", 0)) + " record(s), key " +
             j.value("key_id", "");
    } else {
      what = j.value("action", "");
    }
    std::printf("%6lld %s %-10s %s\n", static_cast<long long>(j.value("seq", int64_t{0})),
                j.value("time", "").c_str(), type.c_str(), what.c_str());
  }
  return 0;
}

}  // namespace

CLI::App* AddAuditCommand(CLI::App* app, AuditFlags* f) {
  CLI::App* audit = app->add_subcommand("audit", "check and read the tamper-evident audit log");
  audit->require_subcommand(1);
  f->verify = audit->add_subcommand(
      "verify", "check the hash chain and the signed checkpoints; name the first bad record");
  f->verify->add_option("files", f->files, "audit files, oldest first (default: all in --dir)");
  f->verify->add_option("--dir", f->dir, "the audit directory (default: <state dir>/audit)");
  f->verify->add_option("--public-key", f->public_key,
                        "PEM public key for the checkpoints (default: the .pub beside the files)");
  f->verify->add_option("--checkpoint", f->checkpoint,
                        "COUNT:HEAD from a checkpoint the centre holds: catches a truncated or "
                        "rewritten log");
  f->verify->add_flag("--allow-partial", f->allow_partial,
                      "the first file may start past seq 1 (older files pruned)");
  f->verify->add_flag("--json", f->json, "the result as JSON");
  f->tail = audit->add_subcommand("tail", "print the last records, filtered");
  f->tail->add_option("--dir", f->dir, "the audit directory (default: <state dir>/audit)");
  f->tail->add_option("-n,--lines", f->lines, "records to print (0 = all; default 20)")
      ->check(CLI::Range(0, 1 << 30));
  f->tail->add_option("--since", f->since,
                      "only records after a time (ISO) or this long ago (10m)");
  f->tail->add_option("--tenant", f->tenant, "only this tenant's requests");
  f->tail->add_option("--route", f->route, "only this route: local, peer, central, or peer:NAME");
  f->tail->add_option("--type", f->type, "only request, admin or checkpoint records")
      ->check(CLI::IsMember({"request", "admin", "checkpoint"}));
  f->tail->add_flag("--json", f->json, "JSON lines as stored");
  return audit;
}

int RunAudit(const AuditFlags& f) {
  if (f.verify->parsed()) return Verify(f);
  return Tail(f);
}

}  // namespace outpost::app
