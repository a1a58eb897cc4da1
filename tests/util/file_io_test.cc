#include "outpost/util/file_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "mocks/temp_file.h"

namespace outpost::util {
namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(FileIo, AFileIsReplacedWholeAndNoTemporaryIsLeft) {
  const std::string path = testing::TempFile("old", ".json");
  ASSERT_TRUE(WriteFileAtomically(path, std::string("new\0bytes", 9)).ok());
  EXPECT_EQ(Read(path), std::string("new\0bytes", 9));
  ASSERT_TRUE(WriteFileAtomically(path, "").ok());
  EXPECT_EQ(Read(path), "");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(FileIo, AnUnwritablePlaceIsAnErrorNamingTheFileAndLeavesTheOldBytes) {
  const Status st = WriteFileAtomically("/proc/outpost-no-such-dir/state.json", "x");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  EXPECT_NE(st.message().find("/proc/outpost-no-such-dir/state.json.tmp"), std::string::npos)
      << st.message();
  // A directory where the file should be: the rename fails, the directory stays.
  const std::string dir = testing::TempFile("", ".d");
  std::filesystem::remove(dir);
  std::filesystem::create_directories(dir + "/inner");
  const Status over = WriteFileAtomically(dir, "x");
  EXPECT_EQ(over.code(), StatusCode::kInternal) << over.message();
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/inner"));
  EXPECT_FALSE(std::filesystem::exists(dir + ".tmp"));
  std::filesystem::remove_all(dir);
}

TEST(FileIo, DiskRoomIsCheckedBeforeTheFirstByte) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  EXPECT_TRUE(CheckDiskRoom(dir, 1, "x").ok());
  // No file system here holds an exbibyte.
  const Status st = CheckDiskRoom(dir, uint64_t{1} << 60, "'new.gguf'");
  EXPECT_EQ(st.code(), StatusCode::kResourceExhausted);
  for (const std::string& part :
       {std::string("not enough disk for 'new.gguf'"), " MiB free in " + dir,
        std::to_string(((uint64_t{1} << 60) + (uint64_t{1} << 60) / 20) >> 20) + " MiB needed"}) {
    EXPECT_NE(st.message().find(part), std::string::npos) << st.message();
  }
  // A place that cannot be asked is no verdict: the write finds out.
  EXPECT_TRUE(CheckDiskRoom("/nonexistent/dir", uint64_t{1} << 60, "x").ok());
}

}  // namespace
}  // namespace outpost::util
