#include "outpost/router/http_blob_source.h"

#include <httplib.h>

#include <chrono>
#include <cstdlib>

namespace outpost::router {

namespace {

// "https://host:port/path" → ("https://host:port", "/path"); false when
// there is no scheme or path.
bool SplitUrl(const std::string& url, std::string* base, std::string* path) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return false;
  const size_t path_start = url.find('/', scheme_end + 3);
  *base = url.substr(0, path_start);
  *path = path_start == std::string::npos ? "/" : url.substr(path_start);
  return true;
}

}  // namespace

Status HttpBlobSource::Get(const std::string& url, uint64_t offset, const std::string& validator,
                           const std::function<bool(const Head&)>& on_head,
                           const std::function<bool(const char* data, size_t n)>& on_data) {
  std::string base, path;
  if (!SplitUrl(url, &base, &path) || url.find('/', url.find("://") + 3) == std::string::npos) {
    return Status::InvalidArgument("'" + url + "' has no path", "url");
  }
  const std::string first_base = base;
  std::string where = url;
  for (int hop = 0;; ++hop) {
    httplib::Client cli(base);
    if (!cli.is_valid()) {
      return Status::InvalidArgument("'" + where + "' is not a usable URL", "url");
    }
    cli.set_connection_timeout(std::chrono::milliseconds(options_.connect_timeout_ms));
    cli.set_read_timeout(std::chrono::milliseconds(options_.stall_timeout_ms));
    cli.set_follow_location(false);  // below: credentials stay with the first host
    cli.set_keep_alive(false);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    if (!options_.ca_file.empty()) cli.set_ca_cert_path(options_.ca_file);
#endif
    httplib::Headers headers;
    if (base == first_base) {
      if (!options_.authorization.empty()) {
        headers.emplace("Authorization", options_.authorization);
      } else if (!options_.bearer_token.empty()) {
        headers.emplace("Authorization", "Bearer " + options_.bearer_token);
      }
    }
    if (offset > 0) {
      headers.emplace("Range", "bytes=" + std::to_string(offset) + "-");
      if (!validator.empty()) headers.emplace("If-Range", validator);
    }
    int status = 0;
    bool stopped = false;
    std::string bad_range, location;
    auto res = cli.Get(
        path, headers,
        [&](const httplib::Response& r) {
          status = r.status;
          if (r.status >= 300 && r.status < 400) {
            location = r.get_header_value("Location");
            return false;
          }
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
          h.validator = r.has_header("ETag") ? r.get_header_value("ETag")
                                             : r.get_header_value("Last-Modified");
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
    if (!location.empty()) {
      if (hop >= 5) return Status::InvalidArgument("GET " + url + ": more than 5 redirects", "url");
      if (location[0] == '/') {
        path = location;  // same host
      } else if (!SplitUrl(location, &base, &path)) {
        return Status::InvalidArgument("GET " + where + " redirected to '" + location + "'", "url");
      }
      where = base + path;
      continue;
    }
    if (!bad_range.empty()) {
      return Status::InvalidArgument("GET " + where + " answered the range '" + bad_range +
                                         "', not bytes " + std::to_string(offset) + "-",
                                     "url");
    }
    if (status != 0 && status != 200 && status != 206) {
      const std::string what = "GET " + where + " answered HTTP " + std::to_string(status);
      if (status == 429 || status >= 500) return Status::Unavailable(what);
      if (status == 401 || status == 403) return Status(StatusCode::kUnauthenticated, what, "url");
      return Status(StatusCode::kInvalidArgument, what, "url");
    }
    if (!res) {
      return Status::Unavailable("GET " + where + ": " + httplib::to_string(res.error()));
    }
    return Status::Ok();
  }
}

}  // namespace outpost::router
