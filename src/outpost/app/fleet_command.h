// `outpost fleet sign` and `outpost fleet check`: the central team's side of
// the fleet's desired state (fleet/desired_state.h).
//
//   outpost fleet sign --key ed25519.pem state.json > state.dsse.json
//       checks the document as a node would (refusing a bad one, naming the
//       field) and wraps it in a DSSE envelope signed with the key
//   outpost fleet check --trusted-keys pub.pem [--site S] [--labels K=V,…] FILE
//       verifies an envelope as a node would and prints what a node with
//       that site and those labels would converge to
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace outpost::app {

struct FleetFlags {
  CLI::App* sign = nullptr;
  CLI::App* check = nullptr;
  std::string file;
  std::string key;           // sign: the Ed25519 private key
  std::string output;        // sign: "" = stdout
  std::string trusted_keys;  // check: comma-separated public keys
  std::string site, labels;  // check: the node to select for
  bool json = false;
};

CLI::App* AddFleetCommand(CLI::App* app, FleetFlags* f);
// Exit codes: 0 done / the document verifies, 1 it does not, 2 usage.
int RunFleet(const FleetFlags& f);

}  // namespace outpost::app
