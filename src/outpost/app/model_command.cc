#include "outpost/app/model_command.h"

#include <unistd.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "outpost/app/config.h"
#include "outpost/models/model_store.h"
#include "outpost/util/units.h"

namespace outpost::app {
namespace {

nlohmann::json ToJson(const models::ModelVersion& v) {
  nlohmann::json j = {{"ref", v.ref()},
                      {"name", v.name},
                      {"version", v.version},
                      {"state", v.state},
                      {"source", v.source},
                      {"size", v.size},
                      {"digest", v.blob_digest},
                      {"manifest", v.manifest_digest},
                      {"architecture", v.architecture},
                      {"quantization", v.quantization},
                      {"params", v.n_params},
                      {"created", v.created_unix}};
  if (!v.error.empty()) j["error"] = v.error;
  return j;
}

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

}  // namespace

CLI::App* AddModelCommand(CLI::App* app, ModelFlags* f) {
  CLI::App* model = app->add_subcommand("model", "the box's model store: import, list, verify");
  model->require_subcommand(1);
  model->add_option("--store", f->store, "the store directory (default: <state dir>/models)");
  f->import = model->add_subcommand(
      "import",
      "copy a GGUF file (or a version from an OCI-layout tar made by export or skopeo) into the "
      "store as NAME:VERSION, hash and check it");
  f->import->add_option("file", f->file, "the GGUF file, or a .tar archive")->required();
  f->import->add_option("ref", f->ref,
                        "NAME:VERSION, e.g. smollm2:1 (for an archive: default its own name)");
  f->import->add_option("--sha256", f->sha256, "refuse the file unless its sha256 is this");
  f->import->add_flag("--json", f->json, "print the version as JSON");
  f->export_ = model->add_subcommand(
      "export", "write a version as one OCI-layout tar (for sites without a network)");
  f->export_->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->export_->add_option("file", f->out, "the .tar to write")->required();
  f->list = model->add_subcommand("list", "every version in the store with its state");
  f->list->add_flag("--json", f->json, "as JSON");
  f->show = model->add_subcommand("show", "one version: state, digests, what the GGUF says");
  f->show->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->show->add_flag("--json", f->json, "as JSON");
  f->verify = model->add_subcommand("verify", "re-hash a version's file and check the GGUF again");
  f->verify->add_option("ref", f->ref, "NAME:VERSION")->required();
  f->remove = model->add_subcommand("remove", "remove a version (not an active one)");
  f->remove->add_option("ref", f->ref, "NAME:VERSION")->required();
  return model;
}

int RunModel(const ModelFlags& f) {
  ServeConfig cfg;
  const std::string dir = f.store.empty() ? StateDir(cfg) + "/models" : f.store;
  auto store = models::ModelStore::Open(dir);
  if (!store.ok()) return Fail(store.status());
  auto& s = **store;
  if (f.export_->parsed()) {
    if (Status st = s.Export(f.ref, f.out, Bar("exporting")); !st.ok()) return Fail(st);
    std::printf("wrote %s to %s (skopeo: oci-archive:%s)\n", f.ref.c_str(), f.out.c_str(),
                f.out.c_str());
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
    auto v = archive ? s.ImportArchive(f.file, f.ref, Bar("importing"))
                     : s.Import(f.file, f.ref, f.sha256, Bar("importing"));
    if (!v.ok()) return Fail(v.status());
    if (f.json) {
      std::printf("%s\n", ToJson(*v).dump(2).c_str());
    } else {
      std::printf("%s: %s, %s %s, %s\n", v->ref().c_str(), v->state.c_str(),
                  v->architecture.c_str(), v->quantization.c_str(),
                  util::FormatBytes(v->size).c_str());
      std::printf("  file %s\n  manifest %s (OCI layout: oci:%s:%s)\n", v->blob_digest.c_str(),
                  v->manifest_digest.c_str(), dir.c_str(), v->ref().c_str());
    }
    return 0;
  }
  if (f.list->parsed()) {
    const auto all = s.List();
    if (f.json) {
      nlohmann::json j = nlohmann::json::array();
      for (const auto& v : all) j.push_back(ToJson(v));
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
    std::printf("%s\n", ToJson(*v).dump(2).c_str());
    return 0;
  }
  if (f.verify->parsed()) {
    if (Status st = s.Verify(f.ref, Bar("verifying")); !st.ok()) return Fail(st);
    std::printf("%s: the file matches its digest and is a usable GGUF\n", f.ref.c_str());
    return 0;
  }
  if (Status st = s.Remove(f.ref); !st.ok()) return Fail(st);
  std::printf("removed %s\n", f.ref.c_str());
  return 0;
}

}  // namespace outpost::app
