// ModelStore — the box's models on disk: a content-addressed store laid out
// as an OCI image layout, with each version's lifecycle state in SQLite.
//
// Layout (<dir> = <state_dir>/models):
//   oci-layout                 {"imageLayoutVersion": "1.0.0"}
//   index.json                 one manifest per version, named by the
//                              annotation org.opencontainers.image.ref.name =
//                              "<name>:<version>" (skopeo: oci:<dir>:<name>:<version>)
//   blobs/sha256/<hex>         the GGUF (a raw layer: its digest is the
//                              file's sha256), the config, the manifest
//   splits/<hex>/model-0000i-of-0000N.gguf
//                              a split model's shards under the names
//                              llama.cpp finds them by (symlinks to the
//                              blobs; <hex> = the first shard's digest)
//   store.db                   versions and their states (WAL, synchronous=FULL)
// A version is published as a CNCF ModelPack artifact: artifactType
// application/vnd.cncf.model.manifest.v1+json, config
// application/vnd.cncf.model.config.v1+json, one layer
// application/vnd.cncf.model.weight.v1.raw titled model.gguf — or, for a
// model split by llama.cpp's gguf-split, one such layer per shard in order,
// titled model-0000i-of-0000N.gguf.
//
// States: fetching → fetched → verified (→ validated → standby → canary →
// active → retired: the lifecycle steps that follow), or failed with the
// reason. Crash safety: a blob is written to blobs/sha256/.partial-*,
// fsync'ed and renamed to its digest only after the hash is known;
// index.json is replaced by rename; each state change is one transaction. On
// Open, a version caught in "fetching" is marked failed ("interrupted") and
// its partial file removed, so the store is consistent after a kill -9 at any
// step.
//
// Thread-safety: internally synchronised; one process per store (a lock on
// <dir>/.lock).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "outpost/models/blob_source.h"
#include "outpost/util/daily_window.h"
#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

struct sqlite3;

namespace outpost::models {

struct ModelVersion {
  std::string name;
  std::string version;
  std::string state;            // fetching | fetched | verified | failed | ...
  std::string error;            // why it failed
  std::string source;           // where it came from (a path, a URL)
  std::string manifest_digest;  // "sha256:<hex>" once published
  std::string blob_digest;      // the GGUF's "sha256:<hex>" (a split model's first shard)
  // A model split by gguf-split: every shard's digest, first to last
  // (shards[0] == blob_digest). Empty for a single file.
  std::vector<std::string> shards;
  uint64_t size = 0;  // the GGUF's bytes (all shards')
  std::string architecture, quantization;
  uint64_t n_params = 0;
  int64_t created_unix = 0;
  int64_t activated_unix = 0;      // when it last became active (0: never)
  std::string signature;           // what its signature check found ("" = none made)
  std::string signature_blob;      // "sha256:<hex>" of the signature kept with it ("" = none)
  std::string validation;          // the last validation report, JSON ("" = never validated)
  bool validation_failed = false;  // its verdict: activation then needs --force
  std::string ref() const { return name + ":" + version; }
  // Whether its file is complete and its digest checked (every state but
  // fetching, fetched and failed): only such a version can validate, serve,
  // be a canary or be requantized.
  bool verified_file() const {
    return state != "fetching" && state != "fetched" && state != "failed";
  }
  // The digests of its files: the shards, or the one GGUF.
  std::vector<std::string> files() const {
    return shards.empty() ? std::vector<std::string>{blob_digest} : shards;
  }
};

// "name:version" → its parts. Names: lowercase letters, digits, '.', '_',
// '-' and '/' (an OCI repository name); versions: an OCI tag ([A-Za-z0-9_]
// then [A-Za-z0-9._-], at most 128). Errors name the part and the rule.
Status ParseModelRef(const std::string& ref, std::string* name, std::string* version);

class ModelStore {
 public:
  // Opens or creates the store in `dir`. Errors: InvalidArgument naming the
  // directory (not writable, another process holds it).
  static StatusOr<std::unique_ptr<ModelStore>> Open(const std::string& dir);
  ~ModelStore();

  // Progress of a long step: bytes done of total (total 0: unknown).
  using Progress = std::function<void(uint64_t done, uint64_t total)>;

  // Copies a GGUF file into the store as name:version, hashing as it goes
  // (the first shard of a split model: every shard, found beside it),
  // checks it (GGUF structure, the architecture keys the planner needs; a
  // pinned sha256 when `expect_sha256` is set), publishes it in the OCI
  // layout and leaves it "verified". Errors: InvalidArgument (a bad ref, an
  // existing version, a digest mismatch, not a loadable GGUF: the message
  // names what failed), NotFound (no such file), ResourceExhausted (not
  // enough disk: the free space and what is needed). A failure leaves the
  // version "failed" with the reason, and nothing half-written. A pinned
  // sha256 names one file: a split model is refused with it. `source` is
  // what the version records as where it came from ("" = the path).
  StatusOr<ModelVersion> Import(const std::string& path, const std::string& ref,
                                const std::string& expect_sha256 = "",
                                const Progress& progress = nullptr, const std::string& source = "");

