#include "outpost/router/response_head.h"

namespace outpost::router {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

bool IContains(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (IEquals(hay.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

}  // namespace

Status ParseResponseHead(std::string_view head, ResponseHead* out) {
  *out = ResponseHead();
  size_t eol = head.find("\r\n");
  const std::string_view status_line = head.substr(0, eol);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ') {
    return Status::InvalidArgument("bad status line '" + std::string(status_line.substr(0, 40)) +
                                   "'");
  }
  if (status_line[7] == '0') out->keep_alive = false;
  int code = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (status_line[i] < '0' || status_line[i] > '9') {
      return Status::InvalidArgument("bad status code in '" + std::string(status_line) + "'");
    }
    code = code * 10 + (status_line[i] - '0');
  }
  out->status = code;
  while (eol != std::string_view::npos && eol + 2 < head.size()) {
    const size_t start = eol + 2;
    eol = head.find("\r\n", start);
    const std::string_view line =
        head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start);
    if (line.empty()) break;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return Status::InvalidArgument("bad header line '" + std::string(line.substr(0, 40)) + "'");
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (IEquals(name, "content-type")) {
      out->content_type = std::string(value);
    } else if (IEquals(name, "content-length")) {
      int64_t v = 0;
      if (value.empty()) return Status::InvalidArgument("empty Content-Length");
      for (char c : value) {
        if (c < '0' || c > '9' || v > (int64_t{1} << 40)) {
          return Status::InvalidArgument("bad Content-Length '" + std::string(value) + "'");
        }
        v = v * 10 + (c - '0');
      }
      out->content_length = v;
    } else if (IEquals(name, "transfer-encoding")) {
      out->chunked = IContains(value, "chunked");
    } else if (IEquals(name, "connection")) {
      if (IContains(value, "close")) out->keep_alive = false;
      if (IContains(value, "keep-alive")) out->keep_alive = true;
    }
  }
  if (out->chunked) out->content_length = -1;  // RFC 9112 6.3: chunked wins
  return Status::Ok();
}

Status ChunkedDecoder::Feed(std::string_view data, std::string* out) {
  while (!data.empty() && state_ != State::kDone) {
    switch (state_) {
      case State::kSize:
      case State::kTrailer:
      case State::kDataEnd: {
        const size_t nl = data.find('\n');
        line_.append(data.substr(0, nl));
        if (line_.size() > 4096) return Status::InvalidArgument("chunk line over 4 KiB");
        if (nl == std::string_view::npos) return Status::Ok();
        data.remove_prefix(nl + 1);
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        if (state_ == State::kDataEnd) {
          if (!line_.empty()) return Status::InvalidArgument("no CRLF after chunk data");
          state_ = State::kSize;
        } else if (state_ == State::kTrailer) {
          if (line_.empty()) state_ = State::kDone;  // trailers end with an empty line
        } else {
          const std::string_view size = std::string_view(line_).substr(0, line_.find(';'));
          if (size.empty()) return Status::InvalidArgument("empty chunk size");
          uint64_t v = 0;
          for (char c : Trim(size)) {
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0 || v > (uint64_t{1} << 40)) {
              return Status::InvalidArgument("bad chunk size '" + line_ + "'");
            }
            v = v * 16 + static_cast<uint64_t>(d);
          }
          remaining_ = v;
          state_ = v == 0 ? State::kTrailer : State::kData;
        }
        line_.clear();
        break;
      }
      case State::kData: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, data.size()));
        out->append(data.substr(0, take));
        data.remove_prefix(take);
        remaining_ -= take;
        if (remaining_ == 0) state_ = State::kDataEnd;
        break;
      }
      case State::kDone:
        break;
    }
  }
  return Status::Ok();
}

}  // namespace outpost::router
