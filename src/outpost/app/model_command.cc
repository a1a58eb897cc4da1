#include "outpost/app/model_command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "outpost/api/api_keys.h"
#include "outpost/app/config.h"
#include "outpost/app/model_requantize.h"
#include "outpost/app/model_validate.h"
#include "outpost/engine/model_info.h"
#include "outpost/models/model_signature.h"
#include "outpost/models/model_store.h"
#include "outpost/models/version_json.h"
#include "outpost/router/admin_client.h"
#include "outpost/router/model_source.h"
#include "outpost/router/registry_auth_file.h"
#include "outpost/util/sha256.h"
#include "outpost/util/units.h"

namespace outpost::app {
namespace {

// A progress line on stderr, redrawn in place on a terminal.
models::ModelStore::Progress Bar(const char* what) {
  const bool tty = isatty(STDERR_FILENO) != 0;
  return [what, tty](uint64_t done, uint64_t total) {
    const int pct = total > 0 ? static_cast<int>(100 * done / total) : 0;
    std::fprintf(stderr, "%s%s %s / %s (%d%%)%s", tty ? "\r" : "", what,
                 util::FormatBytes(done).c_str(), util::FormatBytes(total).c_str(), pct,
                 tty && done < total ? "" : "\n");
  };
}

int Fail(const Status& st) {
  std::fprintf(stderr, "outpost model: %s\n", st.message().c_str());
  return st.code() == StatusCode::kInvalidArgument && st.param() == "ref" ? 2 : 1;
}

// The signature flags into the request; 2 (usage) on a bad key file.
int SignatureRequest(const ModelFlags& f, router::PullRequest* pr) {
  auto policy = models::ParseSignaturePolicy(f.signature_policy);
  auto keys = models::LoadTrustedKeys(f.trusted_keys);
  if (!policy.ok() || !keys.ok()) {
    std::fprintf(stderr, "outpost model: %s\n",
                 (policy.ok() ? keys.status() : policy.status()).message().c_str());
    return 2;
  }
  pr->signature_policy = *policy;
  pr->trusted_keys = std::move(*keys);
  pr->signature_path = f.signature;
  return 0;
}

// "sha256:<hex>" of a file's bytes; "" when it cannot be read.
std::string FileDigest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  util::Sha256Stream hash;
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    hash.Update(buf.data(), static_cast<size_t>(in.gcount()));
  }
  return "sha256:" + hash.Finish();
}

int RunSign(const ModelFlags& f) {
  // A split model's first shard: the signature covers every shard.
  std::vector<std::string> paths = {f.file};
  if (auto info = engine::ReadModelInfo(f.file); info.ok() && info->shards.size() > 1) {
    paths = info->shards;
  }
  std::vector<std::pair<std::string, std::string>> files;
  for (const std::string& p : paths) {
    const std::string digest = FileDigest(p);
    if (digest.empty()) {
      std::fprintf(stderr, "outpost model sign: cannot read %s\n", p.c_str());
      return 2;
    }
    files.emplace_back(std::filesystem::path(p).filename().string(), digest);
  }
  auto envelope = models::SignModel(f.key, files);
  if (!envelope.ok()) {
    std::fprintf(stderr, "outpost model sign: %s\n", envelope.status().message().c_str());
    return 2;
  }
  const std::string out = f.out.empty() ? f.file + ".sig" : f.out;
  std::ofstream(out, std::ios::trunc) << *envelope;
  if (files.size() > 1) {
    std::printf("signed %s and the %zu shards after it with %s: %s\n", files[0].first.c_str(),
                files.size() - 1, f.key.c_str(), out.c_str());
  } else {
    std::printf("signed %s (%s) with %s: %s\n", files[0].first.c_str(), files[0].second.c_str(),
                f.key.c_str(), out.c_str());
  }
  return 0;
}

