#include "outpost/api/sse.h"

#include <gtest/gtest.h>

namespace outpost::api {
namespace {

TEST(Sse, FramesOnePayload) {
  EXPECT_EQ(SseData(R"({"a":1})"), "data: {\"a\":1}\n\n");
}

TEST(Sse, DoneMarker) {
  EXPECT_EQ(SseDone(), "data: [DONE]\n\n");
}

TEST(Sse, MultiLinePayloadBecomesSeveralDataLines) {
  EXPECT_EQ(SseData("a\nb"), "data: a\ndata: b\n\n");
}

TEST(Sse, EmptyPayload) {
  EXPECT_EQ(SseData(""), "data: \n\n");
}

}  // namespace
}  // namespace outpost::api
