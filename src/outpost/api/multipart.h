// ParseMultipart — a multipart/form-data body (RFC 7578) split into its
// parts, as /v1/files receives an upload.
//
// Strict where it matters: the boundary must come from the Content-Type, the
// body must end with the closing delimiter, every part must name itself in a
// Content-Disposition: form-data header; part headers are bounded. Errors:
// InvalidArgument naming what is wrong (never the data). Pure; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "outpost/util/status.h"

namespace outpost::api {

struct MultipartPart {
  std::string name;      // the form field
  std::string filename;  // "" when the part is not a file
  std::string content_type;
  std::string data;
};

StatusOr<std::vector<MultipartPart>> ParseMultipart(std::string_view content_type,
                                                    std::string_view body);

}  // namespace outpost::api