  // As Import, for a single GGUF this process wrote at a PartialPath()
  // (`outpost model requantize`'s output): hashed where it lies, made
  // durable and renamed to its digest rather than copied, so the disk holds
  // its bytes once. The file is consumed whatever the outcome (a file that
  // fails the GGUF check stays as the failed version's blob, as Import's
  // does). InvalidArgument ("path"), the file left alone, when it is not in
  // blobs/sha256/.
  StatusOr<ModelVersion> Adopt(const std::string& path, const std::string& ref,
                               const std::string& source, const Progress& progress = nullptr);

  struct PullOptions {
    uint64_t max_bytes_per_s = 0;  // bandwidth cap (0: none)
    int max_attempts = 8;          // tries in a row without progress before giving up
    int64_t max_backoff_ms = 30'000;
    std::string source;  // what the version records as its source ("" = the URL)
    // Bytes move only inside this daily window (local time): outside it the
    // pull waits, and a download the window's end catches pauses and
    // resumes with a range when it opens again.
    util::DailyWindow window;
    // Asked between chunks and while waiting (backoff, window): true stops
    // the pull with Cancelled, the partial file kept for the next try (the
    // fleet agent's shutdown).
    std::function<bool()> cancelled;
  };
  // Downloads url (http:// or https://) into the store as name:version. The
  // sha256 is required: the bytes are hashed as they arrive, and only a
  // file with that digest is published (fsync'ed, renamed, then checked as
  // Import() does). An interrupted download (a reset, a stall, a truncated
  // body, a killed process) resumes from what it has: the partial file is
  // kept as blobs/sha256/.resume-<hex>, its prefix re-hashed on restart and
  // the rest asked for with Range and If-Range; a server that ignores the
  // range or whose file changed sends it whole, and the pull starts over.
  // Retries back off (1 s doubling, up to max_backoff_ms); max_attempts in a
  // row without a new byte fail it. The disk is checked before the first
  // byte. The store stays usable while the bytes come (its lock is held
  // only to register and to publish); a second pull of the same digest
  // waits for the first and then downloads nothing. Errors: InvalidArgument (a bad URL, ref or
  // digest, an HTTP error, a digest mismatch: the partial file goes), Unavailable (the source
  // stayed unreachable: the partial file stays for the next try),
  // ResourceExhausted (disk).
  StatusOr<ModelVersion> Pull(const std::string& url, const std::string& ref,
                              const std::string& sha256, BlobSource* source,
                              const PullOptions& options, const Progress& progress = nullptr);
  // As Pull, for a model in several files (a registry artifact's shard
  // layers, in order): each downloaded, resumable and checked as Pull's
  // one file, then the version published with them all. `size` (0:
  // unknown) feeds the progress and the disk check.
  struct Layer {
    std::string url, digest;
    uint64_t size = 0;
  };
  StatusOr<ModelVersion> PullLayers(const std::vector<Layer>& layers, const std::string& ref,
                                    BlobSource* source, const PullOptions& options,
                                    const Progress& progress = nullptr);

  // Writes the version as one OCI-layout tar (oci-layout, index.json, its
  // blobs): what `skopeo copy oci-archive:` reads, for air-gapped sites.
  // Errors: NotFound, InvalidArgument (not verified), ResourceExhausted.
  Status Export(const std::string& ref, const std::string& tar_path,
                const Progress& progress = nullptr);
  // Takes a version from such a tar (Export's, or skopeo's oci-archive):
  // every blob is hashed against its name, the manifest is a ModelPack (or
  // Docker Model Runner gguf.v3) artifact with one GGUF layer, the GGUF is
  // checked as Import() does. `ref` names the version; "" = the archive's own
  // name when it has exactly one. The manifest digest is kept.
  StatusOr<ModelVersion> ImportArchive(const std::string& tar_path, const std::string& ref,
                                       const Progress& progress = nullptr);

  std::vector<ModelVersion> List();
  StatusOr<ModelVersion> Get(const std::string& ref);
  // A blob's path in the store.
  std::string BlobPath(const std::string& digest) const;
  // The path to load `v` from: its GGUF blob, or for a split model its first
  // shard under the names llama.cpp finds the others by (made when missing).
  std::string ModelPath(const ModelVersion& v);
  // Re-hashes the blob and checks the GGUF again. Errors: InvalidArgument
  // naming the expected and the found digest, or the GGUF problem.
  Status Verify(const std::string& ref, const Progress& progress = nullptr);
  // Removes the version (and its blobs when no other version uses them).
  // Errors: NotFound; FailedPrecondition-like InvalidArgument for an active
  // or canary version.
  Status Remove(const std::string& ref);

