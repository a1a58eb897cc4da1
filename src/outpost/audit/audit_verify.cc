#include "outpost/audit/audit_verify.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "outpost/audit/audit_crypto.h"
#include "outpost/audit/audit_log.h"

namespace outpost::audit {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

std::vector<std::string> AuditFilesIn(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("audit-", 0) == 0 && e.path().extension() == ".jsonl") {
      files.push_back(e.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

VerifyReport VerifyAuditFiles(const std::vector<std::string>& files, const VerifyOptions& options) {
  VerifyReport r;
  std::string pub = options.public_pem;
  if (pub.empty() && !files.empty()) {
    pub = ReadAll(
        (std::filesystem::path(files.front()).parent_path() / "audit-ed25519.pem.pub").string());
  }
  auto fail = [&](const std::string& where, int64_t seq, const std::string& kind,
                  const std::string& detail) {
    r.ok = false;
    r.kind = kind;
    r.error = where + ": seq " + std::to_string(seq) + ": " + kind + ": " + detail;
    return r;
  };
  if (files.empty()) {
    r.ok = false;
    r.kind = "missing";
    r.error = "no audit files";
    return r;
  }
  // Every sequence number present, to tell a reordering from a deletion.
  std::set<int64_t> present;
  for (const auto& f : files) {
    std::istringstream in(ReadAll(f));
    for (std::string line; std::getline(in, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("seq") && j["seq"].is_number_integer()) {
        present.insert(j["seq"].get<int64_t>());
      }
    }
  }
  std::string prev_hash = GenesisHash();
  int64_t prev_seq = 0;
  std::string at_expect;  // the hash of record expect_count, once seen
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const std::string text = ReadAll(files[fi]);
    size_t pos = 0;
    int64_t line_no = 0;
    while (pos < text.size()) {
      ++line_no;
      const std::string where = files[fi] + ":" + std::to_string(line_no);
      size_t nl = text.find('\n', pos);
      const bool torn = nl == std::string::npos;
      const std::string line = text.substr(pos, torn ? std::string::npos : nl - pos);
      pos = torn ? text.size() : nl + 1;
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (torn && fi + 1 == files.size() && (!j.is_object() || !j.contains("hash"))) {
        r.warnings.push_back(where + ": an incomplete last record (" + std::to_string(line.size()) +
                             " bytes; a crash mid-write): the log verifies up to seq " +
                             std::to_string(prev_seq));
        break;
      }
      if (!j.is_object() || !j.contains("seq") || !j.contains("hash") || !j.contains("prev") ||
          !j["seq"].is_number_integer() || !j["hash"].is_string() || !j["prev"].is_string()) {
        return fail(where, prev_seq + 1, "modified", "not a well-formed audit record");
      }
      const int64_t seq = j["seq"].get<int64_t>();
      const std::string hash = j["hash"].get<std::string>();
      const std::string prev = j["prev"].get<std::string>();
      nlohmann::json body = j;
      body.erase("hash");
      if (ChainHash(prev, body.dump()) != hash) {
        return fail(where, seq, "modified", "the hash does not match the record's content");
      }
      if (prev_seq == 0 && seq != 1 && !options.allow_partial) {
        return fail(where, seq, "deleted",
                    "the log starts at seq " + std::to_string(seq) + " (records 1.." +
                        std::to_string(seq - 1) +
                        " are missing; --allow-partial if older files were pruned)");
      }
      const bool first = prev_seq == 0;
      if (!first || !options.allow_partial) {
        if (seq > prev_seq + 1 && present.count(prev_seq + 1) != 0) {
          return fail(where, seq, "inserted/reordered",
                      "seq " + std::to_string(seq) + " comes before seq " +
                          std::to_string(prev_seq + 1) + ", which is later in the log");
        }
        if (seq > prev_seq + 1) {
          return fail(where, seq, "deleted",
                      "seq " + std::to_string(prev_seq + 1) + ".." + std::to_string(seq - 1) +
                          " missing after seq " + std::to_string(prev_seq));
        }
        if (seq <= prev_seq) {
          return fail(where, seq, "inserted/reordered",
                      "seq " + std::to_string(seq) + " after seq " + std::to_string(prev_seq));
        }
        if (prev != prev_hash) {
          return fail(where, seq, "inserted/reordered",
                      "'prev' is not the hash of seq " + std::to_string(prev_seq));
        }
      }
      if (j.value("type", "") == "checkpoint") {
        const int64_t count = j.value("count", int64_t{-1});
        const std::string head = j.value("head", std::string());
        if (count != seq - 1 || head != prev) {
          return fail(where, seq, "signature",
                      "the checkpoint's count/head do not name the record before it");
        }
        if (pub.empty()) {
          r.warnings.push_back(where + ": no public key: checkpoint signature not checked");
        } else if (!VerifySignature(pub, CheckpointMessage(j.value("box", ""), count, head),
                                    j.value("sig", ""))) {
          return fail(where, seq, "signature", "the Ed25519 signature does not verify");
        }
        ++r.checkpoints;
        r.last_checkpoint_seq = seq;
      }
      if (options.expect_count > 0 && seq == options.expect_count) at_expect = hash;
      prev_seq = seq;
      prev_hash = hash;
      ++r.records;
    }
  }
  r.last_seq = prev_seq;
  r.last_hash = prev_hash;
  if (options.expect_count > 0) {
    if (prev_seq < options.expect_count) {
      r.ok = false;
      r.kind = "truncated";
      r.error = files.back() + ": truncated: the log ends at seq " + std::to_string(prev_seq) +
                " but a checkpoint covers " + std::to_string(options.expect_count) + " records";
      return r;
    }
    if (at_expect != options.expect_head) {
      r.ok = false;
      r.kind = "rewritten";
      r.error = "seq " + std::to_string(options.expect_count) + ": rewritten: it has hash " +
                at_expect + ", the checkpoint says " + options.expect_head;
      return r;
    }
  }
  return r;
}

}  // namespace outpost::audit