// The operation as a call to a running server's /admin/ API; prints its JSON
// answer (or the error it gives).
int RunRemote(const ModelFlags& f) {
  std::string key;
  if (const char* env = std::getenv("OUTPOST_ADMIN_KEY"); env != nullptr && *env) key = env;
  if (!f.admin_key_file.empty()) {
    auto keys = api::ApiKeys::ReadFile(f.admin_key_file);
    if (!keys.ok()) {
      std::fprintf(stderr, "outpost model: --admin-key-file '%s': no key in it, or unreadable\n",
                   f.admin_key_file.c_str());
      return 2;
    }
    key = keys->front();
  }
  if (!f.signature.empty() || !f.trusted_keys.empty() || f.signature_policy != "warn") {
    std::fprintf(stderr,
                 "outpost model: with --server the box's own signature_policy and trusted_keys "
                 "apply; --signature, --signature-policy and --trusted-key are for --store\n");
    return 2;
  }
  if (f.sign->parsed()) {
    std::fprintf(stderr, "outpost model sign: run it where the private key is, without --server\n");
    return 2;
  }
  if (f.requantize->parsed()) {
    std::fprintf(stderr,
                 "outpost model requantize: it writes into the store: run it on the box, with "
                 "--store (the default) instead of --server; activate or canary the result "
                 "through --server after\n");
    return 2;
  }
  std::string method = "POST", path, body;
  if (f.validate->parsed()) {
    path = "/admin/models/validate";
    nlohmann::json b = {{"model", f.ref}};
    if (!f.against.empty()) b["against"] = f.against;
    if (!f.suite.empty()) b["suite"] = f.suite;  // a path on the server's box
    body = b.dump();
  } else if (f.list->parsed()) {
    method = "GET";
    path = "/admin/models";
  } else if (f.show->parsed() || f.remove->parsed()) {
    method = f.show->parsed() ? "GET" : "DELETE";
    path = "/admin/models/" + f.ref;
  } else if (f.import->parsed()) {
    if (f.ref.empty() || f.file.size() < 2 || f.file[0] != '/') {
      std::fprintf(stderr,
                   "outpost model import --server: give the GGUF's absolute path on the server's "
                   "box and NAME:VERSION\n");
      return 2;
    }
    path = "/admin/models/import";
    nlohmann::json b = {{"path", f.file}, {"model", f.ref}};
    if (!f.sha256.empty()) b["sha256"] = f.sha256;
    body = b.dump();
  } else if (f.export_->parsed()) {
    std::fprintf(stderr, "outpost model export: run it on the box, against --store\n");
    return 2;
  } else if (f.pull->parsed()) {
    path = "/admin/models/pull";
    nlohmann::json b = {{"source", f.url}, {"model", f.ref}};
    if (!f.sha256.empty()) b["sha256"] = f.sha256;
    if (!f.max_rate.empty()) b["max_rate"] = f.max_rate;
    if (f.plain_http) b["plain_http"] = true;
    if (!f.window.empty()) b["window"] = f.window;
    if (!f.username.empty()) {
      b["username"] = f.username;
      const char* pw = std::getenv("OUTPOST_REGISTRY_PASSWORD");
      b["password"] = pw != nullptr ? pw : "";
    }
    body = b.dump();
  } else if (f.canary->parsed()) {
    path = "/admin/models/canary";
    nlohmann::json b = {{"model", f.ref}};
    if (!f.steps.empty()) b["steps"] = f.steps;
    if (f.no_steps) b["steps"] = nlohmann::json::array();
    if (f.shadow > 0) b["shadow"] = f.shadow;
    if (!f.bake.empty()) b["bake"] = f.bake;
    if (f.min_requests > 0) b["min_requests"] = f.min_requests;
    if (f.max_ttft_ratio > 0) b["max_ttft_ratio"] = f.max_ttft_ratio;
    if (f.min_decode_ratio >= 0) b["min_decode_ratio"] = f.min_decode_ratio;
    if (f.force) b["force"] = true;
    body = b.dump();
  } else if (f.promote->parsed()) {
    path = "/admin/models/promote";
    body = nlohmann::json{{"model", f.ref}}.dump();
  } else {
    path = f.verify->parsed()     ? "/admin/models/verify"
           : f.activate->parsed() ? "/admin/models/activate"
                                  : "/admin/models/rollback";
    nlohmann::json b = {{"model", f.ref}};
    if (f.rollback->parsed() && !f.reason.empty()) b["reason"] = f.reason;
    if (f.activate->parsed() && f.force) b["force"] = true;
    body = b.dump();
  }
  auto reply = router::AdminCall(f.server, method, path, body, key, f.ca_file, f.timeout_s * 1000);
  if (!reply.ok()) {
    std::fprintf(stderr, "outpost model: %s\n", reply.status().message().c_str());
    return reply.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  const nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200) {
    const std::string msg = j.is_object() && j.contains("error")
                                ? j["error"].value("message", reply->body)
                                : reply->body;
    std::fprintf(stderr, "outpost model: %s answered %d: %s\n", f.server.c_str(), reply->status,
                 msg.c_str());
    return 1;
  }
  if (!f.json && f.canary->parsed() && j.is_object() && j.value("phase", "") == "shadow") {
    std::printf(
        "canary %s:%s against %s: in the shadow, %d%% of requests mirrored (answers dropped), "
        "then %d step(s); watch it with `outpost model --server %s list`\n",
        j.value("model", "").c_str(), j.value("version", "").c_str(),
        j.value("baseline", "").c_str(), j.value("shadow_percent", 0), j.value("steps", 0),
        f.server.c_str());
    return 0;
  }
  if (!f.json && f.canary->parsed() && j.is_object()) {
    std::printf(
        "canary %s:%s against %s: %d%% of conversations (step %d of %d); watch it with "
        "`outpost model --server %s list`\n",
        j.value("model", "").c_str(), j.value("version", "").c_str(),
        j.value("baseline", "").c_str(), j.value("percent", 0), j.value("step", 0),
        j.value("steps", 0), f.server.c_str());
    return 0;
  }
  if (!f.json && (f.activate->parsed() || f.rollback->parsed() || f.promote->parsed()) &&
      j.is_object()) {
    char how[64] = "from hot standby";
    if (!j.value("from_standby", false)) {
      std::snprintf(how, sizeof how, "loaded and warmed up in %.1f s", j.value("load_s", 0.0));
    }
    std::printf("%s now serves version %s (was %s): %s, switched in %.1f ms\n",
                j.value("model", "").c_str(), j.value("to", "").c_str(),
                j.value("from", "").empty() ? "none" : j.value("from", "").c_str(), how,
                j.value("switch_ms", 0.0));
    return 0;
  }
  std::printf("%s\n", j.is_discarded() ? reply->body.c_str() : j.dump(2).c_str());
  return 0;
}

}  // namespace

