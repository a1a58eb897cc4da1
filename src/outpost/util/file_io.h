// Crash-safe file writes: a file replaced whole or not at all, and the
// directory entry made durable.
//
// Thread-safe as the file system is: two writers of one path race.
#pragma once

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

}  // namespace outpost::util
