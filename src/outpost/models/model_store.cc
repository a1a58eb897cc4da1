#include "outpost/models/model_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "outpost/engine/model_info.h"
#include "outpost/models/store_layout.h"
#include "outpost/util/file_io.h"
#include "outpost/util/random.h"
#include "outpost/util/sha256.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {
namespace {

using layout::kArtifactType;
using layout::kConfigType;
using layout::kManifestType;
using layout::kRefAnnotation;
using layout::kWeightType;

namespace fs = std::filesystem;
using nlohmann::json;

// Copies `from` to `to` (or only hashes when `to` is empty), fsyncs, returns
// "sha256:<hex>". Errors name the file.
StatusOr<std::string> CopyHashing(const std::string& from, const std::string& to, uint64_t total,
                                  const ModelStore::Progress& progress) {
  const int in = open(from.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return Status::NotFound("cannot read " + from);
  int out = -1;
  if (!to.empty()) {
    out = open(to.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0) {
      close(in);
      return Status::InvalidArgument("cannot write " + to);
    }
  }
  util::Sha256Stream hash;
  std::vector<char> buf(1 << 20);
  uint64_t done = 0, last_report = 0;
  Status st = Status::Ok();
  for (;;) {
    const ssize_t n = read(in, buf.data(), buf.size());
    if (n < 0) {
      st = Status::InvalidArgument("reading " + from + " failed");
      break;
    }
    if (n == 0) break;
    hash.Update(buf.data(), static_cast<size_t>(n));
    if (out >= 0) {
      for (ssize_t off = 0; off < n;) {
        const ssize_t w = write(out, buf.data() + off, static_cast<size_t>(n - off));
        if (w <= 0) {
          st = Status::ResourceExhausted("writing " + to + " failed (disk full?)");
          break;
        }
        off += w;
      }
      if (!st.ok()) break;
    }
    done += static_cast<uint64_t>(n);
    if (progress && done - last_report >= (16u << 20)) {
      progress(done, total);
      last_report = done;
    }
  }
  close(in);
  if (out >= 0) {
    if (st.ok() && fsync(out) != 0) st = Status::ResourceExhausted("fsync " + to + " failed");
    close(out);
  }
  if (progress) progress(done, total);
  if (!st.ok()) return st;
  return "sha256:" + hash.Finish();
}

// The shards column: digests separated by spaces ("" for a single file).
std::vector<std::string> SplitDigests(const std::string& column) {
  std::vector<std::string> out;
  for (size_t at = 0; at < column.size();) {
    size_t end = column.find(' ', at);
    if (end == std::string::npos) end = column.size();
    if (end > at) out.push_back(column.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

ModelVersion RowToVersion(sqlite3_stmt* st) {
  auto text = [&](int c) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
    return p == nullptr ? std::string() : std::string(p);
  };
  ModelVersion v;
  v.name = text(0);
  v.version = text(1);
  v.state = text(2);
  v.error = text(3);
  v.source = text(4);
  v.manifest_digest = text(5);
  v.blob_digest = text(6);
  v.size = static_cast<uint64_t>(sqlite3_column_int64(st, 7));
  v.architecture = text(8);
  v.quantization = text(9);
  v.n_params = static_cast<uint64_t>(sqlite3_column_int64(st, 10));
  v.created_unix = sqlite3_column_int64(st, 11);
  v.activated_unix = sqlite3_column_int64(st, 12);
  v.signature = text(13);
  v.validation = text(14);
  v.signature_blob = text(15);
  v.shards = SplitDigests(text(16));
  if (!v.validation.empty()) {
    const auto j = nlohmann::json::parse(v.validation, nullptr, false);
    v.validation_failed = !j.is_object() || !j.value("passed", false);
  }
  return v;
}

constexpr const char* kSelect =
    "SELECT name, version, state, error, source, manifest_digest, blob_digest, size, "
    "architecture, quantization, n_params, created, activated, signature, validation, "
    "signature_blob, shards FROM versions";

// A shard's name in splits/: llama.cpp's PREFIX-0000i-of-0000N.gguf.
std::string ShardName(size_t i, size_t n) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.gguf", i + 1, n);
  return name;
}

}  // namespace

Status ParseModelRef(const std::string& ref, std::string* name, std::string* version) {
  const size_t colon = ref.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == ref.size()) {
    return Status::InvalidArgument("model reference '" + ref + "' must be NAME:VERSION", "ref");
  }
  *name = ref.substr(0, colon);
  *version = ref.substr(colon + 1);
  if (!layout::IsRepositoryName(*name)) {
    return Status::InvalidArgument("model name '" + *name +
                                       "' must be lowercase letters and digits, separated by "
                                       "'.', '_', '-' or '/'",
                                   "ref");
  }
  if (!layout::IsTag(*version)) {
    return Status::InvalidArgument("model version '" + *version +
                                       "' must be letters, digits, '.', '_' or '-' (at most 128, "
                                       "not starting with '.' or '-')",
                                   "ref");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<ModelStore>> ModelStore::Open(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(fs::path(dir) / "blobs" / "sha256", ec);
  if (ec) return Status::InvalidArgument("model store " + dir + ": " + ec.message(), "store");
  const int lock_fd = open((dir + "/.lock").c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    return Status::InvalidArgument("model store " + dir + ": cannot write there", "store");
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    close(lock_fd);
    return Status::InvalidArgument(
        "model store " + dir +
            ": another process is using it (one admin operation at a time; a running outpost "
            "serve holds its store: ask it with --server http://HOST:PORT)",
        "store");
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2((dir + "/store.db").c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                      nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    close(lock_fd);
    return Status::InvalidArgument("model store " + dir + ": cannot open store.db", "store");
  }
  std::unique_ptr<ModelStore> s(new ModelStore(dir, db, lock_fd));
  std::lock_guard<std::mutex> lock(s->mu_);
  for (const char* sql :
       {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=FULL",
        "CREATE TABLE IF NOT EXISTS versions(name TEXT NOT NULL, version TEXT NOT NULL, state TEXT "
        "NOT NULL, error TEXT NOT NULL DEFAULT '', source TEXT NOT NULL DEFAULT '', "
        "manifest_digest TEXT NOT NULL DEFAULT '', blob_digest TEXT NOT NULL DEFAULT '', size "
        "INTEGER NOT NULL DEFAULT 0, architecture TEXT NOT NULL DEFAULT '', quantization TEXT NOT "
        "NULL DEFAULT '', n_params INTEGER NOT NULL DEFAULT 0, created INTEGER NOT NULL DEFAULT 0, "
        "activated INTEGER NOT NULL DEFAULT 0, PRIMARY KEY(name, version))"}) {
    if (Status st = s->Exec(sql); !st.ok()) {
      return Status::InvalidArgument("model store " + dir + ": " + st.message(), "store");
    }
  }
  // A store made before versions were activated (or signed) lacks the
  // column ("duplicate column" on a current one is expected and ignored).
  s->Exec("ALTER TABLE versions ADD COLUMN activated INTEGER NOT NULL DEFAULT 0");
  s->Exec("ALTER TABLE versions ADD COLUMN signature TEXT NOT NULL DEFAULT ''");
  s->Exec("ALTER TABLE versions ADD COLUMN validation TEXT NOT NULL DEFAULT ''");
  s->Exec("ALTER TABLE versions ADD COLUMN signature_blob TEXT NOT NULL DEFAULT ''");
  s->Exec("ALTER TABLE versions ADD COLUMN shards TEXT NOT NULL DEFAULT ''");
  if (!fs::exists(dir + "/oci-layout")) {
    (void)util::WriteFileAtomically(dir + "/oci-layout", R"({"imageLayoutVersion":"1.0.0"})");
  }
  s->Recover();
  return s;
}

ModelStore::ModelStore(std::string dir, sqlite3* db, int lock_fd)
    : dir_(std::move(dir)), db_(db), lock_fd_(lock_fd) {}

ModelStore::~ModelStore() {
  sqlite3_close(db_);
  close(lock_fd_);
}

Status ModelStore::Exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) == SQLITE_OK) return Status::Ok();
  std::string msg = err != nullptr ? err : "sqlite error";
  sqlite3_free(err);
  return Status::Internal(msg);
}

void ModelStore::Recover() {
  // A version caught mid-fetch by a crash: failed, its partial file gone.
  Exec(
      "UPDATE versions SET state = 'failed', error = 'interrupted (the process stopped while "
      "fetching); import it again' WHERE state = 'fetching'");
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(dir_) / "blobs" / "sha256", ec)) {
    // (.resume-* files stay: a pull picks up from them.)
    if (e.path().filename().string().rfind(".partial-", 0) == 0) fs::remove(e.path(), ec);
  }
  WriteIndex();
}

