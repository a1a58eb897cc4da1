#include "outpost/engine/model_info.h"

#include <gtest/gtest.h>

#include "mocks/temp_file.h"
#include "mocks/test_model.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace outpost::engine {
namespace {

std::string TempPath(const std::string& name) {
  return testing::TempPath("_" + name);
}

TEST(ReadModelInfo, MissingFileIsNotFound) {
  auto r = ReadModelInfo("/nonexistent/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(ReadModelInfo, NotAGguf) {
  const auto p = TempPath("text.gguf");
  std::ofstream(p) << "this is not a model";
  auto r = ReadModelInfo(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("not a GGUF file"), std::string::npos);
}

TEST(ReadModelInfo, AShapeGgufAcceptsAndGgmlWouldAbortOnIsRefused) {
  // fuzz_gguf_metadata's finding (2026-12-06): one tensor whose element count
  // gguf's check lets through and ggml_new_tensor asserts on. Reading it must
  // be an error, never an abort.
  static const char kBytes[] =
      "\x47\x47\x55\x46\x03\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x47\x47\x55\x46\x03\x00\x00\x00\x01\x00\x00\x00\x01"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x07"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x61\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x61\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xa3\xa3\xa3"
      "\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3"
      "\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3"
      "\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3"
      "\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3"
      "\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3\xa3"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x61\x01\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x62\x00\x00\x00\x00\x00\x00\x00\x00\x61\x01\x00\x00\x00\x00\x00"
      "\x00\x00\x62";
  const auto p = TempPath("shape.gguf");
  std::ofstream(p, std::ios::binary).write(kBytes, sizeof kBytes - 1);
  auto r = ReadModelInfo(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("too many elements"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(ListTensors(p).ok());
  std::filesystem::remove(p);
}

TEST(ReadModelInfo, EmptyFile) {
  const auto p = TempPath("empty.gguf");
  std::ofstream(p).flush();
  EXPECT_FALSE(ReadModelInfo(p).ok());
}

TEST(ReadModelInfo, DefaultModelExactFigures) {
  OUTPOST_TEST_MODEL(path);
  auto r = ReadModelInfo(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->architecture, "llama");
  EXPECT_EQ(r->n_layers, 30);
  EXPECT_EQ(r->n_kv_heads, 3);
  EXPECT_EQ(r->head_dim_k, 64);
  EXPECT_EQ(r->head_dim_v, 64);
  EXPECT_EQ(r->n_vocab, 49152);
  EXPECT_EQ(r->weight_bytes, 96576768u);  // 92.10 MiB of tensor data in a 93.8 MiB file
}

TEST(ReadModelInfo, GemmaExactFigures) {
  OUTPOST_TEST_GEMMA(path);
  auto r = ReadModelInfo(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->architecture, "gemma3");
  EXPECT_EQ(r->n_layers, 18);
  EXPECT_EQ(r->n_kv_heads, 1);
  EXPECT_EQ(r->head_dim_k, 256);
  EXPECT_EQ(r->head_dim_v, 256);
  EXPECT_EQ(r->n_vocab, 262144);
  EXPECT_EQ(r->weight_bytes, 246587904u);  // 235.16 MiB of tensor data in a 241.39 MiB file
}

TEST(ReadModelInfo, TruncatedDefaultModelIsRefusedWithNumbers) {
  OUTPOST_TEST_MODEL(path);
  const auto p = TempPath("truncated.gguf");
  {
    std::ifstream in(path, std::ios::binary);
    std::ofstream out(p, std::ios::binary);
    std::vector<char> buf(8 << 20);
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    out.write(buf.data(), in.gcount());
  }
  auto r = ReadModelInfo(p);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
  std::filesystem::remove(p);
}

}  // namespace
}  // namespace outpost::engine
