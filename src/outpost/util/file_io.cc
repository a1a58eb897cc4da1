#include "outpost/util/file_io.h"

#include <fcntl.h>
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
