#include "outpost/api/multipart.h"

#include <algorithm>
#include <cctype>

namespace outpost::api {
namespace {

constexpr size_t kMaxPartHeaderBytes = 8 << 10;
constexpr size_t kMaxParts = 64;
constexpr size_t kMaxBoundary = 70;  // RFC 2046

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of `key` among "; "-separated parameters (quotes removed, \"
// unescaped), or nothing.
bool Param(std::string_view params, std::string_view key, std::string* value) {
  size_t pos = 0;
  while (pos < params.size()) {
    size_t semi = pos;
    bool quoted = false;
    for (; semi < params.size(); ++semi) {
      if (params[semi] == '"' && (semi == 0 || params[semi - 1] != '\\')) quoted = !quoted;
      if (params[semi] == ';' && !quoted) break;
    }
    std::string_view item = Trim(params.substr(pos, semi - pos));
    pos = semi + 1;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    if (Lower(Trim(item.substr(0, eq))) != key) continue;
    std::string_view v = Trim(item.substr(eq + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
      v = v.substr(1, v.size() - 2);
      std::string out;
      for (size_t i = 0; i < v.size(); ++i) {
        if (v[i] == '\\' && i + 1 < v.size()) ++i;
        out += v[i];
      }
      *value = std::move(out);
    } else {
      *value = std::string(v);
    }
    return true;
  }
  return false;
}

Status Bad(const std::string& what) {
  return Status::InvalidArgument("the multipart/form-data body is malformed: " + what);
}

}  // namespace

StatusOr<std::vector<MultipartPart>> ParseMultipart(std::string_view content_type,
                                                    std::string_view body) {
  const size_t semi = content_type.find(';');
  if (Lower(Trim(content_type.substr(0, semi))) != "multipart/form-data") {
    return Status::InvalidArgument("Content-Type must be multipart/form-data, got '" +
                                       std::string(content_type.substr(0, 100)) + "'",
                                   "Content-Type");
  }
  std::string boundary;
  if (semi == std::string_view::npos ||
      !Param(content_type.substr(semi + 1), "boundary", &boundary) || boundary.empty() ||
      boundary.size() > kMaxBoundary) {
    return Status::InvalidArgument(
        "Content-Type multipart/form-data needs a boundary of 1 to 70 characters", "Content-Type");
  }
  const std::string delimiter = "--" + boundary;
  // The first delimiter may follow a preamble; later ones follow CRLF.
  size_t pos;
  if (body.substr(0, delimiter.size()) == delimiter) {
    pos = delimiter.size();
  } else {
    const size_t first = body.find("\r\n" + delimiter);
    if (first == std::string_view::npos) return Bad("the boundary never appears");
    pos = first + 2 + delimiter.size();
  }
  std::vector<MultipartPart> parts;
  const std::string next = "\r\n" + delimiter;
  for (;;) {
    if (body.substr(pos, 2) == "--") return parts;  // the closing delimiter
    // Transport padding, then CRLF.
    while (pos < body.size() && (body[pos] == ' ' || body[pos] == '\t')) ++pos;
    if (body.substr(pos, 2) != "\r\n") return Bad("a boundary is not followed by a line end");
    pos += 2;
    if (parts.size() >= kMaxParts) return Bad("more than 64 parts");
    const size_t head_end = body.find("\r\n\r\n", pos);
    const bool empty_head = body.substr(pos, 2) == "\r\n";
    if (!empty_head &&
        (head_end == std::string_view::npos || head_end - pos > kMaxPartHeaderBytes)) {
      return Bad("a part's headers do not end within 8 KiB");
    }
    MultipartPart part;
    bool disposition = false;
    std::string_view head = empty_head ? std::string_view() : body.substr(pos, head_end - pos);
    pos = empty_head ? pos + 2 : head_end + 4;
    while (!head.empty()) {
      const size_t eol = head.find("\r\n");
      std::string_view line = head.substr(0, eol);
      head = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
      const size_t colon = line.find(':');
      if (colon == std::string_view::npos) return Bad("a part header has no ':'");
      const std::string name = Lower(Trim(line.substr(0, colon)));
      const std::string_view value = Trim(line.substr(colon + 1));
      if (name == "content-disposition") {
        const size_t s = value.find(';');
        if (Lower(Trim(value.substr(0, s))) != "form-data" || s == std::string_view::npos ||
            !Param(value.substr(s + 1), "name", &part.name)) {
          return Bad("a part's Content-Disposition is not form-data with a name");
        }
        Param(value.substr(s + 1), "filename", &part.filename);
        disposition = true;
      } else if (name == "content-type") {
        part.content_type = std::string(value);
      }
    }
    if (!disposition) return Bad("a part has no Content-Disposition header");
    const size_t end = body.find(next, pos);
    if (end == std::string_view::npos) return Bad("the closing boundary is missing");
    part.data = std::string(body.substr(pos, end - pos));
    parts.push_back(std::move(part));
    pos = end + next.size();
  }
}

}  // namespace outpost::api