std::vector<ModelVersion> ModelStore::Query(const std::string& where,
                                            const std::vector<std::string>& args) {
  std::vector<ModelVersion> out;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, (std::string(kSelect) + " " + where).c_str(), -1, &st, nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    sqlite3_bind_text(st, static_cast<int>(i + 1), args[i].c_str(), -1, SQLITE_TRANSIENT);
  }
  while (sqlite3_step(st) == SQLITE_ROW) out.push_back(RowToVersion(st));
  sqlite3_finalize(st);
  return out;
}

std::string ModelStore::BlobPath(const std::string& digest) const {
  const std::string hex = digest.rfind("sha256:", 0) == 0 ? digest.substr(7) : digest;
  return dir_ + "/blobs/sha256/" + hex;
}

std::string ModelStore::SplitDir(const std::vector<std::string>& files) const {
  return dir_ + "/splits/" + (files[0].rfind("sha256:", 0) == 0 ? files[0].substr(7) : files[0]);
}

StatusOr<std::string> ModelStore::LinkShards(const std::vector<std::string>& files) {
  const std::string d = SplitDir(files);
  std::error_code ec;
  fs::create_directories(d, ec);
  if (ec) return Status::Internal("cannot create " + d + ": " + ec.message());
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string link = d + "/" + ShardName(i, files.size());
    const std::string target = "../../blobs/sha256/" + files[i].substr(7);
    if (fs::is_symlink(link, ec) && fs::read_symlink(link, ec).string() == target) continue;
    const std::string tmp = link + ".tmp";
    fs::remove(tmp, ec);
    if (symlink(target.c_str(), tmp.c_str()) != 0 || rename(tmp.c_str(), link.c_str()) != 0) {
      return Status::Internal("cannot link " + link + " to " + target);
    }
  }
  return d + "/" + ShardName(0, files.size());
}

