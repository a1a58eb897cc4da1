// ModelStore::Pull: a model over HTTP(S), resumable (see model_store.h).
#include <fcntl.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "outpost/models/model_store.h"
#include "outpost/models/store_layout.h"
#include "outpost/util/sha256.h"
#include "outpost/util/status_macros.h"

namespace outpost::models {
namespace {

namespace fs = std::filesystem;
using Steady = std::chrono::steady_clock;

}  // namespace

StatusOr<ModelVersion> ModelStore::Pull(const std::string& url, const std::string& ref,
                                        const std::string& sha256, BlobSource* source,
                                        const PullOptions& options, const Progress& progress) {
  std::string name, version;
  OUTPOST_RETURN_IF_ERROR(ParseModelRef(ref, &name, &version));
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) {
    return Status::InvalidArgument(
        "the source must be an http:// or https:// URL, got '" + url + "'", "url");
  }
  const std::string hex = sha256.rfind("sha256:", 0) == 0 ? sha256.substr(7) : sha256;
  if (!layout::IsHex64(hex)) {
    return Status::InvalidArgument(
        "a pull needs the file's sha256: 64 lowercase hex digits (optionally after 'sha256:'), "
        "got '" +
            sha256 + "'",
        "sha256");
  }
  return PullLayers({{url, "sha256:" + hex, 0}}, ref, source, options, progress);
}

StatusOr<ModelVersion> ModelStore::PullLayers(const std::vector<Layer>& layers,
                                              const std::string& ref, BlobSource* source,
                                              const PullOptions& options,
                                              const Progress& progress) {
  std::string name, version;
  OUTPOST_RETURN_IF_ERROR(ParseModelRef(ref, &name, &version));
  if (layers.empty()) return Status::InvalidArgument("nothing to pull", "source");
  for (size_t i = 0; i < layers.size(); ++i) {
    const Layer& l = layers[i];
    for (size_t j = 0; j < i; ++j) {
      if (layers[j].digest == l.digest) {
        return Status::InvalidArgument("shard " + std::to_string(i + 1) + " is shard " +
                                           std::to_string(j + 1) +
                                           " again: the layers are not a split model",
                                       "source");
      }
    }
    if (l.url.rfind("https://", 0) != 0 && l.url.rfind("http://", 0) != 0) {
      return Status::InvalidArgument(
          "the source must be an http:// or https:// URL, got '" + l.url + "'", "url");
    }
    if (l.digest.rfind("sha256:", 0) != 0 || !layout::IsHex64(l.digest.substr(7))) {
      return Status::InvalidArgument("'" + l.digest + "' is not a sha256 digest", "sha256");
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    OUTPOST_RETURN_IF_ERROR(
        Begin(name, version, options.source.empty() ? layers[0].url : options.source, 0));
  }
  uint64_t total = 0, before = 0, missing = 0;
  for (const Layer& l : layers) {
    std::error_code ec;
    total += l.size;
    if (!fs::exists(BlobPath(l.digest), ec)) missing += l.size;
  }
  if (layers.size() > 1 && missing > 0) {
    // Before the first byte, for all the shards (each download checks its own too).
    if (Status st = CheckDisk(ref, missing); !st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      SetState(name, version, "failed", st.message());
      return st;
    }
  }
  std::vector<std::string> files;
  for (const Layer& l : layers) {
    const std::string where = layers.size() > 1
                                  ? ref + " (shard " + std::to_string(files.size() + 1) + " of " +
                                        std::to_string(layers.size()) + ")"
                                  : ref;
    Status st = FetchBlob(l, where, source, options, [&](uint64_t done, uint64_t t) {
      if (progress) progress(before + done, layers.size() > 1 ? total : t);
    });
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      SetState(name, version, "failed", st.message());
      return st;
    }
    files.push_back(l.digest);
    std::error_code ec;
    before += fs::file_size(BlobPath(l.digest), ec);
  }
  std::lock_guard<std::mutex> lock(mu_);
  return Finish(name, version, files, before, "");
}

