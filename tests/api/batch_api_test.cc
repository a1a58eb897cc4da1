#include "outpost/api/batch_api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "mocks/seeded_random.h"
#include "mocks/sim_clock.h"
#include "mocks/temp_file.h"
#include "outpost/api/api_keys.h"

namespace outpost::api {
namespace {

using nlohmann::json;

class BatchApiTest : public ::testing::Test {
 protected:
  BatchApiTest() : random_(7) {
    const std::string path = testing::TempPath(".db");
    store_ = std::move(batch::BatchStore::Open(path)).value();
    api_ = std::make_unique<BatchApi>(store_.get(), nullptr, BatchApiOptions{}, &clock_, &random_);
  }

  HttpResponse Call(const std::string& method, const std::string& target, const std::string& body,
                    const std::string& owner = "k1", const std::string& type = "application/json") {
    HttpRequest req;
    req.method = method;
    const size_t q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) req.query = target.substr(q + 1);
    req.body = body;
    req.headers.emplace_back("Content-Type", type);
    req.headers.emplace_back("Authorization", "Bearer key-of-" + owner);
    HttpResponse res;
    api_->Handle(req, res, owner);
    return res;
  }

  static std::string Form(const std::string& purpose, const std::string& content,
                          const std::string& extra = "") {
    std::string body;
    if (!purpose.empty()) {
      body += "--B\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + purpose + "\r\n";
    }
    body += extra;
    body += "--B\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n\r\n" +
            content + "\r\n--B--\r\n";
    return body;
  }

  HttpResponse Upload(const std::string& content, const std::string& owner = "k1") {
    return Call("POST", "/v1/files", Form("batch", content), owner,
                "multipart/form-data; boundary=B");
  }

  static std::string Lines(int n, const std::string& url = "/v1/completions") {
    std::string out;
    for (int i = 0; i < n; ++i) {
      out += json{{"custom_id", "r" + std::to_string(i)},
                  {"method", "POST"},
                  {"url", url},
                  {"body", {{"prompt", "hello"}, {"max_tokens", 4}}}}
                 .dump() +
             "\n";
    }
    return out;
  }

  testing::SimClock clock_;
  testing::SeededRandom random_;
  std::unique_ptr<batch::BatchStore> store_;
  std::unique_ptr<BatchApi> api_;
};

TEST_F(BatchApiTest, AnUploadedFileIsListedRetrievedReadAndDeletedAsOpenAIShowsIt) {
  const std::string content = Lines(2);
  HttpResponse up = Upload(content);
  ASSERT_EQ(up.status, 200) << up.body;
  const json f = json::parse(up.body);
  EXPECT_EQ(f["object"], "file");
  EXPECT_EQ(f["purpose"], "batch");
  EXPECT_EQ(f["filename"], "in.jsonl");
  EXPECT_EQ(f["bytes"], content.size());
  EXPECT_EQ(f["status"], "processed");
  // As OpenAI: a batch input expires after 30 days unless the upload says otherwise.
  EXPECT_EQ(f["expires_at"].get<int64_t>() - f["created_at"].get<int64_t>(), 30 * 86400);
  const std::string id = f["id"];
  EXPECT_EQ(id.rfind("file-", 0), 0u);

  const json list = json::parse(Call("GET", "/v1/files?purpose=batch", "").body);
  EXPECT_EQ(list["object"], "list");
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["data"][0]["id"], id);
  EXPECT_EQ(list["has_more"], false);
  EXPECT_EQ(json::parse(Call("GET", "/v1/files/" + id, "").body)["bytes"], content.size());
  HttpResponse body = Call("GET", "/v1/files/" + id + "/content", "");
  EXPECT_EQ(body.status, 200);
  EXPECT_EQ(body.body, content);
  // Another key's view: nothing.
  EXPECT_EQ(Call("GET", "/v1/files/" + id, "", "k2").status, 404);
  EXPECT_TRUE(json::parse(Call("GET", "/v1/files", "", "k2").body)["data"].empty());
  const json del = json::parse(Call("DELETE", "/v1/files/" + id, "").body);
  EXPECT_EQ(del["deleted"], true);
  EXPECT_EQ(Call("GET", "/v1/files/" + id, "").status, 404);
  // An upload's own expires_after wins; 30 days on, the default one is gone.
  const std::string form =
      Form("batch", content,
           "--B\r\nContent-Disposition: form-data; name=\"expires_after[anchor]\"\r\n\r\n"
           "created_at\r\n--B\r\nContent-Disposition: form-data; "
           "name=\"expires_after[seconds]\"\r\n\r\n7200\r\n");
  const json hour2 =
      json::parse(Call("POST", "/v1/files", form, "k1", "multipart/form-data; boundary=B").body);
  EXPECT_EQ(hour2["expires_at"].get<int64_t>() - hour2["created_at"].get<int64_t>(), 7200);
  const std::string kept = json::parse(Upload(content).body)["id"];
  clock_.Advance(std::chrono::hours(24 * 30));
  EXPECT_TRUE(json::parse(Call("GET", "/v1/files", "").body)["data"].empty());
  EXPECT_EQ(Call("GET", "/v1/files/" + kept, "").status, 404);
}

