#include "outpost/engine/token_id.h"

namespace outpost::engine {

Status CheckTokenId(int64_t id, int32_t n_vocab, const std::string& field) {
  if (id >= 0 && id < n_vocab) return Status::Ok();
  const std::string head = "'" + field + "' token id " + std::to_string(id);
  if (id < 0) return Status::InvalidArgument(head + " is negative (ids start at 0)", field);
  return Status::InvalidArgument(
      head + " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")", field);
}

}  // namespace outpost::engine
