#include "outpost/api/errors.h"

#include <nlohmann/json.hpp>

namespace outpost::api {

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kPayloadTooLarge:
      return 413;
    case StatusCode::kResourceExhausted:
      return 503;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kBadGateway:
      return 502;
    case StatusCode::kCancelled:
      return 499;
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

std::string ErrorBody(const Status& status) {
  const char* type = "invalid_request_error";
  const char* code = nullptr;
  switch (status.code()) {
    case StatusCode::kNotFound:
      code = status.param() == "model" ? "model_not_found" : "not_found";
      break;
    case StatusCode::kPayloadTooLarge:
      code = "payload_too_large";
      break;
    case StatusCode::kResourceExhausted:
      type = "server_error";
      code = "over_capacity";
      break;
    case StatusCode::kUnavailable:
    case StatusCode::kBadGateway:
      type = "server_error";
      code = "unavailable";
      break;
    case StatusCode::kUnauthenticated:
      code = "invalid_api_key";
      break;
    case StatusCode::kPermissionDenied:
      code = "data_class_policy";
      break;
    case StatusCode::kInternal:
      type = "server_error";
      code = "internal_error";
      break;
    case StatusCode::kCancelled:
      type = "server_error";
      code = "cancelled";
      break;
    case StatusCode::kInvalidArgument:
      code = "invalid_value";
      break;
    default:
      break;
  }
  nlohmann::json err = {{"message", status.message()}, {"type", type}};
  err["param"] = status.param().empty() ? nlohmann::json(nullptr) : nlohmann::json(status.param());
  if (!status.error_code().empty()) code = status.error_code().c_str();
  err["code"] = code ? nlohmann::json(code) : nlohmann::json(nullptr);
  return nlohmann::json{{"error", err}}.dump(-1, ' ', false,
                                             nlohmann::json::error_handler_t::replace);
}

void SendError(HttpResponse& res, const Status& st) {
  res.status = HttpStatusFor(st.code());
  if (st.retry_after_s() > 0) res.set_header("Retry-After", std::to_string(st.retry_after_s()));
  res.set_content(ErrorBody(st), "application/json");
}

void SendNotAllowed(HttpResponse& res, const HttpRequest& req, const std::string& allow,
                    const std::string& hint) {
  res.status = 405;
  res.set_header("Allow", allow);
  res.set_content(
      ErrorBody(Status::InvalidArgument("method " + req.method + " is not allowed on " + req.path +
                                        "; use " + allow + (hint.empty() ? "" : " " + hint))),
      "application/json");
}

}  // namespace outpost::api
