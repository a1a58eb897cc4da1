// libFuzzer: the HTTP front's request parsing as the front configures it
// (Beast's parser with Outpost's header and body limits), the path decoding,
// and the connection table's bookkeeping fed from the parsed requests.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "outpost/api/http_message.h"

namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Several pipelined requests, fed in pieces as a socket would give them.
  boost::beast::flat_buffer buf;
  const size_t step = size > 0 ? 1 + data[0] % 64 : 1;
  size_t fed = 0;
  auto feed = [&] {
    if (fed >= size) return false;
    const size_t n = std::min(step, size - fed);
    auto b = buf.prepare(n);
    std::memcpy(b.data(), data + fed, n);
    buf.commit(n);
    fed += n;
    return true;
  };
  for (int requests = 0; requests < 8; ++requests) {
    http::request_parser<http::string_body> p;
    p.header_limit(1024);
    p.body_limit(4096);
    p.eager(true);
    while (!p.is_done()) {
      if (buf.size() == 0 && !feed()) return 0;
      boost::beast::error_code ec;
      buf.consume(p.put(buf.data(), ec));
      if (ec == http::error::need_more) {
        if (!feed()) return 0;
      } else if (ec) {
        return 0;
      }
    }
    const auto& msg = p.get();
    const std::string target(msg.target());
    (void)outpost::api::PercentDecode(target.substr(0, target.find('?')));
    outpost::api::HttpRequest req;
    for (const auto& f : msg) {
      req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    }
    (void)req.header("authorization");
    (void)msg.keep_alive();
  }
  return 0;
}
