// LoadYamlFile — reads a YAML file for a configuration loader, with the errors
// every loader reports the same way: a missing file is NotFound ("<what> file
// '<path>' does not exist"), a syntax error is InvalidArgument naming the file,
// line and column. `param` names the flag or key the path came from and is
// carried on the Status. Pure apart from reading the file; thread-safe.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "outpost/util/status.h"

namespace outpost {

StatusOr<YAML::Node> LoadYamlFile(const std::string& path, const std::string& what,
                                  const std::string& param);

}  // namespace outpost
