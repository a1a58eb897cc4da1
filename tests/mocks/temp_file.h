// TempFile — writes a test's input file under the temp directory, named
// uniquely per process and call (CTest runs each case as its own process, in
// parallel, so a fixed name would be shared), and removes it when the process
// exits, together with the files SQLite and the stores put beside it (-wal,
// -shm, -journal, .lock). A crash leaves them behind; a normal exit, passed or
// failed, does not.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

namespace outpost::testing {

// Paths to remove at exit. Meyers singleton, so it is constructed before the
// first file is registered and destroyed after main returns.
class TempFileRegistry {
 public:
  static TempFileRegistry& Get() {
    static TempFileRegistry r;
    return r;
  }
  void Add(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    paths_.push_back(path);
  }
  ~TempFileRegistry() {
    std::error_code ec;
    for (const auto& p : paths_) {
      for (const char* sibling : {"", "-wal", "-shm", "-journal", ".lock"}) {
        std::filesystem::remove_all(p + sibling, ec);
      }
    }
  }

 private:
  std::mutex mu_;
  std::vector<std::string> paths_;
};

// A fresh path under the temp directory, removed (with its siblings) at exit.
// Nothing is created.
inline std::string TempPath(const std::string& suffix) {
  static int n = 0;
  const auto path =
      (std::filesystem::temp_directory_path() /
       ("outpost_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + suffix))
          .string();
  TempFileRegistry::Get().Add(path);
  return path;
}

inline std::string TempFile(const std::string& text, const std::string& suffix = ".yaml") {
  const auto path = TempPath(suffix);
  std::ofstream(path) << text;
  return path;
}

}  // namespace outpost::testing