TEST_F(BatchApiTest, ABatchOfAGoodFileIsInProgressWithItsCountsWindowAndMetadata) {
  const std::string file = json::parse(Upload(Lines(3)).body)["id"];
  HttpResponse res = Call("POST", "/v1/batches",
                          json{{"input_file_id", file},
                               {"endpoint", "/v1/completions"},
                               {"completion_window", "24h"},
                               {"metadata", {{"job", "nightly"}}}}
                              .dump());
  ASSERT_EQ(res.status, 200) << res.body;
  const json b = json::parse(res.body);
  EXPECT_EQ(b["object"], "batch");
  EXPECT_EQ(b["status"], "in_progress");
  EXPECT_EQ(b["request_counts"], json({{"total", 3}, {"completed", 0}, {"failed", 0}}));
  EXPECT_EQ(b["expires_at"].get<int64_t>() - b["created_at"].get<int64_t>(), 86400);
  EXPECT_EQ(b["metadata"]["job"], "nightly");
  EXPECT_TRUE(b["errors"].is_null());
  EXPECT_TRUE(b["output_file_id"].is_null());
  EXPECT_TRUE(b["completed_at"].is_null());
  const std::string id = b["id"];
  EXPECT_EQ(id.rfind("batch_", 0), 0u);
  EXPECT_EQ(json::parse(Call("GET", "/v1/batches/" + id, "").body)["id"], id);
  EXPECT_EQ(Call("GET", "/v1/batches/" + id, "", "k2").status, 404);
  const json list = json::parse(Call("GET", "/v1/batches?limit=1", "").body);
  ASSERT_EQ(list["data"].size(), 1u);
  EXPECT_EQ(list["first_id"], id);
  const json cancelled = json::parse(Call("POST", "/v1/batches/" + id + "/cancel", "").body);
  EXPECT_EQ(cancelled["status"], "cancelling");
  EXPECT_FALSE(cancelled["cancelling_at"].is_null());
  // Forwarded with every line: the creator's key (never shown), kept by its
  // id, never the key itself (kept_request.h).
  EXPECT_EQ(res.body.find("key-of-k1"), std::string::npos);
  const json kept = json::parse(store_->GetBatch("k1", id)->headers_json);
  EXPECT_EQ(kept, json({{"X-Outpost-Key-Id", ApiKeyId("key-of-k1")}})) << kept.dump();
}

TEST_F(BatchApiTest, ABatchShowsItsModelUsageAndKeepsItsOutputExpiry) {
  std::string lines;
  for (int i = 0; i < 2; ++i) {
    lines += json{{"custom_id", "r" + std::to_string(i)},
                  {"method", "POST"},
                  {"url", "/v1/chat/completions"},
                  {"body",
                   {{"model", "SmolLM2"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}}}
                 .dump() +
             "\n";
  }
  const std::string file = json::parse(Upload(lines).body)["id"];
  HttpResponse res =
      Call("POST", "/v1/batches",
           json{{"input_file_id", file},
                {"endpoint", "/v1/chat/completions"},
                {"completion_window", "24h"},
                {"output_expires_after", {{"anchor", "created_at"}, {"seconds", 7200}}}}
               .dump());
  ASSERT_EQ(res.status, 200) << res.body;
  const json b = json::parse(res.body);
  EXPECT_EQ(b["model"], "SmolLM2");
  EXPECT_EQ(b["usage"], json({{"input_tokens", 0},
                              {"input_tokens_details", {{"cached_tokens", 0}}},
                              {"output_tokens", 0},
                              {"output_tokens_details", {{"reasoning_tokens", 0}}},
                              {"total_tokens", 0}}));
  EXPECT_EQ(store_->GetBatch("k1", b["id"])->output_expires_after, 7200);
  // Without a model in its lines the batch's model is null until an answer names it.
  const std::string plain = json::parse(Upload(Lines(1)).body)["id"];
  res = Call(
      "POST", "/v1/batches",
      json{{"input_file_id", plain}, {"endpoint", "/v1/completions"}, {"completion_window", "24h"}}
          .dump());
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_TRUE(json::parse(res.body)["model"].is_null());
  EXPECT_EQ(store_->GetBatch("k1", json::parse(res.body)["id"])->output_expires_after, 0);
}

TEST(BatchUsage, ReadFromEveryEndpointsAnswer) {
  const json chat = json::parse(
      R"({"usage":{"prompt_tokens":30,"completion_tokens":8,"total_tokens":38,
          "prompt_tokens_details":{"cached_tokens":24},
          "completion_tokens_details":{"reasoning_tokens":0}}})");
  batch::TokenUsage u = UsageOf(chat);
  EXPECT_EQ(u.input, 30);
  EXPECT_EQ(u.cached, 24);
  EXPECT_EQ(u.output, 8);
  const json responses = json::parse(
      R"({"usage":{"input_tokens":12,"output_tokens":5,"total_tokens":17,
          "input_tokens_details":{"cached_tokens":4},
          "output_tokens_details":{"reasoning_tokens":1}}})");
  u = UsageOf(responses);
  EXPECT_EQ(u.input, 12);
  EXPECT_EQ(u.cached, 4);
  EXPECT_EQ(u.output, 5);
  EXPECT_EQ(u.reasoning, 1);
  u = UsageOf(json::parse(R"({"usage":{"prompt_tokens":7,"total_tokens":7}})"));  // embeddings
  EXPECT_EQ(u.input, 7);
  EXPECT_EQ(u.output, 0);
  // An error body, or a usage of the wrong shape, counts nothing.
  for (const char* body : {R"({"error":{"message":"bad"}})", R"({"usage":5})",
                           R"({"usage":{"prompt_tokens":"many"}})"}) {
    u = UsageOf(json::parse(body));
    EXPECT_EQ(u.input + u.cached + u.output + u.reasoning, 0) << body;
  }
}