namespace {

void AddSignatureFlags(CLI::App* cmd, ModelFlags* f) {
  cmd->add_option("--signature", f->signature,
                  "the model's signature (an OpenSSF model-signing bundle or Outpost's DSSE "
                  "envelope); default: looked for beside the model (FILE.sig, model.sig, URL.sig, "
                  "the registry's sha256-<digest> tag)");
  cmd->add_option("--signature-policy", f->signature_policy,
                  "off | warn (a missing or bad signature is logged) | enforce (refused); "
                  "default warn")
      ->check(CLI::IsMember({"off", "warn", "enforce"}));
  cmd->add_option("--trusted-key", f->trusted_keys,
                  "a PEM public key (Ed25519 or ECDSA) whose signatures are trusted; repeatable");
}

}  // namespace

CLI::App* AddModelCommand(CLI::App* app, ModelFlags* f) {
  CLI::App* model = app->add_subcommand(
      "model", "the box's model store and the served version: import, list, activate, rollback");
  model->require_subcommand(1);
  model->fallthrough();  // --store, --server, --ca-file … also after the subcommand
  model->add_option("--store", f->store, "the store directory (default: <state dir>/models)");
  model->add_option("--server", f->server,
                    "ask this running outpost (http(s)://HOST:PORT) through its /admin/ API "
                    "instead of opening the store");
  model->add_option("--admin-key-file", f->admin_key_file,
                    "the admin key for --server (default: $OUTPOST_ADMIN_KEY)");
  model->add_option("--ca-file", f->ca_file,
                    "CA certificate for an https --server or pull source (default: the system's)");
  model->add_option("--timeout", f->timeout_s, "seconds to wait for --server (default 600)")
      ->check(CLI::Range(1, 86400));
  f->import = model->add_subcommand(
      "import",
      "copy a GGUF file (or a version from an OCI-layout tar made by export or skopeo) into the "
      "store as NAME:VERSION, hash and check it");
  f->import->add_option("file", f->file, "the GGUF file, or a .tar archive")->required();
  f->import->add_option("ref", f->ref,
                        "NAME:VERSION, e.g. smollm2:1 (for an archive: default its own name)");
  f->import->add_option("--sha256", f->sha256, "refuse the file unless its sha256 is this");
  f->import->add_flag("--json", f->json, "print the version as JSON");
  AddSignatureFlags(f->import, f);
  f->sign = model->add_subcommand(
      "sign",
      "write Outpost's signature of a GGUF file: a DSSE envelope (Ed25519) of an in-toto "
      "statement naming the file's sha256, read back by --trusted-key on the box");
  f->sign->add_option("file", f->file, "the GGUF file")->required();
  f->sign
      ->add_option("--key", f->key,
                   "the Ed25519 private key, PEM (openssl genpkey -algorithm ed25519)")
      ->required();
  f->sign->add_option("--out", f->out, "where to write it (default: FILE.sig)");
  f->export_ = model->add_subcommand(
      "export", "write a version as one OCI-layout tar (for sites without a network)");
  f->export_->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->export_->add_option("file", f->out, "the .tar to write")->required();
  f->list = model->add_subcommand("list", "every version in the store with its state");
  f->list->add_flag("--json", f->json, "as JSON");
  f->show = model->add_subcommand(
      "show",
      "one version: state, digests, what the GGUF says (its tensors by type, its output head)");
  f->show->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->show->add_flag("--json", f->json, "as JSON");
  f->verify = model->add_subcommand("verify", "re-hash a version's file and check the GGUF again");
  f->verify->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->activate = model->add_subcommand(
      "activate",
      "serve NAME:VERSION: with --server, load and warm it beside the active version and switch "
      "new requests to it (those in flight finish on the old one, kept as hot standby); without, "
      "mark it active for the next start");
  f->activate->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->activate->add_flag("--json", f->json, "print the answer as JSON");
  f->activate->add_flag("--force", f->force, "serve it even though its last validation failed");
  f->rollback = model->add_subcommand(
      "rollback",
      "go back to the version of NAME active before this one (instant from hot standby) and "
      "retire the current one");
  f->rollback->add_option("name", f->ref, "NAME")->required();
  f->rollback->add_option("--reason", f->reason, "why (kept with the retired version)");
  f->rollback->add_flag("--json", f->json, "print the answer as JSON");
  f->pull = model->add_subcommand(
      "pull",
      "bring a GGUF into the store as NAME:VERSION from an OCI registry (oci://HOST/REPO:TAG or "
      "@sha256:…: a ModelPack, Docker Model Runner or ORAS artifact), over http(s) (checked "
      "against --sha256) or from a path; an interrupted download resumes where it stopped when "
      "run again");
  f->pull
      ->add_option("source", f->url,
                   "oci://HOST[:PORT]/REPO[:TAG|@sha256:…], https://… (http:// too: the digest is "
                   "pinned) or a path")
      ->required();
  f->pull->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->pull->add_option("--sha256", f->sha256,
                      "the file's sha256: required for http(s); for oci:// it must be the GGUF "
                      "layer's digest");
  f->pull->add_option("--username", f->username,
                      "registry user for Basic or token auth (the password from "
                      "$OUTPOST_REGISTRY_PASSWORD; default: what `docker login`, `podman "
                      "login` or `oras login` saved, else anonymous)");
  f->pull->add_option("--authfile", f->authfile,
                      "the one registry auth file to read (docker config.json or containers "
                      "auth.json; default: $REGISTRY_AUTH_FILE, "
                      "$XDG_RUNTIME_DIR/containers/auth.json, ~/.docker/config.json)");
  f->pull->add_flag("--plain-http", f->plain_http,
                    "talk HTTP, not HTTPS, to the registry (a loopback registry without TLS "
                    "is found without it)");
  f->pull->add_option("--max-rate", f->max_rate,
                      "bandwidth cap per second, e.g. 2MiB (default: none)");
  f->pull->add_option("--stall-timeout", f->stall_timeout,
                      "no byte for this long counts as a broken transfer and is retried "
                      "(default 30s)");
  f->pull
      ->add_option("--attempts", f->attempts,
                   "tries in a row without a new byte before giving up (default 8; the "
                   "waits between them double from 1 s to 30 s); for oci:// also the tries "
                   "at the manifest")
      ->check(CLI::Range(1, 1000));
  f->pull->add_flag("--json", f->json, "print the version as JSON");
  AddSignatureFlags(f->pull, f);
  f->pull->add_option("--window", f->window,
                      "move bytes only in this daily window, local time (e.g. 22:00-06:00): "
                      "outside it the pull waits, and pauses when the window closes");
  f->canary = model->add_subcommand(
      "canary",
      "with --server: load NAME:VERSION beside the active version and give it a share of "
      "conversations (sticky per X-Session-Id, user or API key), raised step by step while it "
      "does as well as the active version, then promoted; aborted (rolled back) when worse");
  f->canary->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->canary->add_option("--steps", f->steps, "rising shares in percent (default 5,25,50)")
      ->delimiter(',');
  f->canary->add_option("--bake", f->bake, "each step lasts at least this (default 10m)");
  f->canary->add_option("--min-requests", f->min_requests,
                        "canary requests a step needs before it can pass (default 50)");
  f->canary->add_option("--max-ttft-ratio", f->max_ttft_ratio,
                        "abort when the canary's TTFT p95 is above the active version's times "
                        "this (default 1.5)");
  f->canary->add_option(
      "--min-decode-ratio", f->min_decode_ratio,
      "abort when the canary decodes fewer tokens/s than the active version "
      "times this (default 0.5; judged once each has decoded 64 tokens in a step)");
  f->canary->add_option("--shadow", f->shadow,
                        "first mirror this percent of requests to it while the box has spare "
                        "capacity, its answers dropped, and judge that as a step (0: no shadow)");
  f->canary
      ->add_flag("--no-steps", f->no_steps,
                 "with --shadow: promote once the shadow phase passes, with no live step")
      ->excludes("--steps");
  f->canary->add_flag("--json", f->json, "print the answer as JSON");
  f->canary->add_flag("--force", f->force, "start it even though its last validation failed");
  f->validate = model->add_subcommand(
      "validate",
      "load NAME:VERSION and run its validation suite: smoke prompts, perplexity / KL divergence / "
      "same-top-token rate against the active version on a pinned text, a speed floor; the "
      "report is kept with the version, and a failing version needs --force to serve; with "
      "--server the running server validates it, its peak reserved in the server's memory "
      "budget");
  f->validate->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->validate->add_option("--suite", f->suite,
                          "the suite (YAML: smoke, quality, speed; see docs/lifecycle.md; with "
                          "--server a path on its box); default: one smoke prompt and the quality "
                          "bounds");
  f->validate->add_option("--against", f->against,
                          "NAME:VERSION to compare with (default: NAME's active version)");
  f->validate->add_flag("--json", f->json, "print the report as JSON");
  f->requantize = model->add_subcommand(
      "requantize",
      "make NEW, a version of SRC whose output head is stored in a smaller type (every other "
      "tensor as it was): on small models the head is much of what each token reads, so decode "
      "gets faster; NEW is then validated against SRC (perplexity, KL, decode speed side by "
      "side), a version like any other to activate or canary");
  f->requantize->add_option("ref", f->ref, "SRC: NAME:VERSION in the store")->required();
  f->requantize->add_option("new", f->new_ref, "NEW: the NAME:VERSION to make")->required();
  f->requantize
      ->add_option("--head", f->head,
                   "the head's type: iq4_nl (default: half of Q8_0's bytes, on the CPU's repacked "
                   "4-bit kernels), q4_0, q4_1, q5_0, q5_1 or q8_0")
      ->check(CLI::IsMember({"iq4_nl", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}));
  f->requantize->add_option("--suite", f->suite,
                            "the validation suite (as for validate; default: one smoke prompt and "
                            "the quality bounds)");
  f->requantize->add_flag("--no-validate", f->no_validate, "only make the version");
  f->requantize->add_flag("--json", f->json, "print the result (and the report) as JSON");
  f->promote = model->add_subcommand(
      "promote", "with --server: make the running canary of NAME the active version now");
  f->promote->add_option("name", f->ref, "NAME")->required();
  f->promote->add_flag("--json", f->json, "print the answer as JSON");
  f->remove = model->add_subcommand("remove", "remove a version (not an active one)");
  f->remove->add_option("ref", f->ref, "NAME:VERSION")->required();
  return model;
}

