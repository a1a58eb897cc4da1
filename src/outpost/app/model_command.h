// `outpost model import | export | list | show | verify | activate | rollback |
// remove | requantize | …`: the box's model store (models/model_store.h) from the command line.
// The store defaults to <state dir>/models (--store). With --server URL the
// operation goes to that running Outpost's /admin/ API instead (admin key
// from $OUTPOST_ADMIN_KEY or --admin-key-file): a serving process holds its
// store, and only it can switch the version it serves.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace outpost::app {

struct ModelFlags {
  CLI::App *import = nullptr, *list = nullptr, *show = nullptr, *verify = nullptr,
           *remove = nullptr, *export_ = nullptr, *activate = nullptr, *rollback = nullptr,
           *canary = nullptr, *promote = nullptr, *pull = nullptr, *sign = nullptr,
           *validate = nullptr, *requantize = nullptr;
  std::string url;       // pull: a path, http(s):// or oci:// source
  std::string username;  // pull: registry user (password: $OUTPOST_REGISTRY_PASSWORD)
  std::string authfile;  // pull: the registry auth file to read ("" = the defaults)
  bool plain_http = false;
  std::string signature;                  // pull/import: a signature file given by hand
  std::string signature_policy = "warn";  // off | warn | enforce
  std::vector<std::string> trusted_keys;  // PEM public keys
  std::string key;                        // sign: the Ed25519 private key
  bool force = false;                     // activate/canary a version that failed validation
  std::string suite;                      // validate: the suite file ("" = the default)
  std::string against;                    // validate: NAME:VERSION to compare with
  std::string new_ref;                    // requantize: the version it makes
  std::string head = "iq4_nl";            // requantize: the head's new type
  bool no_validate = false;               // requantize: skip the validation after
  std::string max_rate;                   // pull bandwidth cap ("10MiB" per second)
  std::string stall_timeout = "30s";
  std::string window;  // pull: HH:MM-HH:MM, bytes move only then
  int attempts = 8;
  std::vector<int> steps;  // canary shares, percent
  std::string bake;        // canary step duration ("10m")
  int64_t min_requests = 0;
  double max_ttft_ratio = 0;     // 0: the server's default (1.5)
  double min_decode_ratio = -1;  // canary: -1 = the server's default (0.5)
  int shadow = 0;                // canary: percent of requests mirrored first (0: no shadow)
  bool no_steps = false;         // canary: the shadow phase is followed by the promotion
  std::string server;            // http(s)://host:port of a running outpost
  std::string admin_key_file;    // else $OUTPOST_ADMIN_KEY
  std::string ca_file;           // for an https server with its own CA
  int64_t timeout_s = 600;
  std::string reason;
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
