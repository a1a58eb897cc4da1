#include "outpost/audit/audit_log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include <spdlog/spdlog.h>

namespace outpost::audit {
namespace {

std::string TimeText(int64_t ms) {
  const time_t t = static_cast<time_t>(ms / 1000);
  tm utc{};
  gmtime_r(&t, &utc);
  char buf[40];
  const size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buf + n, sizeof buf - n, ".%03dZ", static_cast<int>(ms % 1000));
  return buf;
}

// The log's files, oldest first.
std::vector<std::filesystem::path> LogFiles(const std::string& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("audit-", 0) == 0 && e.path().extension() == ".jsonl") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string CheckpointMessage(const std::string& box, int64_t count, const std::string& head) {
  return "outpost-audit-checkpoint\n" + box + "\n" + std::to_string(count) + "\n" + head + "\n";
}

std::string AuditFileName(int64_t first_seq) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "audit-%012lld.jsonl", static_cast<long long>(first_seq));
  return buf;
}

StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(AuditOptions options, const util::Clock* clock) {
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return Status::InvalidArgument("audit_dir " + options.dir + ": " + ec.message(), "audit_dir");
  }
  const std::string lock_path = options.dir + "/.lock";
  const int lock_fd = open(lock_path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  if (lock_fd < 0) {
    return Status::InvalidArgument("audit_dir " + options.dir + ": cannot write there",
                                   "audit_dir");
  }
  if (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    close(lock_fd);
    return Status::InvalidArgument(
        "audit_dir " + options.dir + ": another process writes this audit log", "audit_dir");
  }
  auto key = SigningKey::LoadOrCreate(options.dir + "/audit-ed25519.pem");
  if (!key.ok()) {
    close(lock_fd);
    return key.status();
  }
  std::unique_ptr<AuditLog> log(
      new AuditLog(std::move(options), clock, std::move(key).value(), lock_fd));
  if (Status st = log->Recover(); !st.ok()) return st;
  log->ticker_ = std::thread([raw = log.get()] {
    std::unique_lock<std::mutex> lock(raw->run_mu_);
    while (!raw->run_cv_.wait_for(lock,
                                  std::chrono::milliseconds(raw->options_.checkpoint_interval_ms),
                                  [raw] { return raw->stop_; })) {
      lock.unlock();
      raw->CheckpointNow();
      lock.lock();
    }
  });
  return log;
}

AuditLog::AuditLog(AuditOptions options, const util::Clock* clock, std::unique_ptr<SigningKey> key,
                   int lock_fd)
    : options_(std::move(options)), clock_(clock), key_(std::move(key)), lock_fd_(lock_fd) {}

AuditLog::~AuditLog() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_ = true;
  }
  run_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  {
    std::lock_guard<std::mutex> lock(mu_);
    CheckpointLocked();
    if (fd_ >= 0) close(fd_);
  }
  close(lock_fd_);
}

Status AuditLog::Recover() {
  std::lock_guard<std::mutex> lock(mu_);
  head_ = GenesisHash();
  const auto files = LogFiles(options_.dir);
  std::string path;
  if (!files.empty()) {
    path = files.back().string();
    std::ifstream in(path, std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Keep complete lines only: a torn tail (a crash mid-write) goes.
    size_t good_end = 0, pos = 0;
    while (pos < text.size()) {
      const size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) break;
      const auto j = nlohmann::json::parse(text.substr(pos, nl - pos), nullptr, false);
      if (!j.is_object() || !j.contains("hash") || !j.contains("seq")) break;
      seq_ = j["seq"].get<int64_t>();
      head_ = j["hash"].get<std::string>();
      if (j.value("type", "") == "checkpoint") {
        since_checkpoint_ = 0;
      } else {
        ++since_checkpoint_;
      }
      good_end = nl + 1;
      pos = nl + 1;
    }
    if (good_end < text.size()) {
      spdlog::warn(
          "audit: {} ends in {} byte(s) of an incomplete record (a crash mid-write); "
          "cut off, the log continues after seq {}",
          path, text.size() - good_end, seq_);
      if (truncate(path.c_str(), static_cast<off_t>(good_end)) != 0) {
        return Status::InvalidArgument("audit_dir: cannot repair " + path, "audit_dir");
      }
    }
    file_bytes_ = good_end;
  } else {
    path = options_.dir + "/" + AuditFileName(1);
  }
  fd_ = open(path.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0640);
  if (fd_ < 0) {
    return Status::InvalidArgument("audit_dir: cannot open " + path + " for appending",
                                   "audit_dir");
  }
  return Status::Ok();
}

void AuditLog::WriteLocked(const std::string& type, nlohmann::json fields) {
  if (!fields.is_object()) fields = nlohmann::json::object();
  if (file_bytes_ >= options_.max_file_bytes) {
    const std::string next = options_.dir + "/" + AuditFileName(seq_ + 1);
    const int fd = open(next.c_str(), O_CREAT | O_WRONLY | O_APPEND | O_CLOEXEC, 0640);
    if (fd >= 0) {
      fdatasync(fd_);
      close(fd_);
      fd_ = fd;
      file_bytes_ = 0;
    }
  }
  fields["seq"] = seq_ + 1;
  fields["time"] = TimeText(clock_->UnixMillis());
  fields["type"] = type;
  fields["prev"] = head_;
  fields.erase("hash");
  const std::string hash = ChainHash(head_, fields.dump());
  fields["hash"] = hash;
  const std::string line = fields.dump() + "\n";
  const ssize_t n = write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) {
    ++write_errors_;
    spdlog::error("audit: writing seq {} failed ({}); the record is lost", seq_ + 1,
                  n < 0 ? std::strerror(errno) : "short write");
    return;
  }
  file_bytes_ += line.size();
  ++seq_;
  head_ = hash;
}

void AuditLog::CheckpointLocked() {
  if (since_checkpoint_ == 0) return;
  Checkpoint c;
  c.count = seq_;
  c.head = head_;
  c.box = options_.box_id;
  c.key_id = key_->key_id();
  c.sig = key_->Sign(CheckpointMessage(c.box, c.count, c.head));
  c.time_ms = clock_->UnixMillis();
  WriteLocked(
      "checkpoint",
      {{"count", c.count}, {"head", c.head}, {"box", c.box}, {"key_id", c.key_id}, {"sig", c.sig}});
  fdatasync(fd_);
  since_checkpoint_ = 0;
  if (listener_) listener_(c);
}

void AuditLog::Append(const std::string& type, nlohmann::json fields) {
  std::lock_guard<std::mutex> lock(mu_);
  WriteLocked(type, std::move(fields));
  ++since_checkpoint_;
  if (since_checkpoint_ >= options_.checkpoint_every) CheckpointLocked();
}

void AuditLog::SetCheckpointListener(std::function<void(const Checkpoint&)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

void AuditLog::CheckpointNow() {
  std::lock_guard<std::mutex> lock(mu_);
  CheckpointLocked();
}

int64_t AuditLog::head_seq() {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

int64_t AuditLog::write_errors() {
  std::lock_guard<std::mutex> lock(mu_);
  return write_errors_;
}

}  // namespace outpost::audit
