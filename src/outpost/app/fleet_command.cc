#include "outpost/app/fleet_command.h"

#include <cstdio>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/fleet/desired_state.h"
#include "outpost/models/canary_plan.h"
#include "outpost/models/dsse.h"

namespace outpost::app {
namespace {

using nlohmann::json;

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

int Fail(const char* what, const std::string& message, int rc) {
  std::fprintf(stderr, "outpost fleet %s: %s\n", what, message.c_str());
  return rc;
}

}  // namespace

CLI::App* AddFleetCommand(CLI::App* app, FleetFlags* f) {
  CLI::App* fleet = app->add_subcommand(
      "fleet", "write and check the fleet's signed desired-state document (docs/lifecycle.md)");
  fleet->require_subcommand(1, 1);
  f->sign = fleet->add_subcommand(
      "sign", "check a desired-state JSON document and sign it (a DSSE envelope, Ed25519)");
  f->sign->add_option("file", f->file, "the desired-state JSON document")->required();
  f->sign
      ->add_option("--key", f->key,
                   "Ed25519 private key, PEM (openssl genpkey -algorithm "
                   "ed25519)")
      ->required();
  f->sign->add_option("-o,--output", f->output, "write the envelope here (default: stdout)");
  f->check = fleet->add_subcommand(
      "check", "verify a signed desired state and show what a node would converge to");
  f->check->add_option("file", f->file, "the signed document (a DSSE envelope)")->required();
  f->check
      ->add_option("--trusted-keys", f->trusted_keys,
                   "comma-separated PEM public keys that may sign it")
      ->required();
  f->check->add_option("--site", f->site, "the node's site");
  f->check->add_option("--labels", f->labels, "the node's labels, KEY=VALUE,…");
  f->check->add_flag("--json", f->json, "print JSON");
  return fleet;
}

int RunFleet(const FleetFlags& f) {
  std::string text;
  if (f.sign->parsed()) {
    if (!ReadFile(f.file, &text)) return Fail("sign", "cannot read " + f.file, 2);
    auto doc = fleet::ParseDesiredState(text);
    if (!doc.ok()) return Fail("sign", doc.status().message(), 1);
    auto env = models::SignDsse(f.key, fleet::kDesiredStateType, text);
    if (!env.ok()) return Fail("sign", env.status().message(), 2);
    if (f.output.empty()) {
      std::fwrite(env->data(), 1, env->size(), stdout);
    } else {
      std::ofstream out(f.output, std::ios::binary | std::ios::trunc);
      if (!(out << *env)) return Fail("sign", "cannot write " + f.output, 2);
    }
    std::fprintf(stderr, "signed generation %lld (%zu entr%s)\n",
                 static_cast<long long>(doc->generation), doc->models.size(),
                 doc->models.size() == 1 ? "y" : "ies");
    return 0;
  }
  std::vector<std::string> paths;
  for (size_t start = 0; start < f.trusted_keys.size();) {
    size_t comma = f.trusted_keys.find(',', start);
    if (comma == std::string::npos) comma = f.trusted_keys.size();
    if (comma > start) paths.push_back(f.trusted_keys.substr(start, comma - start));
    start = comma + 1;
  }
  auto keys = models::LoadTrustedKeys(paths);
  if (!keys.ok()) return Fail("check", keys.status().message(), 2);
  auto labels = fleet::ParseLabels(f.labels, "--labels");
  if (!labels.ok()) return Fail("check", labels.status().message(), 2);
  if (!ReadFile(f.file, &text)) return Fail("check", "cannot read " + f.file, 2);
  auto doc = fleet::VerifyDesiredState(text, *keys);
  if (!doc.ok()) return Fail("check", doc.status().message(), 1);
  const fleet::NodeIdentity node{f.site, *labels};
  const auto selected = fleet::SelectFor(*doc, node);
  if (f.json) {
    json list = json::array();
    for (const auto& m : selected) {
      json j = {{"name", m.name},     {"version", m.version},
                {"source", m.source}, {"sha256", m.sha256},
                {"ref", m.Ref()},     {"signature_policy", m.signature_policy}};
      if (m.canary) j["canary"] = models::CanaryPlanJson(*m.canary);
      list.push_back(std::move(j));
    }
    const json out = {{"generation", doc->generation},
                      {"key", doc->key_id},
                      {"entries", doc->models.size()},
                      {"selected", list}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("generation %lld, signed by key %s, %zu entr%s\n",
              static_cast<long long>(doc->generation), doc->key_id.c_str(), doc->models.size(),
              doc->models.size() == 1 ? "y" : "ies");
  if (selected.empty()) std::printf("nothing applies to this node\n");
  for (const auto& m : selected) {
    std::printf("  %s  from %s  %s\n", m.Ref().c_str(), m.source.c_str(),
                m.canary ? ("canary " + models::CanaryPlanJson(*m.canary)["steps"].dump()).c_str()
                         : "activate");
  }
  return 0;
}

}  // namespace outpost::app
