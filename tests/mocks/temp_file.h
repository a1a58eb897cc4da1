// TempFile — writes a test's input file under the temp directory, named
// uniquely per process and call (CTest runs each case as its own process, in
// parallel, so a fixed name would be shared).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace outpost::testing {

inline std::string TempFile(const std::string& text, const std::string& suffix = ".yaml") {
  static int n = 0;
  const auto path =
      std::filesystem::temp_directory_path() /
      ("outpost_test_" + std::to_string(::getpid()) + "_" + std::to_string(n++) + suffix);
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace outpost::testing
