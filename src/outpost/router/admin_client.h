// AdminCall — one request to a running Outpost's /admin/ API, for the CLI
// (`outpost model activate … --server URL`): HTTP or HTTPS (cpp-httplib, as
// the router's other calls), the admin key as a bearer token, one fresh
// connection, bounded by `timeout_ms` (a load can take a while).
// Thread-safe; holds no state.
#pragma once

#include <cstdint>
#include <string>

#include "outpost/util/status.h"

namespace outpost::router {

struct AdminReply {
  int status = 0;
  std::string body;
};

// `server` is "http(s)://host:port"; `path` starts with /admin/. Errors:
// InvalidArgument (a bad URL, naming "server"), Unavailable (no answer:
// what failed). Any HTTP answer, error statuses included, is a reply.
StatusOr<AdminReply> AdminCall(const std::string& server, const std::string& method,
                               const std::string& path, const std::string& body,
                               const std::string& key, const std::string& ca_file,
                               int64_t timeout_ms);

}  // namespace outpost::router
