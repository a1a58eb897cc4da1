#include "outpost/util/yaml_file.h"

#include <filesystem>
#include <system_error>

namespace outpost {

StatusOr<YAML::Node> LoadYamlFile(const std::string& path, const std::string& what,
                                  const std::string& param) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound(what + " file '" + path + "' does not exist", param);
  }
  try {
    return YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ": YAML syntax error at line " +
                                       std::to_string(e.mark.line + 1) + ", column " +
                                       std::to_string(e.mark.column + 1) + ": " + e.msg,
                                   param);
  }
}

}  // namespace outpost
