// Value types of the Batch API: a stored file, a batch, one input line and
// what running it gave. Plain values; the store (batch_store.h) persists
// them, the runner (batch_runner.h) moves lines through them and api/
// renders them as OpenAI's objects.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace outpost::batch {

// A file uploaded through /v1/files or written by a finished batch.
struct FileObject {
  std::string id;     // "file-…"
  std::string owner;  // the API key's id ("" when the API is open); never shown
  std::string purpose;
  std::string filename;
  int64_t bytes = 0;
  int64_t created_at = 0;  // Unix seconds
  int64_t expires_at = 0;  // 0: never
};

// OpenAI's batch statuses, in their order of appearance.
enum class BatchStatus {
  kValidating,
  kFailed,
  kInProgress,
  kFinalizing,
  kCompleted,
  kExpired,
  kCancelling,
  kCancelled,
};
const char* BatchStatusName(BatchStatus s);
std::optional<BatchStatus> ParseBatchStatus(const std::string& s);
// Completed, failed, expired, cancelled: nothing more will happen.
bool IsTerminal(BatchStatus s);

struct RequestCounts {
  int64_t total = 0;
  int64_t completed = 0;  // answered 200
  int64_t failed = 0;     // answered with an error, or never run (expired)
};

// Tokens a line's answer used, as its body's `usage` reports them (chat and
// text completions' prompt/completion tokens, responses' input/output tokens,
// embeddings' prompt tokens); a batch's usage is the sum over its lines.
struct TokenUsage {
  int64_t input = 0;
  int64_t cached = 0;  // of input: found in the prefix cache
  int64_t output = 0;
  int64_t reasoning = 0;  // of output
};

struct BatchObject {
  std::string id;     // "batch_…"
  std::string owner;  // as FileObject::owner
  std::string endpoint;
  std::string input_file_id;
  std::string completion_window;  // as given ("24h")
  BatchStatus status = BatchStatus::kValidating;
  // Unix seconds; 0 stands for null.
  int64_t created_at = 0;
  int64_t in_progress_at = 0;
  int64_t expires_at = 0;
  int64_t finalizing_at = 0;
  int64_t completed_at = 0;
  int64_t failed_at = 0;
  int64_t expired_at = 0;
  int64_t cancelling_at = 0;
  int64_t cancelled_at = 0;
  std::string output_file_id;  // "" stands for null
  std::string error_file_id;
  std::string metadata_json = "null";  // an object or null
  std::string errors_json = "null";    // {"object":"list","data":[…]} or null
  RequestCounts counts;
  TokenUsage usage;  // summed over the lines answered so far
  // The model every line names ("" until known: lines that name none take the
  // model of the first answer).
  std::string model;
  // Seconds after their creation the output and error files expire; 0: never.
  int64_t output_expires_after = 0;
  // Request headers every line is sent with (Authorization, X-Data-Class),
  // as a JSON object; never shown.
  std::string headers_json = "{}";
};

// One line of an input file, validated.
struct BatchLine {
  int64_t index = 0;  // 0-based line number in the input file
  std::string custom_id;
  std::string url;        // the endpoint path
  std::string body;       // the request body, JSON text
  std::string order_key;  // lines sharing a prompt prefix sort together
};

// What running a line gave: an HTTP answer (status_code > 0), or, for a line
// that never ran, an error code and message (batch_expired).
struct LineResult {
  int status_code = 0;
  std::string request_id;
  std::string body;  // the response body, JSON text
  std::string error_code;
  std::string error_message;
  TokenUsage usage;   // from the body's `usage`, when it has one
  std::string model;  // the body's `model`, when it names one
};

}  // namespace outpost::batch
