// ModelStore::Adopt (a file the process wrote at a PartialPath, renamed into
// the store rather than copied) and VersionDetailJson's tensor summary, on a
// real store with the default model.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "mocks/test_model.h"
#include "outpost/models/model_store.h"
#include "outpost/models/version_json.h"

namespace outpost::models {
namespace {

namespace fs = std::filesystem;

class Adopt : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(outpost::testing::ModelPath().empty()) << "the default model is missing";
    dir_ = fs::temp_directory_path() /
           ("outpost_adopt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto s = ModelStore::Open(dir_.string());
    ASSERT_TRUE(s.ok()) << s.status().message();
    store_ = std::move(s).value();
  }
  void TearDown() override {
    store_.reset();
    fs::remove_all(dir_);
  }
  // The default model copied to a fresh partial path, as a writer leaves it.
  std::string Written() {
    const std::string path = store_->PartialPath();
    fs::copy_file(outpost::testing::ModelPath(), path);
    return path;
  }
  // Model files in blobs/sha256 (not partial files, manifests or configs:
  // those are a few hundred bytes; the junk GGUF below is padded past 1 MiB).
  int Blobs() {
    int n = 0;
    for (const auto& e : fs::directory_iterator(dir_ / "blobs" / "sha256")) {
      n += e.path().filename().string()[0] != '.' && e.file_size() > (1u << 20);
    }
    return n;
  }

  fs::path dir_;
  std::unique_ptr<ModelStore> store_;
};

TEST_F(Adopt, TheFileIsRenamedInAndServesAsAnImportedOne) {
  auto imported = store_->Import(outpost::testing::ModelPath(), "m:1");
  ASSERT_TRUE(imported.ok()) << imported.status().message();
  const std::string path = Written();
  auto v = store_->Adopt(path, "m:2", "made here");
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->state, "verified");
  EXPECT_EQ(v->source, "made here");
  EXPECT_EQ(v->blob_digest, imported->blob_digest);  // the same bytes, the same digest
  EXPECT_EQ(v->size, imported->size);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(Blobs(), 1);  // one copy of the bytes for both versions
  EXPECT_TRUE(fs::exists(store_->ModelPath(*v)));
}

TEST_F(Adopt, ANewFileBecomesItsOwnBlobWithoutACopy) {
  const std::string path = Written();
  struct stat before {
  }, after{};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  auto v = store_->Adopt(path, "m:1", "made here");
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(::stat(store_->ModelPath(*v).c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);  // the same file, renamed
  EXPECT_EQ(Blobs(), 1);
  EXPECT_FALSE(fs::exists(path));
}

TEST_F(Adopt, BadInputIsRefusedAndTheFileIsConsumed) {
  ASSERT_TRUE(store_->Import(outpost::testing::ModelPath(), "m:1").ok());
  struct Row {
    const char* what;
    std::string path;
    std::string ref;
    std::string says;
  };
  const std::string outside = (dir_ / "outside.gguf").string();
  fs::copy_file(outpost::testing::ModelPath(), outside);
  const std::string junk = store_->PartialPath();
  std::ofstream(junk) << "not a gguf" << std::string(2u << 20, ' ');
  const Row rows[] = {
      {"outside blobs/", outside, "m:2", "not in the store's blobs/sha256/"},
      {"a bad ref", Written(), "Bad Ref", "Bad Ref"},
      {"an existing version", Written(), "m:1", "m:1"},
      {"not a GGUF", junk, "m:3", "not a usable GGUF"},
  };
  for (const Row& row : rows) {
    auto v = store_->Adopt(row.path, row.ref, "made here");
    ASSERT_FALSE(v.ok()) << row.what;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << row.what;
    EXPECT_NE(v.status().message().find(row.says), std::string::npos)
        << row.what << ": " << v.status().message();
    // The store's partial files are consumed; a file elsewhere is not its own.
    EXPECT_EQ(fs::exists(row.path), row.path == outside) << row.what;
  }
  EXPECT_EQ(Blobs(), 2);  // m:1's, and the failed m:3's (kept with it, as Import keeps one)
  auto m1 = store_->Get("m:1");
  ASSERT_TRUE(m1.ok());
  EXPECT_EQ(m1->state, "verified");
  auto m3 = store_->Get("m:3");  // recorded as failed, with the reason
  ASSERT_TRUE(m3.ok());
  EXPECT_EQ(m3->state, "failed");
}

TEST_F(Adopt, DetailJsonNamesTheHeadAndTheTypes) {
  auto v = store_->Import(outpost::testing::ModelPath(), "m:1");
  ASSERT_TRUE(v.ok()) << v.status().message();
  const nlohmann::json j = VersionDetailJson(store_.get(), *v);
  EXPECT_EQ(j["ref"], "m:1");
  const auto& t = j["tensors"];
  ASSERT_TRUE(t.contains("head")) << t.dump();
  // SmolLM2 ties its head to the Q8_0 token embeddings: 49152 rows of 576.
  EXPECT_EQ(t["head"]["tensor"], "token_embd.weight");
  EXPECT_EQ(t["head"]["type"], "q8_0");
  EXPECT_EQ(t["head"]["tied"], true);
  EXPECT_EQ(t["head"]["bytes"].get<uint64_t>(), 49152ull * 576 / 32 * 34);
  uint64_t count = 0, bytes = 0;
  for (const auto& [type, x] : t["types"].items()) {
    count += x["count"].get<uint64_t>();
    bytes += x["bytes"].get<uint64_t>();
  }
  EXPECT_EQ(count, t["count"].get<uint64_t>());
  EXPECT_GT(bytes, v->size * 9 / 10);  // the data is nearly all of the file
  EXPECT_LT(bytes, v->size);
  // A version whose file is gone says why instead.
  fs::remove(store_->ModelPath(*v));
  const nlohmann::json gone = VersionDetailJson(store_.get(), *v);
  EXPECT_TRUE(gone["tensors"].contains("error")) << gone.dump();
}

}  // namespace
}  // namespace outpost::models
