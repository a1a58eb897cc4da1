#include "outpost/engine/context.h"

#include <llama.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <utility>

#include "outpost/util/cpus.h"

namespace outpost::engine {

namespace {
ggml_type ToGgml(KvType t) {
  switch (t) {
    case KvType::kF16:
      return GGML_TYPE_F16;
    case KvType::kQ8_0:
      return GGML_TYPE_Q8_0;
    case KvType::kQ4_0:
      return GGML_TYPE_Q4_0;
  }
  return GGML_TYPE_F16;
}
}  // namespace

namespace {

std::string AsciiLower(std::string_view v) {
  std::string out(v);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// GOMP_SPINCOUNT as libgomp reads it: INFINITE / INFINITY, or a number with
// an optional k, M, G or T multiplier; nullopt when it is not one.
std::optional<unsigned long long> ParseSpinCount(std::string_view s) {
  const std::string lower = AsciiLower(s);
  if (lower == "infinite" || lower == "infinity") return ~0ull;
  unsigned long long n = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) != 0; ++i) {
    if (n > (~0ull - 9) / 10) return ~0ull;
    n = n * 10 + static_cast<unsigned long long>(s[i] - '0');
  }
  if (i == 0) return std::nullopt;
  if (i == s.size()) return n;
  if (i + 1 != s.size()) return std::nullopt;
  switch (s[i]) {
    case 'k':
      return n * 1000ull;
    case 'M':
      return n * 1000000ull;
    case 'G':
      return n * 1000000000ull;
    case 'T':
      return n * 1000000000000ull;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::vector<std::string> CpuThreadWarnings(int32_t threads, int32_t threads_batch, int usable,
                                           bool openmp, const char* wait_policy,
                                           const char* spin_count) {
  std::vector<std::string> out;
  const std::string cpus = std::to_string(usable) + (usable == 1 ? " CPU" : " CPUs");
  for (const auto& [name, n] : {std::pair<const char*, int32_t>{"threads", threads},
                                std::pair<const char*, int32_t>{"threads_batch", threads_batch}}) {
    if (n > usable) {
      out.push_back(std::string(name) + " " + std::to_string(n) + " is more than the " + cpus +
                    " this process may use (affinity and cgroup quota): llama.cpp's threads then "
                    "wait for each other at every step (decode ran 3x slower with 4 threads on "
                    "2 CPUs); set it to 0 (= " +
                    std::to_string(usable) + ") or run `outpost bench --tune`");
    }
  }
  if (!openmp) return out;
  std::optional<unsigned long long> spin;
  if (spin_count != nullptr) spin = ParseSpinCount(spin_count);
  const std::string policy = AsciiLower(wait_policy != nullptr ? wait_policy : "");
  if (spin) {
    if (*spin < 1000) {
      out.push_back("GOMP_SPINCOUNT=" + std::string(spin_count) +
                    " in the environment: llama.cpp's OpenMP threads sleep at each of a step's "
                    "barriers instead of spinning (decode ran 3x slower at 0); unset it or set "
                    "1000 or more, and restart");
    }
  } else if (policy == "passive") {
    out.push_back(
        "OMP_WAIT_POLICY=" + std::string(wait_policy) +
        " in the environment: llama.cpp's OpenMP threads sleep at each of a step's barriers "
        "instead of spinning (decode ran 5x slower); unset it and restart");
  }
  return out;
}

std::vector<std::string> CpuThreadWarnings(int32_t threads, int32_t threads_batch) {
  static const bool openmp =
      std::string(llama_print_system_info()).find("OPENMP = 1") != std::string::npos;
  return CpuThreadWarnings(threads, threads_batch, util::UsableCpus().usable, openmp,
                           std::getenv("OMP_WAIT_POLICY"), std::getenv("GOMP_SPINCOUNT"));
}

llama_context_params Context::Params(const ContextOptions& o) {
  llama_context_params cp = llama_context_default_params();
  cp.n_seq_max = static_cast<uint32_t>(o.sessions);
  cp.n_ctx = static_cast<uint32_t>(o.sessions) * static_cast<uint32_t>(o.ctx_per_session);
  cp.n_batch = static_cast<uint32_t>(o.batch_size);
  cp.n_ubatch = static_cast<uint32_t>(o.batch_size);
  const int threads = o.n_threads > 0 ? o.n_threads : util::UsableCpus().usable;
  cp.n_threads = threads;
  cp.n_threads_batch = o.n_threads_batch > 0 ? o.n_threads_batch : threads;
  cp.kv_unified = false;  // one KV stream per sequence: ctx_per_session each, no sharing
  cp.type_k = ToGgml(o.kv_type);
  cp.type_v = ToGgml(o.kv_type);
  // Quantised V needs flash attention in llama.cpp.
  if (o.kv_type != KvType::kF16) cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
  cp.no_perf = true;
  // Outpost asks for at most one output (logits row) per sequence per step, so
  // reserve logits for `sessions` rows, not batch_size: for a 262k vocabulary and a
  // 512-token batch that is the difference between 512 MiB and a few MiB.
  cp.n_outputs_max = static_cast<uint32_t>(o.max_outputs > 0 ? o.max_outputs : o.sessions);
  return cp;
}

StatusOr<std::unique_ptr<Context>> Context::Create(const Model& model, const ContextOptions& o) {
  const llama_context_params cp = Params(o);
  llama_context* ctx = llama_init_from_model(model.raw(), cp);
  if (ctx == nullptr) {
    return Status::ResourceExhausted("llama.cpp could not create a context for " +
                                     std::to_string(o.sessions) + " sequences x " +
                                     std::to_string(o.ctx_per_session) + " tokens");
  }
  std::unique_ptr<Context> c(new Context());
  c->options_ = o;
  c->ctx_ = ctx;
  c->batch_ = std::make_unique<llama_batch>(llama_batch_init(o.batch_size, 0, 1));
  c->batch_->n_tokens = 0;
  // An interrupted decode can be undone exactly only where cutting a
  // sequence's newest cells restores it: not where adding cells may have
  // evicted sliding-window ones, nor in recurrent state.
  const llama_model* lm = model.raw();
  c->can_interrupt_ =
      llama_model_n_swa(lm) == 0 && !llama_model_is_recurrent(lm) && !llama_model_is_hybrid(lm);
  if (c->can_interrupt_) llama_set_abort_callback(ctx, &Context::AbortRequested, c.get());
  // KV bytes = the full-attention formula, capped by what the cache holds.
  const auto& mi = model.info();
  c->kv_bytes_ = KvBytesPerToken(mi.n_layers, mi.n_kv_heads, mi.head_dim_k, mi.head_dim_v,
                                 KvBytesPerElement(o.kv_type)) *
                 static_cast<uint64_t>(cp.n_ctx);
  return c;
}

Context::~Context() {
  if (batch_) llama_batch_free(*batch_);
  if (ctx_) llama_free(ctx_);
}

void Context::ClearBatch() {
  batch_->n_tokens = 0;
}

int32_t Context::Add(Token token, int32_t pos, SeqId seq, bool want_logits) {
  const int32_t i = batch_->n_tokens;
  batch_->token[i] = token;
  batch_->pos[i] = pos;
  batch_->n_seq_id[i] = 1;
  batch_->seq_id[i][0] = seq;
  batch_->logits[i] = want_logits ? 1 : 0;
  batch_->n_tokens = i + 1;
  return i;
}

int32_t Context::BatchSize() const {
  return batch_->n_tokens;
}

namespace {
Status DecodeStatus(int32_t rc) {
  switch (rc) {
    case 0:
      return Status::Ok();
    case 1:
      return Status::ResourceExhausted("no KV cache slot for the batch");
    case 2:
      return Status::Cancelled("decode aborted");
    case -1:
      return Status::InvalidArgument("invalid batch");
    default:
      return Status::Internal("llama_decode failed with code " + std::to_string(rc));
  }
}
}  // namespace

Status Context::Decode() {
  return DecodeStatus(llama_decode(ctx_, *batch_));
}

bool Context::AbortRequested(void* self) {
  const std::atomic<bool>* flag = static_cast<Context*>(self)->interrupt_;
  return flag != nullptr && flag->load(std::memory_order_relaxed);
}

Status Context::DecodeInterruptible(const std::atomic<bool>& interrupt) {
  if (!can_interrupt_) return Decode();
  interrupt_ = &interrupt;
  const int32_t rc = llama_decode(ctx_, *batch_);
  interrupt_ = nullptr;
  if (rc != 2) return DecodeStatus(rc);
  // llama.cpp took the interrupted micro-batch's cells back out; a batch it
  // had split (one KV stream per sequence) may have earlier micro-batches in
  // the cache: cut every sequence back to where this batch began.
  std::vector<std::pair<llama_seq_id, llama_pos>> first;
  for (int32_t i = 0; i < batch_->n_tokens; ++i) {
    const llama_seq_id s = batch_->seq_id[i][0];
    auto it = std::find_if(first.begin(), first.end(), [s](const auto& f) { return f.first == s; });
    if (it == first.end()) {
      first.emplace_back(s, batch_->pos[i]);
    } else {
      it->second = std::min(it->second, batch_->pos[i]);
    }
  }
  llama_memory_t mem = llama_get_memory(ctx_);
  for (const auto& [s, p] : first) llama_memory_seq_rm(mem, s, p, -1);
  return Status::Cancelled("decode interrupted");
}

namespace {

// log Σ exp(logits), computed from the largest so nothing overflows.
double LogNormalizer(const float* logits, int32_t n) {
  float max_l = logits[0];
  for (int32_t i = 1; i < n; ++i) max_l = std::max(max_l, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(logits[i] - max_l));
  return static_cast<double>(max_l) + std::log(sum);
}

}  // namespace

void Context::LogProbs(int32_t idx, std::vector<float>* out) const {
  const float* logits = llama_get_logits_ith(ctx_, idx);
  const int32_t n = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx_)));
  const float log_z = static_cast<float>(LogNormalizer(logits, n));
  out->resize(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) (*out)[static_cast<size_t>(i)] = logits[i] - log_z;
}

