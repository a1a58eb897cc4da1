// FakeEngine — an engine::Engine with a toy model, for scheduler tests
// without a model file. Tokens are bytes (id = byte value); token 256 is the
// only end-of-generation token. Every sequence answers the configured reply
// one byte per step and then ends, unless end-of-generation is banned
// (ignore_eos), in which case it goes on with 'x'. It checks what a real
// engine would reject (positions out of order, batches over capacity) and
// records every batch, so tests can assert on chunking and freed KV cells.
// Engine-thread methods are not synchronised (like the real one).
#pragma once

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "outpost/engine/engine.h"
#include "outpost/engine/grammar_limits.h"

namespace outpost::testing {

class FakeEngine final : public engine::Engine {
 public:
  static constexpr engine::Token kEog = 256;

  FakeEngine(int32_t sessions, int32_t batch_size, std::string reply = "hello")
      : batch_size_(batch_size),
        reply_(std::move(reply)),
        kv_(static_cast<size_t>(sessions), 0),
        produced_(static_cast<size_t>(sessions), 0),
        eog_banned_(static_cast<size_t>(sessions), false) {}

  std::vector<engine::Token> Tokenize(std::string_view text, bool, bool) const override {
    return {text.begin(), text.end()};
  }
  StatusOr<engine::ChatPrompt> ApplyChatTemplate(const std::vector<engine::ChatMessage>& messages,
                                                 const engine::ChatTools*,
                                                 const engine::ChatOptions&) const override {
    engine::ChatPrompt out;
    for (const auto& m : messages) {
      if (m.role != "system" && m.role != "user" && m.role != "assistant")
        return Status::InvalidArgument("role '" + m.role + "' is not supported", "messages");
      out.text += m.role + ": " + m.content + "\n";
    }
    out.text += "assistant: ";
    out.stops = stops_;
    return out;
  }
  bool NativeToolCalls() const override { return false; }
  const std::vector<engine::Token>& EndOfGenerationTokens() const override { return eog_; }
  bool IsEndOfGeneration(engine::Token t) const override { return t == kEog; }
  std::string TokenPiece(engine::Token t, bool) const override {
    return t < 256 ? std::string(1, static_cast<char>(t)) : std::string();
  }
  int32_t VocabSize() const override { return 257; }

