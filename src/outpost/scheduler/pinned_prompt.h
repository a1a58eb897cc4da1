// PinnedPrompt — a prompt prefix named in the config that the requests of
// one cache scope start with (a site's system prompt). The scheduler
// computes it once as it starts, or reads it from the file it saved it to
// before (Scheduler::WarmPinned), so that a restart or a model swap serves
// the first such request warm; it then sits in an idle slot as an ordinary
// prefix-cache entry, and when admission has reclaimed that slot the prefix
// is read back from the file (milliseconds) instead of computed again.
//
// The file's name carries a hash of the model and context identity (the
// caller's key) and of the prefix's tokens, so a file is never read for a
// model, context shape or prompt it was not written for; the loaded tokens
// are checked against the expected ones as well.
//
// The directory is bounded (PrunePinnedDir): every start touches the files
// it reads or writes, and the least recently used files of other models,
// context shapes or prompts give way once the total passes the bound.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "outpost/engine/engine.h"

namespace outpost::scheduler {

struct PinnedPrompt {
  std::string system;  // a system message, or (system empty)
  std::string prompt;  // the start of a raw /v1/completions prompt
  std::string scope;   // the cache_scope of the requests that may use it
  std::string model;   // the served model id it is for, "" = any (models::LoadModel
                       // passes a model its own; the scheduler does not look)
};

// The tokens every request carrying this system message (or raw prompt)
// starts with. For a system message: the longest common token prefix of the
// chat template rendered with it and each of two different user turns, so
// whatever the template puts around the system text is in it and nothing
// of a user's turn is. Empty when the template rejects the conversation.
std::vector<engine::Token> PinnedTokens(const engine::Engine& engine, const PinnedPrompt& pinned);

// "pinned-<16 hex digits>.kvseq": a 64-bit FNV-1a hash of `key` and the tokens.
std::string PinnedFileName(const std::string& key, const std::vector<engine::Token>& tokens);

struct PinnedPruneResult {
  int files_removed = 0;
  uint64_t bytes_removed = 0;
  uint64_t bytes_left = 0;  // pinned-*.kvseq bytes still in the directory
};

// Removes the least recently modified pinned-*.kvseq files in `dir` until
// their total is at most `max_bytes`, never a file whose name is in `keep`
// (the files the caller serves from; they may alone exceed the bound), and
// "*.tmp" files older than ten minutes (a save cut short by a crash; a
// younger one may be another model's save in progress). Other files are
// left alone. A missing directory is an empty one.
PinnedPruneResult PrunePinnedDir(const std::string& dir, uint64_t max_bytes,
                                 const std::vector<std::string>& keep);

}  // namespace outpost::scheduler
