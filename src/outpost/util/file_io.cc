#include "outpost/util/file_io.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

namespace outpost::util {

void FsyncDir(const std::string& dir) {
  const int fd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

Status CheckDiskRoom(const std::string& dir, uint64_t bytes, const std::string& what) {
  struct statvfs vfs {};
  if (statvfs(dir.empty() ? "." : dir.c_str(), &vfs) != 0) return Status::Ok();
  const uint64_t free_bytes = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  const uint64_t needed = bytes + bytes / 20;
  if (free_bytes >= needed) return Status::Ok();
  return Status::ResourceExhausted("not enough disk for " + what + ": " +
                                   std::to_string(free_bytes >> 20) + " MiB free in " + dir + ", " +
                                   std::to_string(needed >> 20) + " MiB needed");
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::ResourceExhausted("cannot write " + tmp);
  bool ok = true;
  for (size_t off = 0; ok && off < bytes.size();) {
    const ssize_t w = write(fd, bytes.data() + off, bytes.size() - off);
    ok = w > 0;
    if (ok) off += static_cast<size_t>(w);
  }
  ok = ok && fsync(fd) == 0;
  close(fd);
  if (!ok) {
    unlink(tmp.c_str());
    return Status::ResourceExhausted("cannot write " + tmp + " (disk full?)");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    unlink(tmp.c_str());
    return Status::Internal("cannot rename " + tmp + " to " + path);
  }
  FsyncDir(std::filesystem::path(path).parent_path().string());
  return Status::Ok();
}

}  // namespace outpost::util
