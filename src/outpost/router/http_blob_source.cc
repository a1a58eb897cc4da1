#include "outpost/router/http_blob_source.h"

#include <httplib.h>

#include <chrono>
#include <cstdlib>

namespace outpost::router {

Status HttpBlobSource::Get(const std::string& url, uint64_t offset, const std::string& validator,
                           const std::function<bool(const Head&)>& on_head,
                           const std::function<bool(const char* data, size_t n)>& on_data) {
  const size_t scheme_end = url.find("://");
  const size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : url.find('/', scheme_end + 3);
  if (path_start == std::string::npos) {
    return Status::InvalidArgument("'" + url + "' has no path", "url");
  }
  httplib::Client cli(url.substr(0, path_start));
  if (!cli.is_valid()) return Status::InvalidArgument("'" + url + "' is not a usable URL", "url");
  cli.set_connection_timeout(std::chrono::milliseconds(options_.connect_timeout_ms));
  cli.set_read_timeout(std::chrono::milliseconds(options_.stall_timeout_ms));
  cli.set_follow_location(true);
  cli.set_keep_alive(false);
  if (!options_.bearer_token.empty()) cli.set_bearer_token_auth(options_.bearer_token);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!options_.ca_file.empty()) cli.set_ca_cert_path(options_.ca_file);
#endif
  httplib::Headers headers;
  if (offset > 0) {
    headers.emplace("Range", "bytes=" + std::to_string(offset) + "-");
    if (!validator.empty()) headers.emplace("If-Range", validator);
  }
  int status = 0;
  bool stopped = false;
  std::string bad_range;
  auto res = cli.Get(
      url.substr(path_start), headers,
      [&](const httplib::Response& r) {
        status = r.status;
        if (r.status != 200 && r.status != 206) return false;
        Head h;
        h.status = r.status;
        if (r.status == 206) {
          // Content-Range: bytes START-END/TOTAL
          const std::string cr = r.get_header_value("Content-Range");
          const size_t slash = cr.rfind('/');
          const size_t dash = cr.find('-');
          const size_t space = cr.find(' ');
          if (slash == std::string::npos || dash == std::string::npos ||
              space == std::string::npos ||
              std::strtoull(cr.c_str() + space + 1, nullptr, 10) != offset) {
            bad_range = cr;
            return false;
          }
          h.total = std::strtoull(cr.c_str() + slash + 1, nullptr, 10);
        } else if (r.has_header("Content-Length")) {
          h.total = std::strtoull(r.get_header_value("Content-Length").c_str(), nullptr, 10);
        }
        h.validator =
            r.has_header("ETag") ? r.get_header_value("ETag") : r.get_header_value("Last-Modified");
        if (!on_head(h)) {
          stopped = true;
          return false;
        }
        return true;
      },
      [&](const char* data, size_t n) {
        if (!on_data(data, n)) {
          stopped = true;
          return false;
        }
        return true;
      });
  if (stopped) return Status::Ok();
  if (!bad_range.empty()) {
    return Status::InvalidArgument("GET " + url + " answered the range '" + bad_range +
                                       "', not bytes " + std::to_string(offset) + "-",
                                   "url");
  }
  if (status != 0 && status != 200 && status != 206) {
    const std::string what = "GET " + url + " answered HTTP " + std::to_string(status);
    if (status == 429 || status >= 500) return Status::Unavailable(what);
    return Status(StatusCode::kInvalidArgument, what, "url");
  }
  if (!res) {
    return Status::Unavailable("GET " + url + ": " + httplib::to_string(res.error()));
  }
  return Status::Ok();
}

}  // namespace outpost::router
