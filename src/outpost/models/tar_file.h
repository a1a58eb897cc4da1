// Minimal tar (POSIX ustar, with GNU base-256 sizes past 8 GiB) for OCI
// layout archives: writing regular files from memory or from disk, reading
// regular-file entries one at a time. Directories, links and pax headers in
// an archive are skipped (skopeo's oci-archive has directory entries).
//
// Not thread-safe; one writer or reader per object.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "outpost/util/status.h"

namespace outpost::models {

class TarWriter {
 public:
  // Errors: ResourceExhausted naming the path when it cannot be written.
  static StatusOr<TarWriter> Create(const std::string& path);
  TarWriter(TarWriter&& other) noexcept : f_(other.f_), path_(std::move(other.path_)) {
    other.f_ = nullptr;
  }
  ~TarWriter();
  Status AddBytes(const std::string& name, const std::string& bytes);
  // Streams a file from disk; `chunk` is told of each piece written.
  Status AddFile(const std::string& name, const std::string& from,
                 const std::function<void(uint64_t)>& chunk = nullptr);
  // The two zero blocks, fsync, close.
  Status Finish();

 private:
  TarWriter(FILE* f, std::string path) : f_(f), path_(std::move(path)) {}
  Status Header(const std::string& name, uint64_t size);
  FILE* f_;
  std::string path_;
};

class TarReader {
 public:
  // Errors: NotFound naming the path.
  static StatusOr<TarReader> Open(const std::string& path);
  TarReader(TarReader&& other) noexcept : f_(other.f_), path_(std::move(other.path_)) {
    other.f_ = nullptr;
  }
  ~TarReader();
  // The next regular file: its name and size (false at the end). Errors:
  // InvalidArgument for a damaged header (bad checksum, not a tar).
  StatusOr<bool> Next(std::string* name, uint64_t* size);
  // Reads the current entry's data in pieces (then skips the padding).
  Status Read(const std::function<Status(const char* data, size_t n)>& sink);

 private:
  TarReader(FILE* f, std::string path) : f_(f), path_(std::move(path)) {}
  FILE* f_;
  std::string path_;
  uint64_t left_ = 0;  // bytes of the current entry not yet read
};

}  // namespace outpost::models
