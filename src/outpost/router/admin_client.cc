#include "outpost/router/admin_client.h"

#include <httplib.h>

#include <chrono>

namespace outpost::router {

StatusOr<AdminReply> AdminCall(const std::string& server, const std::string& method,
                               const std::string& path, const std::string& body,
                               const std::string& key, const std::string& ca_file,
                               int64_t timeout_ms) {
  const bool scheme = server.rfind("http://", 0) == 0 || server.rfind("https://", 0) == 0;
  if (!scheme || server.find('/', server.find("://") + 3) != std::string::npos) {
    return Status::InvalidArgument(
        "--server must be http(s)://HOST:PORT, without a path; got '" + server + "'", "server");
  }
  httplib::Client cli(server);
  if (!cli.is_valid()) {
    return Status::InvalidArgument("--server '" + server + "' is not a usable URL", "server");
  }
  cli.set_connection_timeout(std::chrono::seconds(5));
  cli.set_read_timeout(std::chrono::milliseconds(timeout_ms));
  cli.set_write_timeout(std::chrono::milliseconds(timeout_ms));
  cli.set_keep_alive(false);
  if (!key.empty()) cli.set_bearer_token_auth(key);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!ca_file.empty()) cli.set_ca_cert_path(ca_file);
#endif
  httplib::Result res = method == "GET"      ? cli.Get(path)
                        : method == "DELETE" ? cli.Delete(path)
                                             : cli.Post(path, body, "application/json");
  if (!res) {
    return Status::Unavailable(method + " " + server + path +
                               " got no answer: " + httplib::to_string(res.error()));
  }
  return AdminReply{res->status, res->body};
}

}  // namespace outpost::router
