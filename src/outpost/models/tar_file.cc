#include "outpost/models/tar_file.h"

#include <unistd.h>

#include <cstring>
#include <vector>

namespace outpost::models {
namespace {

constexpr size_t kBlock = 512;

void Octal(char* field, size_t width, uint64_t v) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(v));
}

uint64_t ParseSize(const unsigned char* f) {
  if (f[0] & 0x80) {  // GNU base-256
    uint64_t v = 0;
    for (int i = 1; i < 12; ++i) v = (v << 8) | f[i];
    return v;
  }
  uint64_t v = 0;
  for (int i = 0; i < 12 && f[i] >= '0' && f[i] <= '7'; ++i) v = v * 8 + (f[i] - '0');
  return v;
}

}  // namespace

StatusOr<TarWriter> TarWriter::Create(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::ResourceExhausted("cannot write " + path);
  return TarWriter(f, path);
}

TarWriter::~TarWriter() {
  if (f_ != nullptr) std::fclose(f_);
}

Status TarWriter::Header(const std::string& name, uint64_t size) {
  if (name.size() > 99) return Status::InvalidArgument("tar entry name too long: " + name);
  unsigned char h[kBlock] = {};
  std::memcpy(h, name.data(), name.size());
  Octal(reinterpret_cast<char*>(h + 100), 8, 0644);
  Octal(reinterpret_cast<char*>(h + 108), 8, 0);
  Octal(reinterpret_cast<char*>(h + 116), 8, 0);
  if (size < (1ull << 33)) {
    Octal(reinterpret_cast<char*>(h + 124), 12, size);
  } else {
    h[124] = 0x80;
    for (int i = 11; i >= 1; --i) {
      h[124 + i] = static_cast<unsigned char>(size & 0xff);
      size >>= 8;
    }
  }
  Octal(reinterpret_cast<char*>(h + 136), 12, 0);
  h[156] = '0';
  std::memcpy(h + 257, "ustar", 6);
  std::memcpy(h + 263, "00", 2);
  std::memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(reinterpret_cast<char*>(h + 148), 8, "%06o", sum);
  h[155] = ' ';
  if (std::fwrite(h, 1, kBlock, f_) != kBlock) return Status::ResourceExhausted("writing " + path_);
  return Status::Ok();
}

Status TarWriter::AddBytes(const std::string& name, const std::string& bytes) {
  if (Status st = Header(name, bytes.size()); !st.ok()) return st;
  static const char zeros[kBlock] = {};
  if (std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size() ||
      std::fwrite(zeros, 1, (kBlock - bytes.size() % kBlock) % kBlock, f_) !=
          (kBlock - bytes.size() % kBlock) % kBlock) {
    return Status::ResourceExhausted("writing " + path_ + " (disk full?)");
  }
  return Status::Ok();
}

Status TarWriter::AddFile(const std::string& name, const std::string& from,
                          const std::function<void(uint64_t)>& chunk) {
  FILE* in = std::fopen(from.c_str(), "rb");
  if (in == nullptr) return Status::NotFound("cannot read " + from);
  std::fseek(in, 0, SEEK_END);
  const uint64_t size = static_cast<uint64_t>(std::ftell(in));
  std::fseek(in, 0, SEEK_SET);
  Status st = Header(name, size);
  std::vector<char> buf(1 << 20);
  uint64_t done = 0;
  while (st.ok() && done < size) {
    const size_t n = std::fread(buf.data(), 1, buf.size(), in);
    if (n == 0) {
      st = Status::InvalidArgument(from + " shrank while being archived");
      break;
    }
    if (std::fwrite(buf.data(), 1, n, f_) != n) {
      st = Status::ResourceExhausted("writing " + path_ + " (disk full?)");
      break;
    }
    done += n;
    if (chunk) chunk(n);
  }
  std::fclose(in);
  static const char zeros[kBlock] = {};
  const size_t pad = (kBlock - size % kBlock) % kBlock;
  if (st.ok() && std::fwrite(zeros, 1, pad, f_) != pad) {
    st = Status::ResourceExhausted("writing " + path_);
  }
  return st;
}

Status TarWriter::Finish() {
  static const char zeros[2 * kBlock] = {};
  if (std::fwrite(zeros, 1, sizeof zeros, f_) != sizeof zeros || std::fflush(f_) != 0 ||
      fsync(fileno(f_)) != 0) {
    return Status::ResourceExhausted("writing " + path_ + " (disk full?)");
  }
  std::fclose(f_);
  f_ = nullptr;
  return Status::Ok();
}

StatusOr<TarReader> TarReader::Open(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::NotFound("no archive at " + path);
  return TarReader(f, path);
}

TarReader::~TarReader() {
  if (f_ != nullptr) std::fclose(f_);
}

StatusOr<bool> TarReader::Next(std::string* name, uint64_t* size) {
  // Skip what is left of the previous entry.
  if (left_ > 0) {
    const uint64_t skip = left_ + (kBlock - left_ % kBlock) % kBlock;
    std::fseek(f_, static_cast<long>(skip), SEEK_CUR);
    left_ = 0;
  }
  for (;;) {
    unsigned char h[kBlock];
    if (std::fread(h, 1, kBlock, f_) != kBlock) return false;  // end without the zero blocks
    bool zero = true;
    for (unsigned char c : h) zero = zero && c == 0;
    if (zero) return false;
    unsigned sum = 0;
    for (size_t i = 0; i < kBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : h[i];
    unsigned stored = 0;
    for (int i = 148; i < 156 && h[i] >= '0' && h[i] <= '7'; ++i)
      stored = stored * 8 + (h[i] - '0');
    if (sum != stored) return Status::InvalidArgument(path_ + " is not a tar archive (bad header)");
    const uint64_t n = ParseSize(h + 124);
    const char type = static_cast<char>(h[156]);
    std::string entry(reinterpret_cast<const char*>(h),
                      strnlen(reinterpret_cast<const char*>(h), 100));
    if (std::memcmp(h + 257, "ustar", 5) == 0 && h[345] != 0) {
      entry = std::string(reinterpret_cast<const char*>(h + 345),
                          strnlen(reinterpret_cast<const char*>(h + 345), 155)) +
              "/" + entry;
    }
    if (type == '0' || type == '\0') {
      while (entry.rfind("./", 0) == 0) entry = entry.substr(2);
      *name = entry;
      *size = n;
      left_ = n;
      return true;
    }
    // Directories, links, pax/GNU extension headers: skip their data.
    const uint64_t skip = n + (kBlock - n % kBlock) % kBlock;
    std::fseek(f_, static_cast<long>(skip), SEEK_CUR);
  }
}

Status TarReader::Read(const std::function<Status(const char* data, size_t n)>& sink) {
  std::vector<char> buf(1 << 20);
  const uint64_t total = left_;
  while (left_ > 0) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(left_, buf.size()));
    const size_t n = std::fread(buf.data(), 1, want, f_);
    if (n != want) return Status::InvalidArgument(path_ + " is truncated");
    left_ -= n;
    if (Status st = sink(buf.data(), n); !st.ok()) return st;
  }
  const uint64_t pad = (kBlock - total % kBlock) % kBlock;
  std::fseek(f_, static_cast<long>(pad), SEEK_CUR);
  return Status::Ok();
}

}  // namespace outpost::models