  void ClearBatch() override { batch_.clear(); }
  int32_t Add(engine::Token token, int32_t pos, engine::SeqId seq, bool want_logits) override {
    if (static_cast<int32_t>(batch_.size()) >= batch_size_) ++violations;
    batch_.push_back({token, pos, seq, want_logits});
    return static_cast<int32_t>(batch_.size()) - 1;
  }
  int32_t BatchSize() const override { return static_cast<int32_t>(batch_.size()); }
  // Interrupted when `interrupt` is set once on_decode_start (a test's hook:
  // what arrives while the step runs) has run: nothing of the batch is kept.
  Status DecodeInterruptible(const std::atomic<bool>& interrupt) override {
    if (on_decode_start) on_decode_start();
    if (interrupt.load()) {
      ++interrupted;
      return Status::Cancelled("decode interrupted");
    }
    return Decode();
  }
  Status Decode() override {
    if (fail_next_decode) {
      fail_next_decode = false;
      return Status::Internal("injected decode failure");
    }
    pending_copy_.clear();
    for (const auto& e : batch_) {
      int32_t& n = kv_[static_cast<size_t>(e.seq)];
      if (e.pos != n) ++violations;  // positions must continue the sequence
      ++n;
    }
    batches.push_back(batch_);
    if (on_decode) on_decode(batch_.size());
    return Status::Ok();
  }
  const engine::SamplingDefaults& DefaultSampling() const override { return defaults; }
  StatusOr<std::string> GrammarFromJsonSchema(const std::string& schema,
                                              const std::string&) const override {
    if (schema.find("\"not\"") != std::string::npos)
      return Status::InvalidArgument("keyword 'not'", "response_format");
    return std::string("root ::= \"{}\"");
  }
  Status CheckGrammar(const std::string& gbnf, const std::string& param) const override {
    return engine::CheckGrammar(gbnf, param);  // no vocabulary: no token references
  }
  Status StartSequence(engine::SeqId seq, const engine::SamplingParams& p) override {
    started.push_back(p);
    produced_[static_cast<size_t>(seq)] = 0;
    bool banned = false;
    for (const auto& [t, b] : p.logit_bias) banned = banned || (t == kEog && b <= -100.0f);
    eog_banned_[static_cast<size_t>(seq)] = banned;
    return Status::Ok();
  }
  engine::Token Sample(engine::SeqId seq, int32_t idx) override {
    // A sequence samples from its own logits, or (a forked choice, once) its source's.
    const bool own = idx >= 0 && idx < BatchSize() && batch_[static_cast<size_t>(idx)].seq == seq;
    const auto from = forked_.find(seq);
    const bool forked = from != forked_.end() && idx >= 0 && idx < BatchSize() &&
                        batch_[static_cast<size_t>(idx)].seq == from->second;
    if (!own && !forked) ++violations;
    if (forked) forked_.erase(from);
    size_t& k = produced_[static_cast<size_t>(seq)];
    if (dead_end_at && k >= *dead_end_at) return engine::kNoToken;
    if (throw_at && k >= *throw_at) throw std::runtime_error("Unexpected empty grammar stack");
    const size_t i = k++;
    if (i < reply_.size()) return static_cast<unsigned char>(reply_[i]);
    return eog_banned_[static_cast<size_t>(seq)] ? 'x' : kEog;
  }
  // The sampled token at `logprob`, then alternatives 'a', 'b', ... below it.
  engine::TokenLogprob TopLogProbs(int32_t idx, engine::Token token, int32_t n) const override {
    engine::TokenLogprob lp;
    lp.token = token;
    lp.logprob = static_cast<float>(logprob);
    for (int32_t i = 0; i < n; ++i)
      lp.top.emplace_back('a' + i, static_cast<float>(logprob) - 1.0f - static_cast<float>(i));
    return lp;
  }
  void CopySequence(engine::SeqId src, engine::SeqId dst) override {
    if (kv_[static_cast<size_t>(dst)] != 0) ++violations;  // dst must be empty
    pending_copy_.insert(src);                             // the data moves at the next Decode()
    pending_copy_.insert(dst);
    kv_[static_cast<size_t>(dst)] = kv_[static_cast<size_t>(src)];
    forked_[dst] = src;
    ++copies;
  }
  // At once: a copy pending from or into either would read or overwrite
  // the cells. fail_next_cell_copy makes the next one fail.
  Status CopyCells(engine::SeqId src, engine::SeqId dst) override {
    if (pending_copy_.count(src) > 0 || pending_copy_.count(dst) > 0) ++violations;
    ++cell_copies;
    if (fail_next_cell_copy) {
      fail_next_cell_copy = false;
      kv_[static_cast<size_t>(dst)] = 0;
      return Status::Internal("injected cell copy failure");
    }
    kv_[static_cast<size_t>(dst)] = kv_[static_cast<size_t>(src)];
    return Status::Ok();
  }
  Status MoveSequence(engine::SeqId src, engine::SeqId dst) override {
    if (Status st = CopyCells(src, dst); !st.ok()) return st;
    produced_[static_cast<size_t>(dst)] = produced_[static_cast<size_t>(src)];
    eog_banned_[static_cast<size_t>(dst)] = eog_banned_[static_cast<size_t>(src)];
    ++moves;
    return Status::Ok();
  }
  bool TrimSequence(engine::SeqId seq, int32_t keep) override {
    int32_t& n = kv_[static_cast<size_t>(seq)];
    if (keep > n) ++violations;
    n = std::min(n, keep);
    ++trims;
    return true;
  }
  int32_t SlidingWindow() const override { return sliding_window; }
  const engine::InfillTokens& Infill() const override { return infill; }
  // A sliding window keeps the last `sliding_window` positions (0 = all).
  int32_t SequencePosMin(engine::SeqId seq) const override {
    const int32_t n = kv_[static_cast<size_t>(seq)];
    if (n == 0) return -1;
    return sliding_window > 0 ? std::max(0, n - sliding_window) : 0;
  }
  void RemoveSequence(engine::SeqId seq) override {
    kv_[static_cast<size_t>(seq)] = 0;
    ++removed[seq];
  }
  // A sequence state file: "FAKESEQ1", the cell count, then the tokens (one
  // int32 each). Loading checks the magic and the count against the size.
  Status SaveSequence(engine::SeqId seq, const std::string& path,
                      std::span<const engine::Token> tokens) override {
    ++saves;
    const int32_t n = kv_[static_cast<size_t>(seq)];
    if (static_cast<size_t>(n) != tokens.size()) ++violations;  // tokens must match the cells
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write("FAKESEQ1", 8);
    out.write(reinterpret_cast<const char*>(&n), sizeof n);
    out.write(reinterpret_cast<const char*>(tokens.data()),
              static_cast<std::streamsize>(tokens.size() * sizeof(engine::Token)));
    if (!out) return Status::Internal("cannot write '" + path + "'");
    return Status::Ok();
  }
  StatusOr<std::vector<engine::Token>> LoadSequence(engine::SeqId seq, const std::string& path,
                                                    size_t max_tokens) override {
    ++loads;
    // A real engine writes the cells at once: a copy still pending from or
    // into them would read or overwrite them.
    if (pending_copy_.count(seq) > 0) ++violations;
    kv_[static_cast<size_t>(seq)] = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::NotFound("no file '" + path + "'");
    char magic[8] = {};
    int32_t n = -1;
    in.read(magic, 8);
    in.read(reinterpret_cast<char*>(&n), sizeof n);
    if (!in || std::string(magic, 8) != "FAKESEQ1" || n < 0 || static_cast<size_t>(n) > max_tokens)
      return Status::InvalidArgument("'" + path + "' is not a sequence state");
    std::vector<engine::Token> tokens(static_cast<size_t>(n));
    in.read(reinterpret_cast<char*>(tokens.data()),
            static_cast<std::streamsize>(tokens.size() * sizeof(engine::Token)));
    if (!in) return Status::InvalidArgument("'" + path + "' is cut short");
    kv_[static_cast<size_t>(seq)] = n;
    return tokens;
  }
  uint64_t KvBytesAllocated() const override { return 4096; }