std::string ModelStore::ModelPath(const ModelVersion& v) {
  if (v.shards.empty()) return BlobPath(v.blob_digest);
  auto first = LinkShards(v.shards);
  if (first.ok()) return *first;
  spdlog::error("model store: {}", first.status().message());
  return SplitDir(v.shards) + "/" + ShardName(0, v.shards.size());  // the load names it missing
}

StatusOr<std::string> ModelStore::PutBlob(const std::string& bytes) {
  const std::string digest = util::Sha256Digest(bytes);
  const std::string path = BlobPath(digest);
  if (!fs::exists(path)) OUTPOST_RETURN_IF_ERROR(util::WriteFileAtomically(path, bytes));
  return digest;
}

Status ModelStore::SetState(const std::string& name, const std::string& version,
                            const std::string& state, const std::string& error) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "UPDATE versions SET state = ?, error = ? WHERE name = ? AND version = ?",
                     -1, &st, nullptr);
  sqlite3_bind_text(st, 1, state.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, error.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 3, name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 4, version.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? Status::Ok() : Status::Internal(sqlite3_errmsg(db_));
}

Status ModelStore::WriteIndex() {
  json manifests = json::array();
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_,
                     "SELECT name, version, manifest_digest FROM versions WHERE manifest_digest "
                     "!= '' AND state != 'failed' ORDER BY name, version",
                     -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const std::string ref = std::string(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))) +
                            ":" + reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    const std::string digest = reinterpret_cast<const char*>(sqlite3_column_text(st, 2));
    std::error_code ec;
    const auto size = fs::file_size(BlobPath(digest), ec);
    manifests.push_back({{"mediaType", kManifestType},
                         {"artifactType", kArtifactType},
                         {"digest", digest},
                         {"size", ec ? 0 : size},
                         {"annotations", {{kRefAnnotation, ref}}}});
  }
  sqlite3_finalize(st);
  const json index = {{"schemaVersion", 2},
                      {"mediaType", "application/vnd.oci.image.index.v1+json"},
                      {"manifests", manifests}};
  return util::WriteFileAtomically(dir_ + "/index.json", index.dump(2) + "\n");
}

