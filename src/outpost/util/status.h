// outpost::Status and StatusOr<T> — error values for the request path.
//
// Outpost does not throw on the request path. Functions that can fail return a
// Status (or StatusOr<T>) carrying a small code that maps one-to-one onto HTTP
// status codes and OpenAI error types (see api/errors.h), a human message that
// names the offending field or limit, and optionally the parameter name.
//
// Thread-safety: value types; safe to copy between threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace outpost {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // 400: malformed or out-of-range input
  kNotFound,           // 404: unknown model / route
  kPayloadTooLarge,    // 413: body over the configured limit
  kResourceExhausted,  // 503: over capacity (queue full, wait expired)
  kUnauthenticated,    // 401: no API key, or a wrong one
  kPermissionDenied,   // 403: policy forbids (e.g. restricted data to central)
  kCancelled,          // client went away
  kUnavailable,        // 503: not ready (model loading, shutting down)
  kBadGateway,         // 502: an upstream answered with something unusable
  kInternal,           // 500: a bug
};

class Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message, std::string param = {})
      : code_(code), message_(std::move(message)), param_(std::move(param)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string msg, std::string param = {}) {
    return {StatusCode::kInvalidArgument, std::move(msg), std::move(param)};
  }
  static Status NotFound(std::string msg, std::string param = {}) {
    return {StatusCode::kNotFound, std::move(msg), std::move(param)};
  }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status Cancelled(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The request field the error is about ("messages[0].content"), or empty.
  const std::string& param() const { return param_; }
  // Seconds after which a retry may succeed (over capacity, loading); 0 = none.
  // Becomes the Retry-After header.
  int32_t retry_after_s() const { return retry_after_s_; }
  Status& WithRetryAfter(int32_t seconds) & {
    retry_after_s_ = seconds;
    return *this;
  }
  Status&& WithRetryAfter(int32_t seconds) && {
    retry_after_s_ = seconds;
    return std::move(*this);
  }
  Status WithParam(std::string param) const {
    Status s = *this;
    s.param_ = std::move(param);
    return s;
  }
  // OpenAI's machine-readable `code` for this failure when it is more exact
  // than the status code's ("context_length_exceeded", "conversation_locked");
  // empty: api/errors.cc derives it from code().
  const std::string& error_code() const { return error_code_; }
  Status& WithErrorCode(std::string error_code) & {
    error_code_ = std::move(error_code);
    return *this;
  }
  Status&& WithErrorCode(std::string error_code) && {
    error_code_ = std::move(error_code);
    return std::move(*this);
  }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string param_;
  int32_t retry_after_s_ = 0;
  std::string error_code_;
};

const char* StatusCodeName(StatusCode code);

// Either a T or a non-OK Status. REQUIRES: ok() before value().
template <typename T>
class StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace outpost
