// BatchStore — the Batch API's state in one SQLite file (WAL,
// synchronous=FULL): uploaded and generated files with their bytes, batches,
// and every batch's lines with their results.
//
// Durability is the contract the runner builds on: RecordLine() returns only
// once the line's result is on disk, so after a crash or kill -9 a line is
// either done (and never run again) or pending (and run again); Finalize()
// writes a batch's output and error files and its final status in one
// transaction, and drops its lines (their answers are in the files; the
// batch keeps their counts and usage). Every read and write of a file or batch names its owner, and
// another owner's ids are NotFound: tenants never see each other's data.
//
// Thread-safety: all methods lock one mutex; safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "outpost/batch/batch_types.h"
#include "outpost/util/sqlite.h"
#include "outpost/util/status.h"
#include "outpost/util/thread_annotations.h"

namespace outpost::batch {

struct FileQuery {
  std::string purpose;  // "" = any
  std::string after;    // a file id: the page after it
  int64_t limit = 10000;
  bool ascending = false;  // by creation
};

struct Page {
  bool has_more = false;
};

class BatchStore {
 public:
  // One process at a time: the store holds an exclusive lock on
  // `path`.lock while open. Errors: Unavailable naming the path (and, when
  // another process holds it, saying so).
  static StatusOr<std::unique_ptr<BatchStore>> Open(const std::string& path);
  ~BatchStore();

  // --- files -------------------------------------------------------------
  // Stores the bytes under f.id (which the caller made unique).
  Status AddFile(const FileObject& f, const std::string& content);
  // NotFound (param "file_id") for an unknown id or another owner's.
  StatusOr<FileObject> GetFile(const std::string& owner, const std::string& id);
  StatusOr<std::string> FileContent(const std::string& owner, const std::string& id);
  std::vector<FileObject> ListFiles(const std::string& owner, const FileQuery& q, Page* page);
  Status DeleteFile(const std::string& owner, const std::string& id);
  // Deletes files whose expires_at has passed; returns how many.
  int64_t DeleteExpiredFiles(int64_t now);

  // --- batches -----------------------------------------------------------
  // The batch and its lines in one transaction.
  Status CreateBatch(const BatchObject& b, const std::vector<BatchLine>& lines);
  // With its request counts and usage. NotFound (param "batch_id") as for
  // files.
  StatusOr<BatchObject> GetBatch(const std::string& owner, const std::string& id);
  // Newest first; `after` a batch id.
  std::vector<BatchObject> ListBatches(const std::string& owner, const std::string& after,
                                       int64_t limit, Page* page);
  // Batches the runner still has work on (in_progress, finalizing,
  // cancelling), oldest first.
  std::vector<BatchObject> Unfinished();
  // in_progress → cancelling (stamping cancelling_at). Returns the batch;
  // InvalidArgument when it already ended.
  StatusOr<BatchObject> Cancel(const std::string& owner, const std::string& id, int64_t now);
  // in_progress → finalizing (stamping finalizing_at).
  Status MarkFinalizing(const std::string& id, int64_t now);

  // --- lines -------------------------------------------------------------
  // Up to `limit` lines not yet run, in order_key order, skipping `skip`.
  std::vector<BatchLine> PendingLines(const std::string& batch_id, int64_t limit,
                                      const std::set<int64_t>& skip);
  // Durable before it returns. A line already done keeps its first result.
  // A 200 answer naming a model sets the batch's model when it has none.
  Status RecordLine(const std::string& batch_id, int64_t index, const LineResult& r,
                    const std::string& result_id);
  // One transaction: lines not yet run become `unrun` (an error code such as
  // batch_expired, or "" to leave them out), the output file (lines answered
  // 200) and the error file (the others) are written when not empty — owned
  // by the batch's owner, purpose "batch_output", named from `file_ids`,
  // expiring the batch's output_expires_after seconds after `at` (if set) —
  // and the batch takes its final status and stamp.
  struct Final {
    BatchStatus status = BatchStatus::kCompleted;
    int64_t at = 0;
    std::string unrun_code;     // "" or "batch_expired"
    std::string unrun_message;  // its message
    std::string output_file_id;
    std::string error_file_id;
    std::string unrun_result_prefix = "batch_req_";  // ids of unrun lines: prefix + index
  };
  Status Finalize(const std::string& batch_id, const Final& f);

 private:
  explicit BatchStore(std::unique_ptr<util::SqliteDb> db) : db_(std::move(db)) {}
  // Fills b's request counts (but total) and usage from its lines.
  void CountLinesLocked(BatchObject* b) OUTPOST_REQUIRES(mu_);
  std::string OutputLinesLocked(const std::string& batch_id, bool ok) OUTPOST_REQUIRES(mu_);

  std::mutex mu_;
  std::unique_ptr<util::SqliteDb> db_ OUTPOST_GUARDED_BY(mu_);
};

}  // namespace outpost::batch
