// `outpost model requantize SRC NEW --head TYPE`: a new version of a model in
// the store whose output head is stored in a smaller type (engine/requantize.h),
// every other tensor as it was — then validated against SRC (quality on the
// pinned text, decode speed side by side), so the operator sees what the
// speed costs before anything serves it. The new version is an ordinary one:
// activate it, or canary it against SRC on a running server.
#pragma once

#include <string>

namespace outpost::models {
class ModelStore;
}

namespace outpost::app {

struct ModelFlags;

// Exit codes as RunModel: 0 done (and validation passed, or was skipped),
// 1 the operation or the validation failed, 2 usage.
int RunRequantize(const ModelFlags& f, models::ModelStore* store);

}  // namespace outpost::app
