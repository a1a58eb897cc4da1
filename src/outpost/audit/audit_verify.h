// Verifying an audit log (audit_log.h) from its files alone, as
// `outpost audit verify` does: the first bad line, named by file, line and
// sequence number, and what kind of damage it is —
//   modified   a line's hash does not match its content (or it is not JSON)
//   deleted    a sequence number is missing
//   inserted / reordered   a number repeats or goes back, or "prev" does not
//              match the previous line's hash
//   signature  a checkpoint's signature, count or head is wrong
//   truncated  the log ends before a checkpoint the centre holds (--checkpoint)
//   rewritten  the record at such a checkpoint has another hash
// A torn last line (a crash mid-write) is a warning: the log verifies up to
// the last complete record.
//
// Pure function of the files; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace outpost::audit {

struct VerifyOptions {
  std::string public_pem;      // checks checkpoint signatures; "" = the .pub beside the files
  bool allow_partial = false;  // the first file may start past seq 1 (older files pruned)
  int64_t expect_count = 0;    // a checkpoint held elsewhere: record `count` ...
  std::string expect_head;     // ... must have this hash
};

struct VerifyReport {
  bool ok = true;
  int64_t records = 0;  // lines checked, checkpoints included
  int64_t checkpoints = 0;
  int64_t last_seq = 0;
  std::string last_hash;
  int64_t last_checkpoint_seq = 0;
  // The first problem: "<file>:<line>: seq N: <kind>: <detail>".
  std::string error;
  std::string kind;  // modified | deleted | inserted/reordered | signature | truncated | rewritten
  std::vector<std::string> warnings;
};

VerifyReport VerifyAuditFiles(const std::vector<std::string>& files, const VerifyOptions& options);

// The log's files in `dir`, oldest first.
std::vector<std::string> AuditFilesIn(const std::string& dir);

}  // namespace outpost::audit
