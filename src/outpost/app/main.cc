// outpost — edge inference server. Entry point: subcommand dispatch.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <optional>
#include <string>

#include "outpost/app/audit_command.h"
#include "outpost/app/bench_command.h"
#include "outpost/app/config.h"
#include "outpost/app/fleet_command.h"
#include "outpost/app/model_command.h"
#include "outpost/app/plan_command.h"
#include "outpost/app/serve.h"
#include "outpost/engine/model.h"
#include "outpost/version.h"

namespace {

std::string Kebab(std::string s) {
  for (auto& c : s) {
    if (c == '_') c = '-';
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  // Logs go to stderr, so stdout carries only results (`--json`).
  spdlog::set_default_logger(spdlog::stderr_color_mt("outpost"));
  CLI::App app{"Outpost: an edge inference server with an OpenAI-compatible API.", "outpost"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("-V,--version", show_version, "print Outpost's and llama.cpp's versions");

  CLI::App* serve =
      app.add_subcommand("serve", "serve a GGUF model over the OpenAI-compatible HTTP API");
  std::string config_path;
  serve->add_option(
      "-c,--config", config_path,
      "YAML config file; flags override its keys. The pinned_prompts list (system prompts computed "
      "at start and kept on disk; docs/configuration.md) is set only there");
  std::map<std::string, std::optional<std::string>> flag_values;
  for (const auto& f : outpost::app::ConfigKeyDocs()) flag_values[f.key];
  std::vector<std::string> model_flags;  // --model may repeat
  for (const auto& f : outpost::app::ConfigKeyDocs()) {
    std::string name = "--" + Kebab(f.key);
    if (std::string(f.key) == "model") {
      serve->add_option("-m," + name, model_flags, f.help);
      continue;
    }
    if (std::string(f.key) == "port") name = "-p," + name;
    serve->add_option(name, flag_values[f.key], f.help);
  }

  const auto plan = outpost::app::AddPlanCommand(&app);
  const auto bench = outpost::app::AddBenchCommand(&app);
  outpost::app::AuditFlags audit_flags;
  outpost::app::AddAuditCommand(&app, &audit_flags);
  outpost::app::ModelFlags store_flags;
  outpost::app::AddModelCommand(&app, &store_flags);
  outpost::app::FleetFlags fleet_flags;
  outpost::app::AddFleetCommand(&app, &fleet_flags);

  // Usage errors exit 2. An unknown command is one even with --help after it
  // (CLI11 would print the top-level help for `outpost nosuch --help` and exit 0).
  if (argc > 1 && argv[1][0] != '-') {
    try {
      app.get_subcommand(argv[1]);
    } catch (const CLI::OptionNotFound&) {
      std::fprintf(stderr,
                   "outpost: unknown command '%s' (commands: serve, plan, bench, audit, model, "
                   "fleet; see outpost --help)\n",
                   argv[1]);
      return 2;
    }
  }
  if (argc > 2 && std::string(argv[1]) == "audit" && argv[2][0] != '-' &&
      std::string(argv[2]) != "verify" && std::string(argv[2]) != "tail") {
    std::fprintf(stderr, "outpost audit: unknown subcommand '%s' (verify, tail)\n", argv[2]);
    return 2;
  }
  if (argc > 1 && std::string(argv[1]) == "model") {
    // The first word that is not an option (or --store's value) is the subcommand.
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--store" || a == "--server" || a == "--admin-key-file" || a == "--ca-file" ||
          a == "--timeout") {
        ++i;
        continue;
      }
      if (a.rfind("-", 0) == 0) continue;
      if (a != "import" && a != "export" && a != "list" && a != "show" && a != "verify" &&
          a != "remove" && a != "activate" && a != "rollback" && a != "canary" && a != "promote" &&
          a != "pull" && a != "sign" && a != "validate" && a != "requantize") {
        std::fprintf(stderr,
                     "outpost model: unknown subcommand '%s' (import, export, list, show, verify, "
                     "pull, sign, validate, requantize, activate, canary, promote, rollback, "
                     "remove)\n",
                     a.c_str());
        return 2;
      }
      break;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints help (rc 0) or the error
    return rc == 0 ? 0 : 2;
  }

  if (show_version) {
    std::printf("outpost %s\nllama.cpp %s\n", OUTPOST_VERSION, OUTPOST_LLAMA_VERSION);
    return 0;
  }
  if (app.got_subcommand("plan")) return outpost::app::RunPlan(*plan);
  if (app.got_subcommand("bench")) return outpost::app::RunBenchCommand(*bench);
  if (app.got_subcommand("audit")) return outpost::app::RunAudit(audit_flags);
  if (app.got_subcommand("model")) return outpost::app::RunModel(store_flags);
  if (app.got_subcommand("fleet")) return outpost::app::RunFleet(fleet_flags);
  if (!serve->parsed()) {
    std::printf("%s", app.help().c_str());
    return 0;
  }

  outpost::app::ServeConfig cfg;
  if (!config_path.empty()) {
    if (auto st = outpost::app::LoadConfigFile(config_path, &cfg); !st.ok()) {
      std::fprintf(stderr, "outpost: config error: %s\n", st.message().c_str());
      return 2;
    }
  }
  for (const auto& [key, value] : flag_values) {
    if (!value) continue;
    if (auto st = outpost::app::ApplySetting(&cfg, key, *value); !st.ok()) {
      std::fprintf(stderr, "outpost: --%s: %s\n", Kebab(key).c_str(), st.message().c_str());
      return 2;
    }
  }
  if (auto st = outpost::app::ApplyModelFlags(&cfg, model_flags); !st.ok()) {
    std::fprintf(stderr, "outpost: --model: %s\n", st.message().c_str());
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(cfg.log_level));
  return outpost::app::RunServe(std::move(cfg));
}
