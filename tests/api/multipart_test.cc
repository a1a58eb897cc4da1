#include "outpost/api/multipart.h"

#include <gtest/gtest.h>

namespace outpost::api {
namespace {

const char* kType = "multipart/form-data; boundary=b0undary";

TEST(Multipart, SplitsAnUploadAsPythonClientsSendIt) {
  // The shape httpx (the openai client) sends: a file part and a field.
  const std::string body =
      "--b0undary\r\n"
      "Content-Disposition: form-data; name=\"purpose\"\r\n\r\n"
      "batch\r\n"
      "--b0undary\r\n"
      "Content-Disposition: form-data; name=\"file\"; filename=\"in put.jsonl\"\r\n"
      "Content-Type: application/octet-stream\r\n\r\n"
      "{\"a\":1}\r\n{\"b\":2}\n\r\n"
      "--b0undary--\r\n";
  auto parts = ParseMultipart(kType, body);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].name, "purpose");
  EXPECT_EQ((*parts)[0].data, "batch");
  EXPECT_EQ((*parts)[0].filename, "");
  EXPECT_EQ((*parts)[1].name, "file");
  EXPECT_EQ((*parts)[1].filename, "in put.jsonl");
  EXPECT_EQ((*parts)[1].content_type, "application/octet-stream");
  EXPECT_EQ((*parts)[1].data, "{\"a\":1}\r\n{\"b\":2}\n");  // bytes kept as sent
}

TEST(Multipart, AQuotedBoundaryAPreambleAndEmptyPartsAreFine) {
  const std::string body =
      "preamble\r\n--x y\r\n"
      "content-disposition: form-data; name=\"empty\"\r\n\r\n"
      "\r\n--x y--";
  auto parts = ParseMultipart("multipart/form-data; boundary=\"x y\"", body);
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].data, "");
}

TEST(Multipart, BadBodiesAreRefusedSayingWhatIsWrong) {
  struct Case {
    const char* name;
    std::string type;
    std::string body;
    const char* says;
  };
  const std::string head = "--b0undary\r\nContent-Disposition: form-data; name=\"f\"\r\n\r\n";
  const std::vector<Case> cases = {
      {"json content type", "application/json", "{}", "multipart/form-data"},
      {"no boundary", "multipart/form-data", "", "boundary"},
      {"empty boundary", "multipart/form-data; boundary=", "", "boundary"},
      {"boundary too long", "multipart/form-data; boundary=" + std::string(71, 'b'), "",
       "boundary"},
      {"boundary absent from body", kType, "just text", "never appears"},
      {"no closing delimiter", kType, head + "data", "closing boundary"},
      {"no disposition", kType, "--b0undary\r\nContent-Type: text/plain\r\n\r\nx\r\n--b0undary--",
       "Content-Disposition"},
      {"disposition without a name", kType,
       "--b0undary\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b0undary--", "name"},
      {"attachment", kType,
       "--b0undary\r\nContent-Disposition: attachment; name=\"f\"\r\n\r\nx\r\n--b0undary--",
       "form-data"},
      {"header without colon", kType, "--b0undary\r\nnonsense\r\n\r\nx\r\n--b0undary--", "':'"},
      {"headers never end", kType, "--b0undary\r\nContent-Disposition: form-data; name=\"f\"",
       "headers"},
      {"garbage after boundary", kType, "--b0undaryXX\r\n", "line end"},
  };
  for (const auto& c : cases) {
    auto parts = ParseMultipart(c.type, c.body);
    ASSERT_FALSE(parts.ok()) << c.name;
    EXPECT_EQ(parts.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_NE(parts.status().message().find(c.says), std::string::npos)
        << c.name << ": " << parts.status().message();
  }
}

TEST(Multipart, TooManyPartsAreRefused) {
  std::string body;
  for (int i = 0; i < 65; ++i) {
    body += "--b0undary\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nx\r\n";
  }
  body += "--b0undary--";
  auto parts = ParseMultipart(kType, body);
  ASSERT_FALSE(parts.ok());
  EXPECT_NE(parts.status().message().find("64"), std::string::npos);
}

}  // namespace
}  // namespace outpost::api