Status ModelStore::Begin(const std::string& name, const std::string& version,
                         const std::string& source, uint64_t size) {
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, "SELECT state FROM versions WHERE name = ? AND version = ?", -1, &st,
                     nullptr);
  sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, version.c_str(), -1, SQLITE_TRANSIENT);
  const bool exists = sqlite3_step(st) == SQLITE_ROW;
  const std::string state = exists ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "";
  sqlite3_finalize(st);
  if (exists && state != "failed") {
    return Status::InvalidArgument(name + ":" + version + " is already in the store (" + state +
                                       "); remove it first or choose another version",
                                   "ref");
  }
  sqlite3_stmt* ins = nullptr;
  sqlite3_prepare_v2(db_,
                     "INSERT OR REPLACE INTO versions(name, version, state, source, size, created) "
                     "VALUES(?, ?, 'fetching', ?, ?, ?)",
                     -1, &ins, nullptr);
  sqlite3_bind_text(ins, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(ins, 2, version.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(ins, 3, source.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(ins, 4, static_cast<sqlite3_int64>(size));
  sqlite3_bind_int64(ins, 5, static_cast<sqlite3_int64>(std::time(nullptr)));
  const int rc = sqlite3_step(ins);
  sqlite3_finalize(ins);
  return rc == SQLITE_DONE ? Status::Ok() : Status::Internal(sqlite3_errmsg(db_));
}

StatusOr<ModelVersion> ModelStore::Finish(const std::string& name, const std::string& version,
                                          const std::vector<std::string>& files, uint64_t size,
                                          const std::string& given_manifest) {
  SetState(name, version, "fetched", "");
  auto fail = [&](Status st) -> StatusOr<ModelVersion> {
    SetState(name, version, "failed", st.message());
    return st;
  };
  const std::string& blob_digest = files[0];
  const bool split = files.size() > 1;
  // The GGUF check before anything loads it (a split model's: every shard,
  // found by llama.cpp's names, and as many as were given).
  std::string path = BlobPath(blob_digest);
  if (split) {
    auto first = LinkShards(files);
    if (!first.ok()) return fail(first.status());
    path = *first;
  }
  auto info = engine::ReadModelInfo(path);
  if (!info.ok()) {
    return fail(Status::InvalidArgument(
        "the model file is not a usable GGUF: " + info.status().message(), "model"));
  }
  const size_t found = info->shards.empty() ? 1 : info->shards.size();
  if (found != files.size()) {
    return fail(Status::InvalidArgument("the model is " + std::to_string(found) +
                                            " GGUF file(s) by its own split.count, but " +
                                            std::to_string(files.size()) + " were given",
                                        "model"));
  }
  std::string manifest_digest = given_manifest;
  if (manifest_digest.empty()) {
    const json config = {{"descriptor", {{"name", name}, {"version", version}}},
                         {"config",
                          {{"format", "gguf"},
                           {"architecture", info->architecture},
                           {"paramSize", std::to_string(info->n_params)},
                           {"quantization", info->file_type}}},
                         {"modelfs", {{"type", "layers"}, {"diffIds", files}}}};
    const std::string config_text = config.dump();
    auto config_digest = PutBlob(config_text);
    if (!config_digest.ok()) return fail(config_digest.status());
    json manifest = {
        {"schemaVersion", 2},
        {"mediaType", kManifestType},
        {"artifactType", kArtifactType},
        {"config",
         {{"mediaType", kConfigType}, {"digest", *config_digest}, {"size", config_text.size()}}},
        {"layers", json::array()}};
    std::error_code ec;
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string title = split ? ShardName(i, files.size()) : "model.gguf";
      manifest["layers"].push_back(
          {{"mediaType", kWeightType},
           {"digest", files[i]},
           {"size", split ? static_cast<uint64_t>(fs::file_size(BlobPath(files[i]), ec)) : size},
           {"annotations",
            {{"org.cncf.model.filepath", title}, {"org.opencontainers.image.title", title}}}});
    }
    auto m = PutBlob(manifest.dump());
    if (!m.ok()) return fail(m.status());
    manifest_digest = *m;
  }
  sqlite3_stmt* up = nullptr;
  sqlite3_prepare_v2(db_,
                     "UPDATE versions SET state = 'verified', error = '', manifest_digest = ?, "
                     "blob_digest = ?, size = ?, architecture = ?, quantization = ?, n_params = ?, "
                     "shards = ? WHERE name = ? AND version = ?",
                     -1, &up, nullptr);
  sqlite3_bind_text(up, 1, manifest_digest.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(up, 2, blob_digest.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(up, 3, static_cast<sqlite3_int64>(size));
  sqlite3_bind_text(up, 4, info->architecture.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(up, 5, info->file_type.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(up, 6, static_cast<sqlite3_int64>(info->n_params));
  std::string shards;
  for (size_t i = 0; split && i < files.size(); ++i) shards += (i ? " " : "") + files[i];
  sqlite3_bind_text(up, 7, shards.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(up, 8, name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(up, 9, version.c_str(), -1, SQLITE_TRANSIENT);
  const int rc = sqlite3_step(up);
  sqlite3_finalize(up);
  if (rc != SQLITE_DONE) return fail(Status::Internal(sqlite3_errmsg(db_)));
  OUTPOST_RETURN_IF_ERROR(WriteIndex());
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, (std::string(kSelect) + " WHERE name = ? AND version = ?").c_str(), -1,
                     &st, nullptr);
  sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, version.c_str(), -1, SQLITE_TRANSIENT);
  ModelVersion v;
  if (sqlite3_step(st) == SQLITE_ROW) v = RowToVersion(st);
  sqlite3_finalize(st);
  return v;
}

Status ModelStore::CheckDisk(const std::string& what, uint64_t size) const {
  // Before the first byte: the disk must hold it and 5% more.
  return util::CheckDiskRoom(dir_, size, what);
}

std::string ModelStore::PartialPath() const {
  char tmp_name[64];
  std::snprintf(tmp_name, sizeof tmp_name, ".partial-%016llx",
                static_cast<unsigned long long>(util::RealRandom().Next()));
  return dir_ + "/blobs/sha256/" + tmp_name;
}

Status ModelStore::Commit(const std::string& partial, const std::string& digest) {
  std::error_code ec;
  const std::string blob = BlobPath(digest);
  if (fs::exists(blob)) {
    fs::remove(partial, ec);  // the same bytes are already here (another version)
  } else if (rename(partial.c_str(), blob.c_str()) != 0) {
    fs::remove(partial, ec);
    return Status::Internal("cannot rename into " + blob);
  }
  util::FsyncDir(dir_ + "/blobs/sha256");
  return Status::Ok();
}

StatusOr<ModelVersion> ModelStore::Import(const std::string& path, const std::string& ref,
                                          const std::string& expect_sha256,
                                          const Progress& progress, const std::string& source) {
  std::string name, version;
  OUTPOST_RETURN_IF_ERROR(ParseModelRef(ref, &name, &version));
  if (!expect_sha256.empty() &&
      !layout::IsHex64(expect_sha256.rfind("sha256:", 0) == 0 ? expect_sha256.substr(7)
                                                              : expect_sha256)) {
    return Status::InvalidArgument(
        "--sha256 must be 64 lowercase hex digits (optionally after 'sha256:'), got '" +
            expect_sha256 + "'",
        "sha256");
  }
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || !fs::is_regular_file(path)) return Status::NotFound("no model file at " + path);
  // A split model's first shard: all of them come in. (A file that does
  // not read as GGUF goes the single-file way, which names the problem.)
  auto info = engine::ReadModelInfo(path);
  if (info.ok() && info->shards.size() > 1) {
    if (!expect_sha256.empty()) {
      return Status::InvalidArgument("--sha256 pins one file, and " + path + " is the first of " +
                                         std::to_string(info->shards.size()) +
                                         " shards; import without it",
                                     "sha256");
    }
    return ImportShards(info->shards, name, version, info->file_bytes, progress);
  }
  if (!info.ok() && info.status().code() == StatusCode::kNotFound) return info.status();
  OUTPOST_RETURN_IF_ERROR(CheckDisk(ref, size));
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Begin(name, version, source.empty() ? path : source, size));
  auto fail = [&](Status st) -> StatusOr<ModelVersion> {
    SetState(name, version, "failed", st.message());
    return st;
  };
  const std::string partial = PartialPath();
  auto digest = CopyHashing(path, partial, size, progress);
  if (!digest.ok()) {
    fs::remove(partial, ec);
    return fail(digest.status());
  }
  const std::string want =
      expect_sha256.empty()
          ? ""
          : (expect_sha256.rfind("sha256:", 0) == 0 ? expect_sha256 : "sha256:" + expect_sha256);
  if (!want.empty() && *digest != want) {
    fs::remove(partial, ec);
    return fail(Status::InvalidArgument(
        "digest mismatch for " + path + ": expected " + want + ", the file is " + *digest,
        "sha256"));
  }
  if (Status st = Commit(partial, *digest); !st.ok()) return fail(st);
  return Finish(name, version, {*digest}, size, "");
}

StatusOr<ModelVersion> ModelStore::Adopt(const std::string& path, const std::string& ref,
                                         const std::string& source, const Progress& progress) {
  std::error_code ec;
  auto consumed = [&](Status st) {
    fs::remove(path, ec);
    return st;
  };
  if (!fs::equivalent(fs::path(path).parent_path(), fs::path(dir_) / "blobs" / "sha256", ec)) {
    // Not the store's to consume: left where it is.
    return Status::InvalidArgument(path + " is not in the store's blobs/sha256/; import it instead",
                                   "path");
  }
  std::string name, version;
  if (Status st = ParseModelRef(ref, &name, &version); !st.ok()) return consumed(st);
  const auto size = fs::file_size(path, ec);
  if (ec || !fs::is_regular_file(path)) return Status::NotFound("no model file at " + path);
  std::lock_guard<std::mutex> lock(mu_);
  if (Status st = Begin(name, version, source, size); !st.ok()) return consumed(st);
  auto fail = [&](Status st) -> StatusOr<ModelVersion> {
    SetState(name, version, "failed", st.message());
    return consumed(st);
  };
  auto digest = CopyHashing(path, "", size, progress);
  if (!digest.ok()) return fail(digest.status());
  // Its writer did not fsync it; the blob must survive a crash once recorded.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const bool synced = fd >= 0 && fsync(fd) == 0;
  if (fd >= 0) close(fd);
  if (!synced) return fail(Status::Internal("fsync " + path + " failed"));
  if (Status st = Commit(path, *digest); !st.ok()) return fail(st);
  return Finish(name, version, {*digest}, size, "");
}

StatusOr<ModelVersion> ModelStore::ImportShards(const std::vector<std::string>& paths,
                                                const std::string& name, const std::string& version,
                                                uint64_t total, const Progress& progress) {
  OUTPOST_RETURN_IF_ERROR(CheckDisk(name + ":" + version, total));
  std::lock_guard<std::mutex> lock(mu_);
  OUTPOST_RETURN_IF_ERROR(Begin(name, version, paths[0], total));
  std::vector<std::string> files;
  uint64_t before = 0;
  for (const std::string& path : paths) {
    std::error_code ec;
    const uint64_t size = fs::file_size(path, ec);
    const std::string partial = PartialPath();
    auto digest = CopyHashing(path, partial, size, [&](uint64_t done, uint64_t) {
      if (progress) progress(before + done, total);
    });
    Status st = digest.ok() ? Commit(partial, *digest) : digest.status();
    if (!st.ok()) {
      fs::remove(partial, ec);
      SetState(name, version, "failed", st.message());
      return st;
    }
    files.push_back(*digest);
    before += size;
  }
  return Finish(name, version, files, total, "");
}

std::vector<ModelVersion> ModelStore::List() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ModelVersion> out;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, (std::string(kSelect) + " ORDER BY name, created, version").c_str(), -1,
                     &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) out.push_back(RowToVersion(st));
  sqlite3_finalize(st);
  return out;
}

StatusOr<ModelVersion> ModelStore::Get(const std::string& ref) {
  std::string name, version;
  OUTPOST_RETURN_IF_ERROR(ParseModelRef(ref, &name, &version));
  std::lock_guard<std::mutex> lock(mu_);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_, (std::string(kSelect) + " WHERE name = ? AND version = ?").c_str(), -1,
                     &st, nullptr);
  sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, version.c_str(), -1, SQLITE_TRANSIENT);
  StatusOr<ModelVersion> out = Status::NotFound("no model " + ref + " in the store " + dir_);
  if (sqlite3_step(st) == SQLITE_ROW) out = RowToVersion(st);
  sqlite3_finalize(st);
  return out;
}

