// BlobSource — where ModelStore::Pull reads a model's bytes from: an HTTP(S)
// GET from an offset. Defined here, implemented above models/ (the router's
// cpp-httplib client), so that the store never reaches the network itself
// and tests can put a source of their own in.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "outpost/util/status.h"

namespace outpost::models {

class BlobSource {
 public:
  virtual ~BlobSource() = default;

  struct Head {
    int status = 0;         // 200: the whole body; 206: from the offset asked for
    uint64_t total = 0;     // the whole file's bytes (0: unknown)
    std::string validator;  // the ETag, else Last-Modified, for If-Range on a resume
  };
  // GET `url`, from byte `offset` when > 0 (Range; If-Range with
  // `validator` when it is set, so a changed file comes whole with 200).
  // Calls on_head once, then on_data per chunk; either returning false stops
  // the transfer (the call then returns OK). Errors: Unavailable for what a
  // retry may cure (no connection, a reset, a stall longer than the
  // source's read timeout, a 5xx, 429), InvalidArgument for what it will
  // not (another HTTP status, naming it and the URL).
  virtual Status Get(const std::string& url, uint64_t offset, const std::string& validator,
                     const std::function<bool(const Head&)>& on_head,
                     const std::function<bool(const char* data, size_t n)>& on_data) = 0;
};

}  // namespace outpost::models
