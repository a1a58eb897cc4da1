// Pinned prompt prefixes (pinned_prompt.h, scheduler.h): their tokens and
// file names, WarmPinned() at start, and restoring an evicted one from its
// file at admission (engine thread).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "outpost/scheduler/pinned_prompt.h"
#include "outpost/scheduler/scheduler.h"

namespace outpost::scheduler {
namespace {

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<engine::Token> PinnedTokens(const engine::Engine& engine, const PinnedPrompt& pinned) {
  if (pinned.system.empty()) {
    return engine.Tokenize(pinned.prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  // As Scheduler::Prepare() renders and tokenizes a chat.
  std::vector<engine::Token> common;
  bool first = true;
  for (const char* user : {"A", "Zq?"}) {
    std::vector<engine::ChatMessage> messages(2);
    messages[0].role = "system";
    messages[0].content = pinned.system;
    messages[1].role = "user";
    messages[1].content = user;
    auto rendered = engine.ApplyChatTemplate(messages, nullptr, engine::ChatOptions());
    if (!rendered.ok()) return {};
    auto tokens = engine.Tokenize(rendered->text, /*add_special=*/true, /*parse_special=*/true);
    if (first) {
      common = std::move(tokens);
      first = false;
      continue;
    }
    size_t m = 0;
    while (m < common.size() && m < tokens.size() && common[m] == tokens[m]) ++m;
    common.resize(m);
  }
  return common;
}

std::string PinnedFileName(const std::string& key, const std::vector<engine::Token>& tokens) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a 64
  const auto mix = [&h](const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  };
  mix(key.data(), key.size());
  mix(tokens.data(), tokens.size() * sizeof(engine::Token));
  char name[48];
  std::snprintf(name, sizeof name, "pinned-%016llx.kvseq", static_cast<unsigned long long>(h));
  return name;
}

PinnedPruneResult PrunePinnedDir(const std::string& dir, uint64_t max_bytes,
                                 const std::vector<std::string>& keep) {
  namespace fs = std::filesystem;
  struct Entry {
    fs::file_time_type mtime;
    uint64_t size;
    fs::path path;
  };
  PinnedPruneResult r;
  std::vector<Entry> candidates;
  const auto now = fs::file_time_type::clock::now();
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code fe;
    if (!it->is_regular_file(fe)) continue;
    const std::string name = it->path().filename().string();
    const auto mtime = it->last_write_time(fe);
    const uint64_t size = fe ? 0 : it->file_size(fe);
    if (fe) continue;
    const auto ends_with = [&name](const std::string& tail) {
      return name.size() >= tail.size() &&
             name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (name.rfind("pinned-", 0) != 0) continue;
    if (ends_with(".tmp")) {
      if (now - mtime > std::chrono::minutes(10) && fs::remove(it->path(), fe)) {
        r.files_removed += 1;
        r.bytes_removed += size;
      }
      continue;
    }
    if (!ends_with(".kvseq")) continue;
    r.bytes_left += size;
    if (std::find(keep.begin(), keep.end(), name) == keep.end()) {
      candidates.push_back({mtime, size, it->path()});
    }
  }
  std::sort(candidates.begin(), candidates.end(),
            [](const Entry& a, const Entry& b) { return a.mtime < b.mtime; });
  for (const Entry& e : candidates) {
    if (r.bytes_left <= max_bytes) break;
    std::error_code fe;
    if (!fs::remove(e.path, fe)) continue;
    r.files_removed += 1;
    r.bytes_removed += e.size;
    r.bytes_left -= e.size;
  }
  return r;
}

void Scheduler::WarmPinned() {
  if (options_.pinned.empty()) return;
  if (!options_.prefix_cache) {
    spdlog::warn("pinned prompts: ignored, the prefix cache is off");
    return;
  }
  if (!options_.pinned_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.pinned_dir, ec);
    if (ec) {
      spdlog::warn("pinned prompts: cannot create {} ({}); they are computed but not saved",
                   options_.pinned_dir, ec.message());
    }
  }
  // The first prefixes take the last slots (a request for one runs in
  // place there); those beyond the sessions are computed in slot 0 first,
  // saved, and then held on disk only.
  const size_t n = options_.pinned.size();
  pinned_.resize(n);
  std::vector<std::string> in_use;  // file names, kept by the directory's bound
  for (size_t k = n; k-- > 0;) {
    const PinnedPrompt& p = options_.pinned[k];
    Pinned& pin = pinned_[k];
    const std::string what = "pinned prompt " + std::to_string(k + 1) + " of " + std::to_string(n);
    std::vector<engine::Token> tokens = PinnedTokens(*engine_, p);
    // A request's last prompt token is always computed, so at least one
    // token must follow the prefix within the session.
    if (tokens.size() < 2 || tokens.size() >= static_cast<size_t>(options_.ctx_per_session)) {
      spdlog::warn("{}: skipped: {} tokens ({})", what, tokens.size(),
                   tokens.empty() ? "the chat template refused it"
                                  : "a prefix needs 2 to ctx_size - 1 tokens");
      continue;
    }
    const bool held = k < slots_.size();
    Slot& s = slots_[held ? slots_.size() - 1 - k : 0];
    const std::string path =
        options_.pinned_dir.empty()
            ? std::string()
            : options_.pinned_dir + "/" + PinnedFileName(options_.pinned_key, tokens);
    const auto t0 = std::chrono::steady_clock::now();
    bool ready = false;
    if (!path.empty()) {
      auto loaded = engine_->LoadSequence(s.seq, path, tokens.size());
      if (loaded.ok() && *loaded == tokens) {
        spdlog::info("{}: {} tokens read from {} in {:.0f} ms", what, tokens.size(), path,
                     MsSince(t0));
        // Used now: the directory's bound removes the least recently used files first.
        std::error_code ec;
        std::filesystem::last_write_time(path, std::filesystem::file_time_type::clock::now(), ec);
        ready = true;
      } else if (loaded.ok() || loaded.status().code() != StatusCode::kNotFound) {
        engine_->RemoveSequence(s.seq);
        spdlog::warn("{}: {} not used ({}); computing it again", what, path,
                     loaded.ok() ? "it holds other tokens" : loaded.status().message());
      }
    }
    if (!ready) {
      if (!PrefillDirect(s, tokens)) {
        spdlog::warn("{}: skipped: computing its {} tokens failed", what, tokens.size());
        continue;
      }
      const double compute_ms = MsSince(t0);
      std::string saved = "not saved (no pinned_dir)";
      if (!path.empty()) {
        // Written whole, then renamed: a crash never leaves half a file under the name.
        const std::string tmp = path + ".tmp";
        Status st = engine_->SaveSequence(s.seq, tmp, tokens);
        std::error_code ec;
        if (st.ok()) std::filesystem::rename(tmp, path, ec);
        if (st.ok() && !ec) {
          saved = "saved to " + path + " (" +
                  std::to_string(std::filesystem::file_size(path, ec) >> 10) + " KiB)";
        } else {
          std::filesystem::remove(tmp, ec);
          saved = "not saved: " + (st.ok() ? ec.message() : st.message());
        }
      }
      spdlog::info("{}: {} tokens computed in {:.0f} ms, {}", what, tokens.size(), compute_ms,
                   saved);
      ready = true;
    }
    pin.tokens = tokens;
    pin.scope = p.scope;
    std::error_code ec;
    pin.path = !path.empty() && std::filesystem::is_regular_file(path, ec) ? path : std::string();
    if (!pin.path.empty()) in_use.push_back(std::filesystem::path(path).filename().string());
    if (held) {
      s.kv = std::move(tokens);
      s.kv_scope = p.scope;
      s.cached_at = clock_->Now();
    } else {
      engine_->RemoveSequence(s.seq);
      s.kv.clear();
      if (pin.path.empty()) pin.tokens.clear();  // neither held nor on disk
    }
    if (!pin.tokens.empty()) {
      pinned_ready_ += 1;
      pinned_tokens_ += static_cast<int64_t>(pin.tokens.size());
    }
  }
  if (!options_.pinned_dir.empty()) {
    const PinnedPruneResult pruned =
        PrunePinnedDir(options_.pinned_dir, options_.pinned_dir_max_bytes, in_use);
    if (pruned.files_removed > 0) {
      spdlog::info("pinned prompts: removed {} older file(s) ({} KiB) from {}; {} KiB left",
                   pruned.files_removed, pruned.bytes_removed >> 10, options_.pinned_dir,
                   pruned.bytes_left >> 10);
    }
    if (pruned.bytes_left > options_.pinned_dir_max_bytes) {
      spdlog::warn(
          "pinned prompts: the files in use take {} KiB, more than pinned_cache_size "
          "({} KiB); they are kept",
          pruned.bytes_left >> 10, options_.pinned_dir_max_bytes >> 10);
    }
  }
  // What idle slots hold, as the steps report it (/ready before any request).
  size_t cached = 0;
  for (const Slot& s : slots_) cached += s.kv.size();
  stats_.prefix_cache_tokens.Set(static_cast<double>(cached));
  cache_tokens_.store(static_cast<int64_t>(cached), std::memory_order_relaxed);
}

bool Scheduler::PrefillDirect(Slot& s, const std::vector<engine::Token>& tokens) {
  const size_t chunk = static_cast<size_t>(std::max(1, options_.batch_size));
  for (size_t i = 0; i < tokens.size(); i += chunk) {
    engine_->ClearBatch();
    const size_t end = std::min(tokens.size(), i + chunk);
    for (size_t j = i; j < end; ++j) {
      engine_->Add(tokens[j], static_cast<int32_t>(j), s.seq, j + 1 == tokens.size());
    }
    if (Status st = engine_->Decode(); !st.ok()) {
      spdlog::warn("pinned prompt: decode failed: {}", st.ToString());
      engine_->ClearBatch();
      engine_->RemoveSequence(s.seq);
      s.kv.clear();
      return false;
    }
  }
  engine_->ClearBatch();
  return true;
}

Scheduler::Reuse Scheduler::FindPinned(const GenerationRequest& req, const Reuse& cached) const {
  if (req.prompt.size() < 2) return Reuse{};
  const size_t limit = req.prompt.size() - 1;  // the last prompt token is computed
  Reuse best;
  for (size_t i = 0; i < pinned_.size(); ++i) {
    const Pinned& p = pinned_[i];
    if (p.path.empty() || p.scope != req.cache_scope) continue;
    const size_t end = std::min(limit, p.tokens.size());
    size_t m = 0;
    while (m < end && p.tokens[m] == req.prompt[m]) ++m;
    // Sliding-window layers keep only the last window of a prefix longer
    // than it: such a prefix is cut nowhere but at its end (FindPrefix()).
    const auto window = static_cast<size_t>(engine_->SlidingWindow());
    if (window > 0 && p.tokens.size() > window && m < p.tokens.size()) continue;
    if (static_cast<int32_t>(m) > best.match) best = Reuse{i, static_cast<int32_t>(m)};
  }
  if (best.match >= cached.match + options_.min_copied_prefix) return best;
  return Reuse{};
}

int32_t Scheduler::DeferRestore(Slot& s, size_t index, int32_t keep) {
  s.restore_pin = static_cast<int32_t>(index);
  const std::vector<engine::Token>& tokens = pinned_[index].tokens;
  s.kv.assign(tokens.begin(), tokens.begin() + keep);
  return keep;
}

void Scheduler::RestorePinned() {
  for (Slot& s : slots_) {
    if (s.restore_pin < 0) continue;
    Pinned& p = pinned_[static_cast<size_t>(s.restore_pin)];
    s.restore_pin = -1;
    const auto keep = static_cast<int32_t>(s.kv.size());
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = false;
    if (s.copy_pending) {
      // A copy from or into this slot is still to be made: it would read or
      // overwrite what the file put there.
      spdlog::debug("pinned prompt: slot {} has a copy pending; computing", s.seq);
    } else if (auto loaded = engine_->LoadSequence(s.seq, p.path, p.tokens.size());
               !loaded.ok() || *loaded != p.tokens) {
      spdlog::warn("pinned prompt: {} cannot be read back ({}); it is computed from now on", p.path,
                   loaded.ok() ? "it holds other tokens" : loaded.status().message());
      p.path.clear();
    } else {
      s.kv = std::move(loaded).value();
      ok = TrimCache(s, keep);
    }
    if (!ok) {
      // The whole prompt is computed, as without a cache (RemoveSequence()
      // drops the cells' claim only; a pending copy still reads their data).
      engine_->RemoveSequence(s.seq);
      s.kv.clear();
      s.n_prompt_done = 0;
      s.n_past = 0;
      if (s.group != nullptr && s.choice == 0) s.group->result.usage.cached_tokens = 0;
      continue;
    }
    pinned_restores_ += 1;
    stats_.prompt_tokens_cached.Add(static_cast<uint64_t>(keep));
    prompt_tokens_cached_ += keep;
    spdlog::debug("pinned prompt: {} tokens read back from {} in {:.1f} ms", keep, p.path,
                  MsSince(t0));
  }
}

}  // namespace outpost::scheduler