  // Lifecycle states (model_states.cc). Each is one transaction.
  //
  // MarkActive: the version becomes "active" (its activation time noted) and
  // the name's previous active version "standby". Errors: NotFound;
  // InvalidArgument naming the state when the version has no verified file
  // (fetching, fetched, failed).
  StatusOr<ModelVersion> MarkActive(const std::string& ref);
  // MarkRetired: "retired" with the reason (rolled back, replaced). Errors:
  // NotFound.
  Status MarkRetired(const std::string& ref, const std::string& reason);
  // MarkFailed: "failed" with the reason (a refused signature). Errors:
  // NotFound.
  Status MarkFailed(const std::string& ref, const std::string& reason);
  // Notes what the signature check found (shown by list/show). Errors:
  // NotFound.
  Status MarkSigned(const std::string& ref, const std::string& signature);
  // Keeps the signature's bytes (a DSSE envelope or a Sigstore bundle) with
  // the version, as a blob: Export carries it as an OCI referrer of the
  // model's manifest, and an activation checks it again. Errors: NotFound,
  // InvalidArgument (over 1 MiB).
  Status KeepSignature(const std::string& ref, const std::string& bytes);
  // The kept signature's bytes; "" when none is kept.
  StatusOr<std::string> SignatureBytes(const std::string& ref);
  // MarkValidated: keeps the validation report (JSON); a passing report
  // moves a "verified" version to "validated". Errors: NotFound.
  Status MarkValidated(const std::string& ref, const std::string& report_json, bool passed);
  // MarkCanary: "canary" (a share of traffic, being compared). Errors:
  // NotFound; InvalidArgument as MarkActive.
  Status MarkCanary(const std::string& ref);
  // A canary of `name` that a restart interrupted goes back to "verified",
  // with a note. Returns how many.
  int ResetCanaries(const std::string& name);
  // The name's active version. Errors: NotFound.
  StatusOr<ModelVersion> ActiveOf(const std::string& name);
  // What a rollback of `name` returns to: the standby version that was
  // active most recently. Errors: NotFound (nothing to roll back to).
  StatusOr<ModelVersion> PreviousOf(const std::string& name);

  const std::string& dir() const { return dir_; }
  // blobs/sha256/.partial-<random>: where a file bound for the store is
  // written (on the blobs' disk, so it renames in). One a crash leaves
  // behind is removed by the next Open.
  std::string PartialPath() const;

 private:
  ModelStore(std::string dir, sqlite3* db, int lock_fd);
  Status Exec(const char* sql) OUTPOST_REQUIRES(mu_);
  // Rows of `SELECT … FROM versions <where>` with `args` bound in order.
  std::vector<ModelVersion> Query(const std::string& where, const std::vector<std::string>& args)
      OUTPOST_REQUIRES(mu_);
  Status SetState(const std::string& name, const std::string& version, const std::string& state,
                  const std::string& error) OUTPOST_REQUIRES(mu_);
  // Runs `sql` ("UPDATE … SET col = ? … WHERE name = ? AND version = ?")
  // with `value` and the version's name and version bound in that order.
  Status SetText(const ModelVersion& v, const char* sql, const std::string& value)
      OUTPOST_REQUIRES(mu_);
  Status WriteIndex() OUTPOST_REQUIRES(mu_);
  StatusOr<std::string> PutBlob(const std::string& bytes) OUTPOST_REQUIRES(mu_);
  void Recover() OUTPOST_REQUIRES(mu_);
  // Registers name:version as fetching (refusing an existing, non-failed one).
  Status Begin(const std::string& name, const std::string& version, const std::string& source,
               uint64_t size) OUTPOST_REQUIRES(mu_);
  // The GGUF check and the row's final fields; publishes the index.
  // `files`: the GGUF's digest, or a split model's shards' in order.
  StatusOr<ModelVersion> Finish(const std::string& name, const std::string& version,
                                const std::vector<std::string>& files, uint64_t size,
                                const std::string& manifest_digest) OUTPOST_REQUIRES(mu_);
  // Downloads one blob (Pull's loop); a blob already here, or brought by
  // another pull meanwhile, is not downloaded again.
  Status FetchBlob(const Layer& layer, const std::string& ref, BlobSource* source,
                   const PullOptions& options, const Progress& progress);
  // splits/<hex>/: the shards' names for llama.cpp (see the layout above).
  std::string SplitDir(const std::vector<std::string>& files) const;
  // Makes (or keeps) those names; returns the first shard's path there.
  StatusOr<std::string> LinkShards(const std::vector<std::string>& files);
  Status CheckDisk(const std::string& what, uint64_t size) const;
  // Import of a split model: `paths` are its shards in order.
  StatusOr<ModelVersion> ImportShards(const std::vector<std::string>& paths,
                                      const std::string& name, const std::string& version,
                                      uint64_t total, const Progress& progress);
  // Renames a fully written, fsync'ed partial file to its digest.
  Status Commit(const std::string& partial, const std::string& digest);

  const std::string dir_;
  sqlite3* const db_;
  const int lock_fd_;
  std::mutex mu_;
  // Digests being downloaded: the store's lock is not held during a
  // download, and a second pull of the same bytes waits for the first.
  std::condition_variable pull_done_;
  std::set<std::string> pulling_ OUTPOST_GUARDED_BY(mu_);
};

}  // namespace outpost::models