TokenLogprob Context::TopLogProbs(int32_t idx, Token token, int32_t n_top) const {
  const float* logits = llama_get_logits_ith(ctx_, idx);
  const int32_t n = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(ctx_)));
  const double log_z = LogNormalizer(logits, n);
  TokenLogprob out;
  out.token = token;
  out.logprob = static_cast<float>(logits[token] - log_z);
  if (n_top <= 0) return out;
  // A min-heap of the best n_top (ties: lower id first, as greedy picks).
  auto worse = [](const std::pair<Token, float>& a, const std::pair<Token, float>& b) {
    return a.second > b.second || (a.second == b.second && a.first < b.first);
  };
  std::vector<std::pair<Token, float>>& top = out.top;
  top.reserve(static_cast<size_t>(n_top) + 1);
  for (Token i = 0; i < n; ++i) {
    if (static_cast<int32_t>(top.size()) == n_top && logits[i] <= top.front().second) continue;
    top.emplace_back(i, logits[i]);
    std::push_heap(top.begin(), top.end(), worse);
    if (static_cast<int32_t>(top.size()) > n_top) {
      std::pop_heap(top.begin(), top.end(), worse);
      top.pop_back();
    }
  }
  std::sort_heap(top.begin(), top.end(), worse);
  for (auto& [t, v] : top) v = static_cast<float>(v - log_z);
  return out;
}

