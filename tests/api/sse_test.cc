#include "outpost/api/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(SseEventSplitter, CutsAStreamCutAnywhereBackIntoEvents) {
  const std::string stream = SseEvent("a", "1") + SseEvent("b", "2") + SseData("3");
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseEventSplitter split;
    std::vector<std::string> events = split.Feed(stream.substr(0, cut));
    for (std::string& e : split.Feed(stream.substr(cut))) events.push_back(std::move(e));
    EXPECT_EQ(events, (std::vector<std::string>{"event: a\ndata: 1\n\n", "event: b\ndata: 2\n\n",
                                                "data: 3\n\n"}))
        << "cut at " << cut;
    EXPECT_EQ(split.Flush(), "");
  }
}

TEST(SseEventSplitter, CrlfBlankLinesExtraBlankLinesAndALastEventWithoutOne) {
  SseEventSplitter split;
  EXPECT_EQ(split.Feed("\r\n\ndata: x\r\n\r\n\n\ndata: y\n"),
            (std::vector<std::string>{"data: x\r\n\r\n"}));
  EXPECT_EQ(split.Flush(), "data: y\n\n");
  EXPECT_EQ(split.Feed("data: z"), std::vector<std::string>());
  EXPECT_EQ(split.Flush(), "data: z\n\n");
  EXPECT_EQ(split.Flush(), "");  // given once
}

}  // namespace
}  // namespace outpost::api