  // Defaults a request's unset sampling knobs take; the params each
  // sequence was started with.
  engine::SamplingDefaults defaults;
  // Called after each Decode() with the batch's token count (a test advances
  // its simulated clock by a modelled step cost).
  std::function<void(size_t)> on_decode;
  // Called as DecodeInterruptible() begins; steps it interrupted.
  std::function<void()> on_decode_start;
  int interrupted = 0;
  int copies = 0;       // CopySequence calls
  int moves = 0;        // MoveSequence calls that succeeded
  int cell_copies = 0;  // CopyCells calls (MoveSequence's included)
  bool fail_next_cell_copy = false;
  int trims = 0;  // TrimSequence calls
  int saves = 0;  // SaveSequence calls
  int loads = 0;  // LoadSequence calls
  int32_t sliding_window = 0;
  engine::InfillTokens infill;  // none: the toy model is not trained to fill in
  // Sample() gives kNoToken (a grammar that allows nothing) from this token on.
  std::optional<size_t> dead_end_at;
  // Sample() throws (as llama.cpp's grammar did) from this token on.
  std::optional<size_t> throw_at;
  std::vector<engine::SamplingParams> started;

  // KV cells sequence `seq` holds now.
  int32_t KvCells(engine::SeqId seq) const { return kv_[static_cast<size_t>(seq)]; }
  int32_t TotalKvCells() const {
    int32_t n = 0;
    for (int32_t c : kv_) n += c;
    return n;
  }

  struct Entry {
    engine::Token token;
    int32_t pos;
    engine::SeqId seq;
    bool logits;
  };
  std::vector<std::vector<Entry>> batches;  // every decoded batch, in order
  std::map<engine::SeqId, int> removed;     // RemoveSequence calls by sequence
  int violations = 0;                       // contract breaches seen
  bool fail_next_decode = false;
  double logprob = -0.5;

 private:
  const int32_t batch_size_;
  const std::string reply_;
  std::vector<int32_t> kv_;
  std::vector<size_t> produced_;
  std::vector<bool> eog_banned_;
  std::map<engine::SeqId, engine::SeqId> forked_;  // copied, not yet sampled: dst -> src
  std::set<engine::SeqId> pending_copy_;           // copies' ends until the next Decode()
  std::vector<Entry> batch_;
  const std::vector<std::string> stops_;
  const std::vector<engine::Token> eog_{kEog};
};

}  // namespace outpost::testing