TEST_F(BatchApiTest, ABadInputFileGivesAFailedBatchListingTheBadLines) {
  const std::string elsewhere =
      R"({"custom_id":"r9","method":"POST","url":"/v1/embeddings","body":{"input":"x"}})";
  const std::string file =
      json::parse(Upload(Lines(1) + "not json\n" + elsewhere + "\n").body)["id"];
  HttpResponse res = Call(
      "POST", "/v1/batches",
      json{{"input_file_id", file}, {"endpoint", "/v1/completions"}, {"completion_window", "24h"}}
          .dump());
  ASSERT_EQ(res.status, 200) << res.body;
  const json b = json::parse(res.body);
  EXPECT_EQ(b["status"], "failed");
  EXPECT_FALSE(b["failed_at"].is_null());
  ASSERT_EQ(b["errors"]["data"].size(), 2u);
  EXPECT_EQ(b["errors"]["data"][0]["line"], 2);
  EXPECT_EQ(b["errors"]["data"][0]["code"], "invalid_json_line");
  EXPECT_EQ(b["errors"]["data"][1]["line"], 3);
  EXPECT_EQ(b["errors"]["data"][1]["param"], "url");
  EXPECT_EQ(b["request_counts"]["total"], 0);
}

TEST_F(BatchApiTest, BadRequestsGetTheirStatusAndNameTheirField) {
  const std::string file = json::parse(Upload(Lines(1)).body)["id"];
  struct Case {
    const char* name;
    std::string method, target, body, type;
    int status;
    const char* param;
  };
  const std::string form = "multipart/form-data; boundary=B";
  const json good = {
      {"input_file_id", file}, {"endpoint", "/v1/completions"}, {"completion_window", "24h"}};
  auto with = [&](const char* k, json v) {
    json j = good;
    j[k] = std::move(v);
    return j.dump();
  };
  auto without = [&](const char* k) {
    json j = good;
    j.erase(k);
    return j.dump();
  };
  const std::vector<Case> cases = {
      {"upload as json", "POST", "/v1/files", "{}", "application/json", 400, "Content-Type"},
      {"upload without file", "POST", "/v1/files",
       "--B\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--B--", form, 400,
       "file"},
      {"upload without purpose", "POST", "/v1/files", Form("", "x"), form, 400, "purpose"},
      {"upload fine-tune", "POST", "/v1/files", Form("fine-tune", "x"), form, 400, "purpose"},
      {"expiry too short", "POST", "/v1/files",
       Form("batch", "x",
            "--B\r\nContent-Disposition: form-data; name=\"expires_after[anchor]\"\r\n\r\n"
            "created_at\r\n--B\r\nContent-Disposition: form-data; "
            "name=\"expires_after[seconds]\"\r\n\r\n60\r\n"),
       form, 400, "expires_after.seconds"},
      {"files limit 0", "GET", "/v1/files?limit=0", "", "", 400, "limit"},
      {"files order sideways", "GET", "/v1/files?order=up", "", "", 400, "order"},
      {"unknown file", "GET", "/v1/files/file-nope", "", "", 404, "file_id"},
      {"delete unknown", "DELETE", "/v1/files/file-nope", "", "", 404, "file_id"},
      {"put on files", "PUT", "/v1/files", "", "", 405, ""},
      {"batch not json", "POST", "/v1/batches", "nope", "application/json", 400, ""},
      {"batch an array", "POST", "/v1/batches", "[]", "application/json", 400, ""},
      {"batch without file", "POST", "/v1/batches", without("input_file_id"), "", 400,
       "input_file_id"},
      {"batch with unknown file", "POST", "/v1/batches", with("input_file_id", "file-nope"), "",
       404, "input_file_id"},
      {"batch endpoint unsupported", "POST", "/v1/batches", with("endpoint", "/v1/moderations"), "",
       400, "endpoint"},
      {"batch endpoint a number", "POST", "/v1/batches", with("endpoint", 5), "", 400, "endpoint"},
      {"window in weeks", "POST", "/v1/batches", with("completion_window", "2w"), "", 400,
       "completion_window"},
      {"window zero", "POST", "/v1/batches", with("completion_window", "0h"), "", 400,
       "completion_window"},
      {"window too long", "POST", "/v1/batches", with("completion_window", "9999h"), "", 400,
       "completion_window"},
      {"metadata a list", "POST", "/v1/batches", with("metadata", json::array()), "", 400,
       "metadata"},
      {"metadata value a number", "POST", "/v1/batches", with("metadata", {{"a", 1}}), "", 400,
       "metadata.a"},
      {"output expiry a number", "POST", "/v1/batches", with("output_expires_after", 3600), "", 400,
       "output_expires_after"},
      {"output expiry without anchor", "POST", "/v1/batches",
       with("output_expires_after", {{"seconds", 3600}}), "", 400, "output_expires_after.anchor"},
      {"output expiry other anchor", "POST", "/v1/batches",
       with("output_expires_after", {{"anchor", "completed_at"}, {"seconds", 3600}}), "", 400,
       "output_expires_after.anchor"},
      {"output expiry too short", "POST", "/v1/batches",
       with("output_expires_after", {{"anchor", "created_at"}, {"seconds", 3599}}), "", 400,
       "output_expires_after.seconds"},
      {"output expiry too long", "POST", "/v1/batches",
       with("output_expires_after", {{"anchor", "created_at"}, {"seconds", 2592001}}), "", 400,
       "output_expires_after.seconds"},
      {"output expiry in text", "POST", "/v1/batches",
       with("output_expires_after", {{"anchor", "created_at"}, {"seconds", "3600"}}), "", 400,
       "output_expires_after.seconds"},
      {"output expiry without seconds", "POST", "/v1/batches",
       with("output_expires_after", {{"anchor", "created_at"}}), "", 400,
       "output_expires_after.seconds"},
      {"output expiry unknown field", "POST", "/v1/batches",
       with("output_expires_after", {{"anchor", "created_at"}, {"seconds", 3600}, {"days", 1}}), "",
       400, "output_expires_after.days"},
      {"batches limit 101", "GET", "/v1/batches?limit=101", "", "", 400, "limit"},
      {"unknown batch", "GET", "/v1/batches/batch_nope", "", "", 404, "batch_id"},
      {"cancel by GET", "GET", "/v1/batches/batch_nope/cancel", "", "", 405, ""},
      {"cancel unknown", "POST", "/v1/batches/batch_nope/cancel", "", "", 404, "batch_id"},
  };
  for (const auto& c : cases) {
    HttpResponse res = Call(c.method, c.target, c.body, "k1", c.type);
    EXPECT_EQ(res.status, c.status) << c.name << ": " << res.body;
    const json err = json::parse(res.body, nullptr, false);
    ASSERT_TRUE(err.is_object()) << c.name;
    ASSERT_TRUE(err.contains("error")) << c.name;
    EXPECT_FALSE(err["error"]["message"].get<std::string>().empty()) << c.name;
    if (*c.param != '\0') {
      EXPECT_EQ(err["error"]["param"], c.param) << c.name << ": " << res.body;
    }
  }
  // The server still answers, and nothing was created by the bad calls.
  const json list = json::parse(Call("GET", "/v1/batches", "").body);
  EXPECT_TRUE(list["data"].empty());
  EXPECT_EQ(json::parse(Call("GET", "/v1/files", "").body)["data"].size(), 1u);
}

TEST(CompletionWindow, DurationsInSecondsMinutesHoursAndDays) {
  EXPECT_EQ(*ParseCompletionWindow("24h", 30 * 86400), 86400);
  EXPECT_EQ(*ParseCompletionWindow("90m", 30 * 86400), 5400);
  EXPECT_EQ(*ParseCompletionWindow("30s", 30 * 86400), 30);
  EXPECT_EQ(*ParseCompletionWindow("7d", 30 * 86400), 7 * 86400);
  for (const char* bad : {"", "h", "24", "-1h", "1.5h", "24H", "31d", "999999999999h"}) {
    EXPECT_FALSE(ParseCompletionWindow(bad, 30 * 86400).ok()) << bad;
  }
}

}  // namespace
}  // namespace outpost::api
