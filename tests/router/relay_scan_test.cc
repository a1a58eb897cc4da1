#include "outpost/router/relay_scan.h"

#include <gtest/gtest.h>

#include <string>

namespace outpost::router {
namespace {

TEST(RelayScan, UsageOfAWholeBody) {
  RelayedUsage u;
  EXPECT_TRUE(
      ScanUsage(R"({"choices":[{"message":{"content":"{\"usage\":{\"prompt_tokens\":99}}"}}],)"
                R"("usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}})",
                &u));
  EXPECT_EQ(u.prompt_tokens, 12);  // not the 99 inside a string
  EXPECT_EQ(u.completion_tokens, 3);
  EXPECT_FALSE(ScanUsage(R"({"usage":{"prompt_tokens":1})", &u));  // truncated
}

TEST(RelayScan, CountsAnUpstreamCannotMakeNegativeOrHuge) {
  RelayedUsage u;
  EXPECT_TRUE(
      ScanUsage(R"({"usage":{"prompt_tokens":-5,"completion_tokens":18446744073709551615}})", &u));
  EXPECT_EQ(u.prompt_tokens, 0);
  EXPECT_EQ(u.completion_tokens, 0);
}

TEST(RelayScan, StreamSplitAnywhereFindsDoneAndUsage) {
  const std::string stream =
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  for (size_t step = 1; step <= stream.size(); ++step) {
    SseScan scan;
    for (size_t i = 0; i < stream.size(); i += step) scan.Feed(stream.substr(i, step));
    EXPECT_TRUE(scan.saw_done()) << step;
    EXPECT_EQ(scan.usage().prompt_tokens, 7) << step;
    EXPECT_EQ(scan.usage().completion_tokens, 2) << step;
  }
}

TEST(RelayScan, AnEndlessLineIsSkippedNotBuffered) {
  SseScan scan;
  const std::string chunk(64 << 10, 'x');
  for (size_t fed = 0; fed < 3 * SseScan::kMaxLine; fed += chunk.size()) scan.Feed(chunk);
  // The next line is read normally.
  scan.Feed("\ndata: [DONE]\n");
  EXPECT_TRUE(scan.saw_done());
  SseScan cut;
  cut.Feed("data: [DO");
  EXPECT_FALSE(cut.saw_done());
}

TEST(RelayScan, AResponsesBodyAndStreamReportTheirUsageAndEnd) {
  RelayedUsage whole;
  EXPECT_TRUE(ScanUsage(R"({"object":"response","output":[],"usage":{"input_tokens":21,)"
                        R"("input_tokens_details":{"cached_tokens":20},"output_tokens":4,)"
                        R"("total_tokens":25}})",
                        &whole));
  EXPECT_EQ(whole.prompt_tokens, 21);  // not the cached_tokens nested below it
  EXPECT_EQ(whole.completion_tokens, 4);

  // A Responses stream has no [DONE]: its last event ends it, and the usage
  // is the final response's (the first events carry usage: null).
  const std::string stream =
      "event: response.created\n"
      R"(data: {"type":"response.created","response":{"usage":null,"output":[]}})"
      "\n\n"
      "event: response.output_text.delta\n"
      R"(data: {"type":"response.output_text.delta","delta":"{\"usage\":1}"})"
      "\n\n"
      "event: response.completed\n"
      R"(data: {"type":"response.completed","response":{"output":[{"type":"message"}],)"
      R"("usage":{"input_tokens":9,"output_tokens":5,"total_tokens":14}}})"
      "\n\n";
  for (size_t step = 1; step <= stream.size(); step += 7) {
    SseScan scan;
    for (size_t i = 0; i < stream.size(); i += step) scan.Feed(stream.substr(i, step));
    EXPECT_TRUE(scan.saw_done()) << step;
    EXPECT_EQ(scan.usage().prompt_tokens, 9) << step;
    EXPECT_EQ(scan.usage().completion_tokens, 5) << step;
  }
  SseScan open;
  open.Feed(stream.substr(0, stream.find("event: response.completed")));
  EXPECT_FALSE(open.saw_done());  // cut before its last event
  EXPECT_EQ(open.usage().prompt_tokens, 0);
  for (const char* last : {"event: response.incomplete\n", "event: response.failed\n",
                           "event: error\n", "event:response.completed\n"}) {
    SseScan scan;
    scan.Feed(last);
    EXPECT_TRUE(scan.saw_done()) << last;
  }
}

}  // namespace
}  // namespace outpost::router
