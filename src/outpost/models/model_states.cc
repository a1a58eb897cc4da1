// ModelStore: the lifecycle states of versions (see model_store.h).
#include <sqlite3.h>

#include <ctime>
#include <fstream>

#include "outpost/models/model_store.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {

StatusOr<ModelVersion> ModelStore::MarkActive(const std::string& ref) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  if (!v.verified_file()) {
    return Status::InvalidArgument(
        ref + " cannot be activated: it is " + v.state +
            (v.error.empty() ? "" : " (" + v.error + ")") +
            "; only a verified version can serve (outpost model verify " + ref + ")",
        "model");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (v.state == "active") return v;
  OUTPOST_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE"));
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  auto step = [&](const char* sql, bool with_time) {
    sqlite3_stmt* st = nullptr;
    sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
    int i = 1;
    if (with_time) sqlite3_bind_int64(st, i++, now);
    sqlite3_bind_text(st, i++, v.name.c_str(), -1, SQLITE_TRANSIENT);
    if (with_time) sqlite3_bind_text(st, i++, v.version.c_str(), -1, SQLITE_TRANSIENT);
    const int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE;
  };
  const bool ok =
      step("UPDATE versions SET state = 'standby' WHERE name = ? AND state = 'active'", false) &&
      step(
          "UPDATE versions SET state = 'active', error = '', activated = ? WHERE name = ? AND "
          "version = ?",
          true);
  if (!ok) {
    const std::string why = sqlite3_errmsg(db_);
    Exec("ROLLBACK");
    return Status::Internal("model store: activating " + ref + ": " + why);
  }
  OUTPOST_RETURN_IF_ERROR(Exec("COMMIT"));
  v.state = "active";
  v.error.clear();
  v.activated_unix = now;
  return v;
}

Status ModelStore::MarkFailed(const std::string& ref, const std::string& reason) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  std::lock_guard<std::mutex> lock(mu_);
  return SetState(v.name, v.version, "failed", reason);
}

Status ModelStore::MarkValidated(const std::string& ref, const std::string& report_json,
                                 bool passed) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  std::lock_guard<std::mutex> lock(mu_);
  const bool promote = passed && v.state == "verified";
  return SetText(v,
                 promote ? "UPDATE versions SET validation = ?, state = 'validated' WHERE "
                           "name = ? AND version = ?"
                         : "UPDATE versions SET validation = ? WHERE name = ? AND version = ?",
                 report_json);
}

Status ModelStore::KeepSignature(const std::string& ref, const std::string& bytes) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  if (bytes.size() > (1u << 20)) {
    return Status::InvalidArgument("the signature of " + ref + " is over 1 MiB", "signature");
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::string digest;
  OUTPOST_ASSIGN_OR_RETURN(digest, PutBlob(bytes));
  return SetText(v, "UPDATE versions SET signature_blob = ? WHERE name = ? AND version = ?",
                 digest);
}

StatusOr<std::string> ModelStore::SignatureBytes(const std::string& ref) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  if (v.signature_blob.empty()) return std::string();
  std::ifstream in(BlobPath(v.signature_blob), std::ios::binary);
  if (!in) return Status::Internal("the kept signature of " + ref + " is missing from the store");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Status ModelStore::MarkSigned(const std::string& ref, const std::string& signature) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  std::lock_guard<std::mutex> lock(mu_);
  return SetText(v, "UPDATE versions SET signature = ? WHERE name = ? AND version = ?", signature);
}

Status ModelStore::SetText(const ModelVersion& v, const char* sql, const std::string& value) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, sql, -1, &st, nullptr);
  sqlite3_bind_text(st, 1, value.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, v.name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, v.version.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    return Status::Internal("model store: " + std::string(sqlite3_errmsg(db_)));
  }
  return Status::Ok();
}

Status ModelStore::MarkRetired(const std::string& ref, const std::string& reason) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  std::lock_guard<std::mutex> lock(mu_);
  return SetState(v.name, v.version, "retired", reason);
}

Status ModelStore::MarkCanary(const std::string& ref) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  if (!v.verified_file() || v.state == "active") {
    return Status::InvalidArgument(ref + " cannot be a canary: it is " + v.state, "model");
  }
  std::lock_guard<std::mutex> lock(mu_);
  return SetState(v.name, v.version, "canary", "");
}

int ModelStore::ResetCanaries(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_,
                     "UPDATE versions SET state = 'verified', error = 'canary interrupted by a "
                     "restart' WHERE name = ? AND state = 'canary'",
                     -1, &st, nullptr);
  sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_step(st);
  sqlite3_finalize(st);
  return sqlite3_changes(db_);
}

StatusOr<ModelVersion> ModelStore::ActiveOf(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rows = Query("WHERE name = ? AND state = 'active'", {name});
  if (rows.empty()) {
    return Status::NotFound("no active version of '" + name + "' in the store " + dir_ +
                                " (outpost model activate " + name + ":VERSION)",
                            "model");
  }
  return rows.front();
}

StatusOr<ModelVersion> ModelStore::PreviousOf(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto rows = Query(
      "WHERE name = ? AND state = 'standby' AND activated > 0 ORDER BY activated DESC, version "
      "DESC LIMIT 1",
      {name});
  if (rows.empty()) {
    return Status::NotFound(
        "nothing to roll '" + name + "' back to: no version of it was active before this one",
        "model");
  }
  return rows.front();
}

}  // namespace outpost::models
