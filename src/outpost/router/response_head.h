// Response heads and chunked bodies of HTTP/1.1, as the router's own client
// reads them: a minimal head parse (status, Content-Type, Content-Length,
// Transfer-Encoding, Connection) and an incremental chunked decoder. Pure;
// ChunkedDecoder is a value owned by one exchange.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "outpost/util/status.h"

namespace outpost::router {

// The parts of a response head the relay needs.
struct ResponseHead {
  int status = 0;
  std::string content_type;
  int64_t content_length = -1;  // -1: not given
  bool chunked = false;
  bool keep_alive = true;  // HTTP/1.1 default; false on "Connection: close" or HTTP/1.0
};

// Parses "HTTP/1.1 200 OK\r\nName: value\r\n...\r\n" (without the final
// empty line). Errors: InvalidArgument naming what is malformed.
Status ParseResponseHead(std::string_view head, ResponseHead* out);

// Incremental decoder of a chunked body. Feed() consumes what it can and
// appends the payload to *out; done() once the last chunk and trailers ended.
class ChunkedDecoder {
 public:
  // Errors: InvalidArgument on a malformed chunk size or framing.
  Status Feed(std::string_view data, std::string* out);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  State state_ = State::kSize;
  std::string line_;  // partial size or trailer line
  uint64_t remaining_ = 0;
};

}  // namespace outpost::router