int RunModel(const ModelFlags& f) {
  if (!f.server.empty()) return RunRemote(f);
  if (f.canary->parsed() || f.promote->parsed()) {
    std::fprintf(stderr,
                 "outpost model %s: a canary runs in a serving process: add --server "
                 "http://HOST:PORT\n",
                 f.canary->parsed() ? "canary" : "promote");
    return 2;
  }
  if (f.sign->parsed()) return RunSign(f);
  ServeConfig cfg;
  const std::string dir = f.store.empty() ? StateDir(cfg) + "/models" : f.store;
  auto store = models::ModelStore::Open(dir);
  if (!store.ok()) return Fail(store.status());
  auto& s = **store;
  if (f.requantize->parsed()) return RunRequantize(f, &s);
  if (f.export_->parsed()) {
    if (Status st = s.Export(f.ref, f.out, Bar("exporting")); !st.ok()) return Fail(st);
    std::printf("wrote %s to %s (skopeo: oci-archive:%s)\n", f.ref.c_str(), f.out.c_str(),
                f.out.c_str());
    return 0;
  }
  if (f.pull->parsed()) {
    models::ModelStore::PullOptions po;
    po.max_attempts = f.attempts;
    if (!f.max_rate.empty()) {
      auto rate = util::ParseBytes(f.max_rate);
      if (!rate.ok() || *rate == 0) {
        std::fprintf(stderr, "outpost model pull: --max-rate must be a size such as 2MiB\n");
        return 2;
      }
      po.max_bytes_per_s = *rate;
    }
    router::BlobSourceOptions so;
    so.ca_file = f.ca_file;
    auto stall = util::ParseDurationMs(f.stall_timeout);
    if (!stall.ok() || *stall < 100) {
      std::fprintf(stderr, "outpost model pull: --stall-timeout must be a duration such as 30s\n");
      return 2;
    }
    so.stall_timeout_ms = *stall;
    auto window = util::DailyWindow::Parse(f.window, "--window");
    if (!window.ok()) {
      std::fprintf(stderr, "outpost model pull: %s\n", window.status().message().c_str());
      return 2;
    }
    po.window = *window;
    if (const char* t = std::getenv("OUTPOST_PULL_TOKEN"); t != nullptr) so.bearer_token = t;
    if (f.sha256.empty() && (f.url.rfind("https://", 0) == 0 || f.url.rfind("http://", 0) == 0)) {
      std::fprintf(stderr,
                   "outpost model pull: --sha256 is required for an http(s) source (the bytes are "
                   "checked against it)\n");
      return 2;
    }
    router::PullRequest pr;
    pr.source = f.url;
    pr.ref = f.ref;
    pr.sha256 = f.sha256;
    pr.pull = po;
    pr.registry.http = so;
    pr.registry.plain_http = f.plain_http;
    pr.registry.username = f.username;
    pr.registry_auth_files = f.authfile.empty() ? router::DefaultRegistryAuthFiles()
                                                : std::vector<std::string>{f.authfile};
    if (const char* pw = std::getenv("OUTPOST_REGISTRY_PASSWORD"); pw != nullptr) {
      pr.registry.password = pw;
    }
    if (!f.username.empty() && pr.registry.password.empty()) {
      std::fprintf(stderr,
                   "outpost model pull: --username needs the password in "
                   "$OUTPOST_REGISTRY_PASSWORD\n");
      return 2;
    }
    if (int rc = SignatureRequest(f, &pr); rc != 0) return rc;
    auto v = router::PullModel(&s, pr, Bar("pulling"));
    if (!v.ok()) return Fail(v.status());
    if (f.json) {
      std::printf("%s\n", models::VersionJson(*v).dump(2).c_str());
    } else {
      std::printf("%s: %s, %s %s, %s from %s\n", v->ref().c_str(), v->state.c_str(),
                  v->architecture.c_str(), v->quantization.c_str(),
                  util::FormatBytes(v->size).c_str(), f.url.c_str());
    }
    return 0;
  }
  if (f.import->parsed()) {
    const bool archive = f.file.size() > 4 && f.file.compare(f.file.size() - 4, 4, ".tar") == 0;
    if (!archive && f.ref.empty()) {
      std::fprintf(stderr, "outpost model import: name the version: import FILE NAME:VERSION\n");
      return 2;
    }
    if (archive && !f.sha256.empty()) {
      std::fprintf(stderr,
                   "outpost model import: --sha256 is for a GGUF file; an archive's blobs are "
                   "checked against their digests\n");
      return 2;
    }
    router::PullRequest pr;
    pr.source = f.file;
    pr.ref = f.ref;
    pr.sha256 = f.sha256;
    if (int rc = SignatureRequest(f, &pr); rc != 0) return rc;
    auto v = archive ? s.ImportArchive(f.file, f.ref, Bar("importing"))
                     : router::PullModel(&s, pr, Bar("importing"));
    if (!v.ok()) return Fail(v.status());
    if (archive) {
      // The signature the archive carried (or --signature), under the policy.
      std::string signature;
      if (!pr.signature_path.empty()) {
        std::ifstream in(pr.signature_path, std::ios::binary);
        if (!in) {
          std::fprintf(stderr, "outpost model import: cannot read %s\n", pr.signature_path.c_str());
          return 2;
        }
        signature.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      } else if (auto kept = s.SignatureBytes(v->ref()); kept.ok()) {
        signature = *kept;
      }
      std::string note;
      Status st = models::ApplySignaturePolicy(pr.signature_policy, signature, v->files(),
                                               pr.trusted_keys, &note);
      if (!st.ok()) {
        s.MarkFailed(v->ref(), st.message());
        return Fail(st);
      }
      if (!pr.signature_path.empty()) s.KeepSignature(v->ref(), signature);
      s.MarkSigned(v->ref(), note);
      v->signature = note;
      std::fprintf(stderr, "signature: %s\n", note.c_str());
    }
    if (f.json) {
      std::printf("%s\n", models::VersionJson(*v).dump(2).c_str());
    } else {
      std::printf("%s: %s, %s %s, %s\n", v->ref().c_str(), v->state.c_str(),
                  v->architecture.c_str(), v->quantization.c_str(),
                  util::FormatBytes(v->size).c_str());
      if (v->shards.empty()) {
        std::printf("  file %s\n", v->blob_digest.c_str());
      } else {
        for (size_t i = 0; i < v->shards.size(); ++i) {
          std::printf("  shard %zu of %zu %s\n", i + 1, v->shards.size(), v->shards[i].c_str());
        }
      }
      std::printf("  manifest %s (OCI layout: oci:%s:%s)\n", v->manifest_digest.c_str(),
                  dir.c_str(), v->ref().c_str());
    }
    return 0;
  }
  if (f.list->parsed()) {
    const auto all = s.List();
    if (f.json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& v : all) j.push_back(models::VersionJson(v));
      std::printf("%s\n", j.dump(2).c_str());
      return 0;
    }
    if (all.empty()) {
      std::printf("no models in %s (outpost model import FILE NAME:VERSION)\n", dir.c_str());
      return 0;
    }
    std::printf("%-32s %-9s %10s  %-20s %s\n", "MODEL", "STATE", "SIZE", "DIGEST", "NOTE");
    for (const auto& v : all) {
      std::printf("%-32s %-9s %10s  %-20s %s\n", v.ref().c_str(), v.state.c_str(),
                  util::FormatBytes(v.size).c_str(),
                  v.blob_digest.empty() ? "-" : v.blob_digest.substr(0, 19).c_str(),
                  v.error.c_str());
    }
    return 0;
  }
  if (f.show->parsed()) {
    auto v = s.Get(f.ref);
    if (!v.ok()) return Fail(v.status());
    std::printf("%s\n", models::VersionDetailJson(&s, *v).dump(2).c_str());
    return 0;
  }
  if (f.verify->parsed()) {
    if (Status st = s.Verify(f.ref, Bar("verifying")); !st.ok()) return Fail(st);
    std::printf("%s: the file matches its digest and is a usable GGUF\n", f.ref.c_str());
    return 0;
  }
  if (f.validate->parsed()) return RunValidate(f, &s);
  if (f.activate->parsed()) {
    if (auto got = s.Get(f.ref); got.ok() && got->validation_failed && !f.force) {
      std::fprintf(stderr,
                   "outpost model: %s failed its validation (outpost model show %s); --force to "
                   "activate it anyway\n",
                   f.ref.c_str(), f.ref.c_str());
      return 1;
    }
    auto v = s.MarkActive(f.ref);
    if (!v.ok()) return Fail(v.status());
    std::printf(
        "%s is active: `outpost serve --model %s` serves it from the next start (a "
        "running server switches with --server URL)\n",
        v->ref().c_str(), v->name.c_str());
    return 0;
  }
  if (f.rollback->parsed()) {
    if (f.ref.find(':') != std::string::npos) {
      std::fprintf(stderr, "outpost model rollback: give the NAME, not a version\n");
      return 2;
    }
    auto current = s.ActiveOf(f.ref);
    if (!current.ok()) return Fail(current.status());
    auto previous = s.PreviousOf(f.ref);
    if (!previous.ok()) return Fail(previous.status());
    auto v = s.MarkActive(previous->ref());
    if (!v.ok()) return Fail(v.status());
    if (Status st = s.MarkRetired(current->ref(),
                                  "rolled back: " + (f.reason.empty() ? "asked" : f.reason));
        !st.ok()) {
      return Fail(st);
    }
    std::printf(
        "%s is active again; %s retired (from the next start; a running server rolls "
        "back with --server URL)\n",
        v->ref().c_str(), current->ref().c_str());
    return 0;
  }
  if (Status st = s.Remove(f.ref); !st.ok()) return Fail(st);
  std::printf("removed %s\n", f.ref.c_str());
  return 0;
}

}  // namespace outpost::app
