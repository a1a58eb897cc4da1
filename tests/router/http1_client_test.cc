// The pure parts of the router's HTTP/1.1 client: response heads and chunked
// bodies, including every way a chunked body can be split across reads.
#include "outpost/router/http1_client.h"
#include "outpost/router/response_head.h"

#include <gtest/gtest.h>

namespace outpost::router {
namespace {

TEST(ParseResponseHead, ReadsWhatTheRelayNeeds) {
  ResponseHead h;
  ASSERT_TRUE(ParseResponseHead("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                                "Content-Length:  42 \r\nX-Other: y\r\n",
                                &h)
                  .ok());
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(h.content_type, "application/json");
  EXPECT_EQ(h.content_length, 42);
  EXPECT_FALSE(h.chunked);
  EXPECT_TRUE(h.keep_alive);

  ASSERT_TRUE(ParseResponseHead("HTTP/1.1 503 Service Unavailable\r\nTransfer-Encoding: chunked\r\n"
                                "Content-Length: 10\r\nConnection: close\r\n",
                                &h)
                  .ok());
  EXPECT_EQ(h.status, 503);
  EXPECT_TRUE(h.chunked);
  EXPECT_EQ(h.content_length, -1);  // chunked wins over Content-Length
  EXPECT_FALSE(h.keep_alive);

  ASSERT_TRUE(ParseResponseHead("HTTP/1.0 200 OK\r\n", &h).ok());
  EXPECT_FALSE(h.keep_alive);  // HTTP/1.0 closes unless it says keep-alive
  ASSERT_TRUE(ParseResponseHead("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n", &h).ok());
  EXPECT_TRUE(h.keep_alive);
}

TEST(ParseResponseHead, MalformedHeadsAreNamed) {
  struct Case {
    const char* head;
    const char* part;
  };
  for (const Case& c :
       {Case{"HTTP/2 200\r\n", "bad status line"}, Case{"SSH-2.0-OpenSSH\r\n", "bad status line"},
        Case{"HTTP/1.1 2x0 OK\r\n", "bad status code"},
        Case{"HTTP/1.1 200 OK\r\nno colon here\r\n", "bad header line"},
        Case{"HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n", "bad Content-Length"},
        Case{"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n", "bad Content-Length"},
        Case{"HTTP/1.1 200 OK\r\nContent-Length:\r\n", "empty Content-Length"}}) {
    ResponseHead h;
    const Status st = ParseResponseHead(c.head, &h);
    ASSERT_FALSE(st.ok()) << c.head;
    EXPECT_NE(st.message().find(c.part), std::string::npos) << st.message();
  }
}

constexpr const char* kChunked =
    "7\r\n{\"a\":1,\r\n"
    "0B;ext=1\r\n\"b\":\"xyz\"}\n\r\n"
    "0\r\nTrailer: t\r\n\r\n";
constexpr const char* kPayload = "{\"a\":1,\"b\":\"xyz\"}\n";

TEST(ChunkedDecoder, WholeAndSplitAtEveryByte) {
  const std::string all = kChunked;
  {
    ChunkedDecoder d;
    std::string out;
    ASSERT_TRUE(d.Feed(all, &out).ok());
    EXPECT_TRUE(d.done());
    EXPECT_EQ(out, kPayload);
  }
  for (size_t cut = 1; cut < all.size(); ++cut) {
    ChunkedDecoder d;
    std::string out;
    ASSERT_TRUE(d.Feed(std::string_view(all).substr(0, cut), &out).ok()) << cut;
    EXPECT_FALSE(d.done()) << cut;
    ASSERT_TRUE(d.Feed(std::string_view(all).substr(cut), &out).ok()) << cut;
    EXPECT_TRUE(d.done()) << cut;
    EXPECT_EQ(out, kPayload) << "split at " << cut;
  }
  ChunkedDecoder d;
  std::string out;
  for (char c : all) ASSERT_TRUE(d.Feed(std::string_view(&c, 1), &out).ok());
  EXPECT_TRUE(d.done());
  EXPECT_EQ(out, kPayload);
}

TEST(ChunkedDecoder, MalformedFramingIsAnError) {
  for (const char* bad : {"zz\r\nhello\r\n", "\r\n", "5\r\nhelloX\r\n", "5\r\nhello\r\n-1\r\n"}) {
    ChunkedDecoder d;
    std::string out;
    EXPECT_FALSE(d.Feed(bad, &out).ok()) << bad;
  }
}

TEST(IsPlainHttp, OnlyHttpScheme) {
  EXPECT_TRUE(IsPlainHttp("http://10.0.0.2:8080"));
  EXPECT_FALSE(IsPlainHttp("https://llm.example.com"));
}

}  // namespace
}  // namespace outpost::router