Status ModelStore::Verify(const std::string& ref, const Progress& progress) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  if (v.blob_digest.empty()) {
    return Status::InvalidArgument(ref + " has no verified file (" + v.state + ": " + v.error +
                                   ")");
  }
  uint64_t before = 0;
  for (const std::string& want : v.files()) {
    std::string found;
    OUTPOST_ASSIGN_OR_RETURN(found,
                             CopyHashing(BlobPath(want), "", v.size, [&](uint64_t done, uint64_t) {
                               if (progress) progress(before + done, v.size);
                             }));
    if (found != want) {
      std::lock_guard<std::mutex> lock(mu_);
      SetState(v.name, v.version, "failed",
               "the file changed on disk: expected " + want + ", found " + found);
      return Status::InvalidArgument(ref + ": the file changed on disk: expected " + want +
                                     ", found " + found);
    }
    std::error_code ec;
    before += fs::file_size(BlobPath(want), ec);
  }
  auto info = engine::ReadModelInfo(ModelPath(v));
  if (!info.ok()) return Status::InvalidArgument(ref + ": " + info.status().message());
  return Status::Ok();
}

Status ModelStore::Remove(const std::string& ref) {
  ModelVersion v;
  OUTPOST_ASSIGN_OR_RETURN(v, Get(ref));
  if (v.state == "active" || v.state == "canary") {
    return Status::InvalidArgument(ref + " is " + v.state + "; roll back or promote another first");
  }
  std::lock_guard<std::mutex> lock(mu_);
  sqlite3_stmt* del = nullptr;
  sqlite3_prepare_v2(db_, "DELETE FROM versions WHERE name = ? AND version = ?", -1, &del, nullptr);
  sqlite3_bind_text(del, 1, v.name.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(del, 2, v.version.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_step(del);
  sqlite3_finalize(del);
  OUTPOST_RETURN_IF_ERROR(WriteIndex());
  // Blobs no other version names go (the GGUF, its config and manifest, its
  // kept signature).
  std::set<std::string> keep;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db_,
                     "SELECT blob_digest, manifest_digest, signature_blob, shards FROM versions",
                     -1, &st, nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    for (int c = 0; c < 4; ++c) {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st, c));
      for (const std::string& d : SplitDigests(p != nullptr ? p : "")) keep.insert(d);
    }
  }
  sqlite3_finalize(st);
  std::error_code ec;
  for (const std::string& d : v.files()) {
    if (!d.empty() && keep.count(d) == 0) fs::remove(BlobPath(d), ec);
  }
  if (!v.shards.empty() && keep.count(v.shards[0]) == 0) fs::remove_all(SplitDir(v.shards), ec);
  if (!v.signature_blob.empty() && keep.count(v.signature_blob) == 0) {
    fs::remove(BlobPath(v.signature_blob), ec);
  }
  if (!v.manifest_digest.empty() && keep.count(v.manifest_digest) == 0) {
    std::ifstream in(BlobPath(v.manifest_digest));
    const json m = json::parse(in, nullptr, false);
    if (m.is_object() && m.contains("config")) {
      const std::string config = m["config"].value("digest", "");
      bool shared = false;
      for (const auto& d : keep) shared = shared || d == config;
      if (!config.empty() && !shared) fs::remove(BlobPath(config), ec);
    }
    fs::remove(BlobPath(v.manifest_digest), ec);
  }
  return Status::Ok();
}

}  // namespace outpost::models
