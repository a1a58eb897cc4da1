// Crash-safe file writes: a file replaced whole or not at all, and the
// directory entry made durable.
//
// Thread-safe as the file system is: two writers of one path race.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::util {

// Writes `bytes` to `path` through `path`.tmp, fsyncs it, renames it over
// `path` and fsyncs the directory: after a crash `path` holds the old bytes or
// the new ones. Errors name the file: ResourceExhausted when it cannot be
// written (disk full, no permission), Internal when the rename fails.
Status WriteFileAtomically(const std::string& path, std::string_view bytes);

// fsync on a directory, so that entries created or renamed in it survive a
// crash. Best effort: a directory that cannot be opened is left.
void FsyncDir(const std::string& dir);

// Whether the file system holding `dir` has room for `bytes` and 5% more,
// checked before the first byte is written. ResourceExhausted naming `what`,
// the free and the needed MiB and the directory when not; Ok when it has, or
// when the file system cannot be asked (the write then finds out).
Status CheckDiskRoom(const std::string& dir, uint64_t bytes, const std::string& what);

}  // namespace outpost::util