Status ModelStore::FetchBlob(const Layer& layer, const std::string& ref, BlobSource* source,
                             const PullOptions& options, const Progress& progress) {
  const std::string& url = layer.url;
  const std::string& want = layer.digest;
  const std::string hex = want.substr(7);
  std::unique_lock<std::mutex> lock(mu_);
  pull_done_.wait(lock, [&] { return pulling_.count(hex) == 0; });
  std::error_code ec;
  if (fs::exists(BlobPath(want), ec)) return Status::Ok();  // another pull (or import) brought it
  pulling_.insert(hex);
  lock.unlock();
  // From here the download runs without the store's lock.
  struct Done {
    ModelStore* s;
    std::string hex;
    ~Done() {
      {
        std::lock_guard<std::mutex> l(s->mu_);
        s->pulling_.erase(hex);
      }
      s->pull_done_.notify_all();
    }
  } done{this, hex};
  const std::string resume = dir_ + "/blobs/sha256/.resume-" + hex;
  const std::string validator_file = resume + ".validator";

  // What an earlier try left: re-hash it and go on from its end.
  util::Sha256Stream hash;
  uint64_t have = 0;
  std::string validator;
  if (fs::exists(resume, ec)) {
    std::ifstream in(resume, std::ios::binary);
    std::vector<char> buf(1 << 20);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
      hash.Update(buf.data(), static_cast<size_t>(in.gcount()));
      have += static_cast<uint64_t>(in.gcount());
    }
    std::ifstream v(validator_file);
    std::getline(v, validator);
    spdlog::info("pull {}: resuming at {} bytes (re-hashed)", ref, have);
  }
  const int fd = open(resume.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::InvalidArgument("cannot write " + resume);
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};

  uint64_t total = 0;
  uint64_t reported = 0;  // progress is told every 16 MiB
  bool disk_checked = false;
  Status write_error;
  const auto rate_start = Steady::now();
  uint64_t rate_bytes = 0;
  int attempts = 0;
  int64_t backoff_ms = 1000;
  bool window_closed = false;  // the window's end stopped the transfer
  auto cancelled = [&] { return options.cancelled && options.cancelled(); };
  auto cancel = [&]() -> Status {
    return Status::Cancelled("pull of " + url + " cancelled at " + std::to_string(have) +
                             " bytes; they are kept: pull again to resume");
  };
  // Sleeps `ms` in slices, false when cancelled meanwhile.
  auto nap = [&](int64_t ms) {
    const auto until = Steady::now() + std::chrono::milliseconds(ms);
    while (Steady::now() < until) {
      if (cancelled()) return false;
      std::this_thread::sleep_for(
          std::min<Steady::duration>(std::chrono::milliseconds(200), until - Steady::now()));
    }
    return !cancelled();
  };
  for (;;) {
    if (cancelled()) return cancel();
    if (const int64_t wait = options.window.SecondsUntilOpen(std::time(nullptr)); wait > 0) {
      spdlog::info("pull {}: outside its window {} at {} of {} bytes; waiting {} s", ref,
                   options.window.text(), have, total, wait);
      // In slices: the clock may be set while the box waits.
      while (!options.window.Contains(std::time(nullptr))) {
        if (!nap(std::min<int64_t>(1000,
                                   1000 * options.window.SecondsUntilOpen(std::time(nullptr))))) {
          return cancel();
        }
      }
      spdlog::info("pull {}: window {} open; resuming at {} bytes", ref, options.window.text(),
                   have);
    }
    window_closed = false;
    const uint64_t before = have;
    Status got = source->Get(
        url, have, validator,
        [&](const BlobSource::Head& h) {
          if (have > 0 && h.status == 200) {
            // The range was ignored, or the file changed: start over.
            spdlog::warn("pull {}: the server sent the whole file; starting over", ref);
            if (ftruncate(fd, 0) != 0) return false;
            (void)hash.Finish();  // starts it again
            have = 0;
          }
          total = h.total;
          if (!h.validator.empty() && h.validator != validator) {
            validator = h.validator;
            std::ofstream(validator_file, std::ios::trunc) << validator << "\n";
          }
          if (!disk_checked && total > have) {
            write_error = CheckDisk(ref, total - have);
            disk_checked = true;
            if (!write_error.ok()) return false;
          }
          return true;
        },
        [&](const char* data, size_t n) {
          for (size_t off = 0; off < n;) {
            const ssize_t w = write(fd, data + off, n - off);
            if (w <= 0) {
              write_error = Status::ResourceExhausted("writing " + resume + " failed (disk full?)");
              return false;
            }
            off += static_cast<size_t>(w);
          }
          hash.Update(data, n);
          have += n;
          if (cancelled()) return false;
          if (!options.window.always_open() && !options.window.Contains(std::time(nullptr))) {
            window_closed = true;  // pause here; the loop waits for the window
            return false;
          }
          if (progress && (have - reported >= (16u << 20) || have == total)) {
            progress(have, total);
            reported = have;
          }
          if (options.max_bytes_per_s > 0) {
            rate_bytes += n;
            const auto due = rate_start + std::chrono::microseconds(static_cast<int64_t>(
                                              1e6 * static_cast<double>(rate_bytes) /
                                              static_cast<double>(options.max_bytes_per_s)));
            std::this_thread::sleep_until(due);
          }
          return true;
        });
    if (!write_error.ok()) return write_error;
    if (cancelled()) return cancel();
    if (window_closed) {
      if (total > 0 && have >= total) break;
      spdlog::warn("pull {}: its window {} closed at {} of {} bytes; paused", ref,
                   options.window.text(), have, total);
      attempts = 0;
      continue;
    }
    if (got.ok() && (total == 0 || have >= total)) break;
    if (!got.ok() && got.code() != StatusCode::kUnavailable) return got;
    // A reset, a stall, a truncated body: try again from where it stopped.
    if (have > before) {
      attempts = 0;
      backoff_ms = 1000;
    }
    if (++attempts >= options.max_attempts) {
      const Status st = Status::Unavailable(
          "pull of " + url + " gave up after " + std::to_string(attempts) +
          " tries without progress (" + (got.ok() ? "the body ended early" : got.message()) +
          "); " + std::to_string(have) + " bytes are kept: pull again to resume");
      return st;
    }
    spdlog::warn("pull {}: {} at {} of {} bytes; again in {} ms", ref,
                 got.ok() ? "the body ended early" : got.message(), have, total, backoff_ms);
    if (!nap(backoff_ms)) return cancel();
    backoff_ms = std::min<int64_t>(backoff_ms * 2, options.max_backoff_ms);
  }
  if (fsync(fd) != 0) return Status::ResourceExhausted("fsync of " + resume + " failed");
  const std::string digest = "sha256:" + hash.Finish();
  if (digest != want) {
    fs::remove(resume, ec);
    fs::remove(validator_file, ec);
    return Status::InvalidArgument(
        "digest mismatch for " + url + ": expected " + want + ", the download is " + digest,
        "sha256");
  }
  fs::remove(validator_file, ec);
  if (Status st = Commit(resume, digest); !st.ok()) return st;
  spdlog::info("pull {}: {} bytes from {}, {}", ref, have, url, digest);
  return Status::Ok();
}

}  // namespace outpost::models
