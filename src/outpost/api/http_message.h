// HttpRequest / HttpResponse — one HTTP/1.1 exchange as the handlers see it.
//
// The front (http_front.h) parses the request off the wire and fills an
// HttpRequest; a handler fills the HttpResponse, either with a whole body or
// with a chunk provider for a stream (SSE, JSONL). Plain values, no I/O: a
// handler runs on a worker thread and never touches the socket. Header names
// compare case-insensitively.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::api {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Case-insensitive ASCII comparison, for header names.
bool HeaderNameEquals(const std::string& a, const std::string& b);
// %XX escapes decoded (a malformed escape stays as it is).
std::string PercentDecode(const std::string& s);
// The first value of `key` in a query string ("a=1&b=2"), %-decoded and '+'
// read as a space; nullopt when absent.
std::optional<std::string> QueryParam(const std::string& query, const std::string& key);
// The `limit` query parameter, an integer within [1, max]; `fallback` when
// absent. Errors: InvalidArgument (param "limit") naming the range.
StatusOr<int64_t> QueryLimit(const std::string& query, int64_t fallback, int64_t max);

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string, %-escapes decoded
  std::string query;   // after '?', if any
  HttpHeaders headers;
  std::string body;
  std::string remote_addr;
  // True once the client has closed its side or the connection failed: the
  // work behind this request can stop. Set by the front; always callable.
  std::function<bool()> client_gone = [] { return false; };

  // The first header of that name, or "".
  std::string header(const std::string& name) const;
  bool has_header(const std::string& name) const;
};

// Where a streamed body's chunks go. Write() blocks while the client is
// slower than the producer and more than the front's buffer limit is waiting
// (back-pressure); it returns false once the client is gone or stalled past
// the write timeout, and the provider should then stop.
class ChunkWriter {
 public:
  virtual ~ChunkWriter() = default;
  virtual bool Write(const std::string& data) = 0;
};

struct HttpResponse {
  int status = 200;
  HttpHeaders headers;
  std::string body;
  std::string content_type;
  // A stream: called over and over on the worker thread until it returns
  // false (stop: the stream ends) — each call may block until it has output.
  // The front frames the chunks (chunked transfer encoding) and ends the
  // stream. on_end runs once when the stream is over, whether it finished or
  // the client went away (true: all was written).
  std::function<bool(ChunkWriter& out)> provider;
  std::function<void(bool complete)> on_end;

  void set_header(const std::string& name, const std::string& value);
  std::string header(const std::string& name) const;
  void set_content(std::string content, std::string type) {
    body = std::move(content);
    content_type = std::move(type);
  }
  // A streamed body of this content type; provider returns true to be called
  // again, false when the stream is over.
  void set_stream(std::string type, std::function<bool(ChunkWriter& out)> chunks,
                  std::function<void(bool complete)> end) {
    content_type = std::move(type);
    provider = std::move(chunks);
    on_end = std::move(end);
  }
  bool streamed() const { return static_cast<bool>(provider); }
};

}  // namespace outpost::api
