// Engine — what the scheduler needs from an inference engine for one loaded
// model: text in and out, and batched decoding of many sequences at once.
//
// engine/llama_engine.h implements it over llama.cpp; tests/mocks/fake_engine.h
// implements it with a deterministic toy model, so the scheduler is tested
// without a model file.
//
// Threads: the text methods (first group) are const and safe from any thread.
// The decoding methods (second group) belong to the one engine thread that
// owns this object (the scheduler's).
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "outpost/engine/infill.h"
#include "outpost/engine/types.h"
#include "outpost/util/status.h"

namespace outpost::engine {

class Engine {
 public:
  virtual ~Engine() = default;

  // --- Text: any thread ----------------------------------------------------
  // Text → tokens. add_special adds BOS where the model wants it; parse_special
  // turns "<start_of_turn>"-style text into control tokens.
  virtual std::vector<Token> Tokenize(std::string_view text, bool add_special,
                                      bool parse_special) const = 0;
  // Messages rendered with the model's chat template, assistant prefix added
  // (or the last message left open: options.ending). tools (null = none;
  // REQUIRES NativeToolCalls()) are rendered in the template's own tool
  // format, and the prompt then carries the grammar the calls must follow
  // and the parser that reads them back. `options`: for a template with a
  // thinking block, whether it thinks and whether the thinking is split off
  // (ChatPrompt::parser); extra template variables. Errors: InvalidArgument
  // when the template rejects the conversation, or has no thinking block to
  // continue (kContinueReasoning).
  virtual StatusOr<ChatPrompt> ApplyChatTemplate(const std::vector<ChatMessage>& messages,
                                                 const ChatTools* tools,
                                                 const ChatOptions& options) const = 0;
  // True when the chat template has a tool-call format that llama.cpp's chat
  // code can constrain and parse (Llama 3.x, Qwen, Hermes, Mistral, ...).
  virtual bool NativeToolCalls() const = 0;
  // Tokens a sliding-window attention layer sees; 0 = the model has none.
  // Such layers keep only a window of cells, so a sequence cut back to an
  // earlier position may lack the cells its next token needs.
  virtual int32_t SlidingWindow() const = 0;
  // The fill-in-the-middle tokens (engine/infill.h); none of them for a
  // model not trained for it.
  virtual const InfillTokens& Infill() const = 0;
  virtual const std::vector<Token>& EndOfGenerationTokens() const = 0;
  virtual bool IsEndOfGeneration(Token token) const = 0;
  // Sampling defaults for knobs a request leaves unset (config, else GGUF,
  // else llama.cpp's).
  virtual const SamplingDefaults& DefaultSampling() const = 0;
  // JSON schema (text) → GBNF grammar. Errors: InvalidArgument naming
  // `param` (the request field the schema came from) and the unsupported
  // keyword.
  virtual StatusOr<std::string> GrammarFromJsonSchema(const std::string& schema,
                                                      const std::string& param) const = 0;
  // Whether GBNF text a client wrote can be used as it is (llama.cpp's
  // parser, token references read with this vocabulary, the sampler's own
  // checks). Errors: InvalidArgument naming `param`, the reason and where.
  virtual Status CheckGrammar(const std::string& gbnf, const std::string& param) const = 0;
  // Raw bytes of one token (may be part of a UTF-8 character). Control
  // tokens render as empty unless `special`.
  virtual std::string TokenPiece(Token token, bool special) const = 0;
  virtual int32_t VocabSize() const = 0;

  // --- Decoding: engine thread only ----------------------------------------
  // One batch per step. Add returns the token's index in the batch (pass it to
  // Sample when want_logits). REQUIRES: BatchSize() < the batch capacity.
  virtual void ClearBatch() = 0;
  virtual int32_t Add(Token token, int32_t pos, SeqId seq, bool want_logits) = 0;
  virtual int32_t BatchSize() const = 0;
  // Runs the model on the batch. Errors: ResourceExhausted (no KV slot),
  // Cancelled, Internal.
  // Cost: each sequence has its own KV stream, and the model runs once per
  // group of consecutive sequence ids holding equally many of the batch's
  // tokens (llama.cpp's split of a multi-stream batch): four sequences
  // 0-3 with one token each are one pass over the weights, 0, 2, 5 and 9
  // are four, and 0-3 with 5, 1, 1, 1 tokens are two (4 rows, then 4 rows of
  // sequence 0). The scheduler keeps running sequences consecutive and
  // plans guesses with this in mind.
  virtual Status Decode() = 0;
  // Decode(), but cut short once `interrupt` becomes true (set from any
  // thread): then Cancelled, with none of the batch left in the KV, so the
  // same batch may be built and run again later. Where that cannot be
  // promised (sliding-window or recurrent memory) or the backend does not
  // stop midway (GPU), it runs to the end as Decode().
  virtual Status DecodeInterruptible(const std::atomic<bool>& interrupt) = 0;

