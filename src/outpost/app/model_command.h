// `outpost model import | export | list | show | verify | remove`: the box's model
// store (models/model_store.h) from the command line. The store defaults to
// <state dir>/models (--store).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace outpost::app {

struct ModelFlags {
  CLI::App *import = nullptr, *list = nullptr, *show = nullptr, *verify = nullptr,
           *remove = nullptr, *export_ = nullptr;
  std::string out;
  std::string store;
  std::string file;
  std::string ref;
  std::string sha256;
  bool json = false;
};

CLI::App* AddModelCommand(CLI::App* app, ModelFlags* f);
// Exit codes: 0 done, 1 the operation failed (the message says why), 2 usage.
int RunModel(const ModelFlags& f);

}  // namespace outpost::app
