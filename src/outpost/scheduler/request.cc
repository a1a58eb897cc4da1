#include "outpost/scheduler/request.h"

namespace outpost::scheduler {

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kError:
      return "error";
  }
  return "none";
}

const char* PriorityName(Priority p) {
  return p == Priority::kBatch ? "batch" : ServiceTierName(p);
}

const char* ServiceTierName(Priority p) {
  switch (p) {
    case Priority::kPriority:
      return "priority";
    case Priority::kInteractive:
      return "default";
    case Priority::kFlex:
    case Priority::kBatch:
      return "flex";
  }
  return "default";
}

}  // namespace outpost::scheduler