  // Sets up sequence `seq`'s sampler for a new request. Errors:
  // InvalidArgument naming "grammar" when params.grammar does not parse.
  virtual Status StartSequence(SeqId seq, const SamplingParams& params) = 0;
  // Samples seq's next token from the logits at batch index idx of the last
  // Decode(); kNoToken when the sequence's grammar allows no token there,
  // kGrammarTooAmbiguous (grammar_limits.h) past the grammar engine's bounds:
  // the sequence cannot go on. REQUIRES: StartSequence(seq) since RemoveSequence(seq).
  virtual Token Sample(SeqId seq, int32_t idx) = 0;
  // out[i] = Sample(seqs[i], idx[i]) for every i, as if one after another
  // (each sequence's sampler sees its own rows in order); an engine may sample
  // several sequences at once. REQUIRES: no sequence twice, equal sizes.
  virtual void SampleMany(std::span<const SeqId> seqs, std::span<const int32_t> idx,
                          std::span<Token> out) {
    for (size_t i = 0; i < seqs.size(); ++i) out[i] = Sample(seqs[i], idx[i]);
  }
  // log p(token) under the raw distribution at batch index idx, with the
  // n_top (may be 0) most likely tokens there; one pass over the vocabulary.
  virtual TokenLogprob TopLogProbs(int32_t idx, Token token, int32_t n_top) const = 0;
  // Makes dst's KV a copy of src's (dst holds nothing). Takes effect at the
  // next Decode(), before the batch is computed; copies made before it take
  // effect in the order they were made, each from what the earlier ones
  // left, so a sequence may be the src of one copy, then be emptied and be
  // the dst of the next (its old cells are copied out first).
  virtual void CopySequence(SeqId src, SeqId dst) = 0;
  // Makes dst's KV a copy of the cells src holds, at once (what dst held is
  // dropped). Costs a copy of src's cells through a buffer of their size,
  // not of the whole stream as CopySequence() does. REQUIRES: no
  // CopySequence() from or to either is pending. Errors: Internal (dst then
  // holds nothing).
  virtual Status CopyCells(SeqId src, SeqId dst) = 0;
  // Moves a running request from src to dst: CopyCells(src, dst), then src's
  // sampler, with its state (grammar, penalties, random stream), becomes
  // dst's. src keeps its cells, like any cached KV, and has no sampler until
  // StartSequence(src). Errors: as CopyCells (the sampler then stays).
  virtual Status MoveSequence(SeqId src, SeqId dst) = 0;
  // The lowest position whose cells seq still holds (sliding-window layers
  // drop cells that fell out of every window); -1 when it holds none.
  virtual int32_t SequencePosMin(SeqId seq) const = 0;
  // Drops seq's KV cells at positions >= keep (a cached prefix reused up to
  // there). False when the memory cannot cut a sequence (nothing changed).
  virtual bool TrimSequence(SeqId seq, int32_t keep) = 0;
  // Frees seq's KV cells and sampler at once.
  virtual void RemoveSequence(SeqId seq) = 0;
  // Writes seq's KV cells, with `tokens` (what they hold, by position), to
  // the file `path` (llama.cpp's sequence state format). Errors: Internal
  // naming the path.
  virtual Status SaveSequence(SeqId seq, const std::string& path,
                              std::span<const Token> tokens) = 0;
  // Makes seq's KV what SaveSequence() wrote to `path` (what seq held before
  // is dropped) and returns the tokens stored with it, at most max_tokens.
  // Errors (seq then holds nothing): NotFound (no such file),
  // InvalidArgument (written for another model or context shape, or
  // damaged). The caller checks that the tokens are what it expects: the
  // file format does not name the model.
  virtual StatusOr<std::vector<Token>> LoadSequence(SeqId seq, const std::string& path,
                                                    size_t max_tokens) = 0;

  // Bytes of KV cache allocated for all sequences.
  virtual uint64_t KvBytesAllocated() const = 0;
};

}  // namespace outpost::engine
