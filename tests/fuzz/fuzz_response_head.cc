// libFuzzer: the router's HTTP/1.1 client reading an upstream's answer — the
// response-head parser and the incremental chunked decoder, fed in pieces.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "outpost/router/response_head.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t split = in.find("\r\n\r\n");
  outpost::router::ResponseHead head;
  (void)outpost::router::ParseResponseHead(in.substr(0, split), &head);
  if (split == std::string_view::npos) return 0;
  // The body through the chunked decoder, in pieces whose sizes come from
  // the first byte (boundaries inside sizes, CRLFs and trailers).
  std::string_view body = in.substr(split + 4);
  const size_t step = size > 0 ? 1 + data[0] % 7 : 1;
  outpost::router::ChunkedDecoder dec;
  std::string out;
  while (!body.empty() && !dec.done()) {
    const std::string_view piece = body.substr(0, step);
    body.remove_prefix(piece.size());
    if (!dec.Feed(piece, &out).ok()) break;
  }
  return 0;
}