int32_t Context::Threads() const {
  return llama_n_threads(ctx_);
}

void Context::CopySequence(SeqId src, SeqId dst) {
  llama_memory_seq_cp(llama_get_memory(ctx_), src, dst, -1, -1);
}

Status Context::CopyCells(SeqId src, SeqId dst) {
  RemoveSequence(dst);
  const size_t n = llama_state_seq_get_size(ctx_, src);
  std::vector<uint8_t> buf(n);
  if (n == 0 || llama_state_seq_get_data(ctx_, buf.data(), n, src) != n) {
    return Status::Internal("cannot read the KV cells of sequence " + std::to_string(src));
  }
  if (llama_state_seq_set_data(ctx_, buf.data(), n, dst) == 0) {
    RemoveSequence(dst);  // a partial write leaves nothing behind
    return Status::Internal("cannot write the KV cells of sequence " + std::to_string(src) +
                            " into sequence " + std::to_string(dst));
  }
  return Status::Ok();
}

bool Context::TrimSequence(SeqId seq, int32_t keep) {
  return llama_memory_seq_rm(llama_get_memory(ctx_), seq, keep, -1);
}

int32_t Context::SequencePosMin(SeqId seq) const {
  return llama_memory_seq_pos_min(llama_get_memory(ctx_), seq);
}

void Context::RemoveSequence(SeqId seq) {
  llama_memory_seq_rm(llama_get_memory(ctx_), seq, -1, -1);
}

Status Context::SaveSequence(SeqId seq, const std::string& path, std::span<const Token> tokens) {
  if (llama_state_seq_save_file(ctx_, path.c_str(), seq, tokens.data(), tokens.size()) == 0) {
    return Status::Internal("cannot write the sequence state file '" + path + "'");
  }
  return Status::Ok();
}

StatusOr<std::vector<Token>> Context::LoadSequence(SeqId seq, const std::string& path,
                                                   size_t max_tokens) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    RemoveSequence(seq);
    return Status::NotFound("no sequence state file '" + path + "'");
  }
  std::vector<Token> tokens(max_tokens);
  size_t n = 0;
  if (llama_state_seq_load_file(ctx_, path.c_str(), seq, tokens.data(), tokens.size(), &n) == 0) {
    RemoveSequence(seq);  // a partial restore leaves nothing behind
    return Status::InvalidArgument("'" + path +
                                   "' is not a sequence state of this model and context shape, "
                                   "or it is damaged (llama.cpp's log says which)");
  }
  tokens.resize(n);
  return tokens;
}

}  // namespace outpost::engine
