#include "outpost/engine/requantize.h"

#include <ggml.h>
#include <llama.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "outpost/engine/model.h"
#include "outpost/util/file_io.h"
#include "outpost/util/status_macros.h"

namespace outpost::engine {
namespace {

// The ggml type named `name` (lower case, as ggml_type_name spells it).
ggml_type TypeNamed(const std::string& name) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* n = ggml_type_name(static_cast<ggml_type>(t));
    if (n != nullptr && name == n) return static_cast<ggml_type>(t);
  }
  return GGML_TYPE_COUNT;
}

// "^name$" with the regex's special characters escaped (tensor names hold
// letters, digits, '.', '_' and sometimes '-').
std::string ExactPattern(const std::string& name) {
  std::string p = "^";
  for (char c : name) {
    if (std::strchr(".^$|()[]{}*+?\\", c) != nullptr) p += '\\';
    p += c;
  }
  return p + "$";
}

std::string List(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

const std::vector<std::string>& HeadTypeNames() {
  static const std::vector<std::string> names = {"iq4_nl", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"};
  return names;
}

StatusOr<HeadRequantizeResult> RequantizeHead(const std::string& in_path,
                                              const std::string& out_path, const std::string& type,
                                              int32_t n_threads) {
  bool known = false;
  for (const auto& n : HeadTypeNames()) known = known || n == type;
  const ggml_type target = known ? TypeNamed(type) : GGML_TYPE_COUNT;
  if (target == GGML_TYPE_COUNT) {
    return Status::InvalidArgument(
        "head type '" + type + "' is not one of " + List(HeadTypeNames()), "head");
  }
  ModelInfo info;
  OUTPOST_ASSIGN_OR_RETURN(info, ReadModelInfo(in_path));
  std::vector<GgufTensor> tensors;
  OUTPOST_ASSIGN_OR_RETURN(tensors, ListTensors(in_path));
  const int64_t file_type = info.file_type_id;
  HeadRequantizeResult r;
  r.file_bytes_before = info.file_bytes;
  const GgufTensor* head = FindOutputHead(tensors);
  if (head == nullptr) {
    return Status::InvalidArgument(
        "'" + in_path + "' has neither output.weight nor token_embd.weight: no output head",
        "model");
  }
  r.tensor = head->name;
  r.from_type = head->type;
  r.to_type = type;
  r.head_bytes_before = head->bytes;
  const ggml_type head_type = TypeNamed(head->type);
  if (head_type == target) {
    return Status::InvalidArgument(head->name + " is already " + type, "head");
  }
  const int64_t block = ggml_blck_size(target);
  if (head->row_length % block != 0) {
    return Status::InvalidArgument(head->name + "'s rows are " + std::to_string(head->row_length) +
                                       " long, not a multiple of " + type + "'s block of " +
                                       std::to_string(block),
                                   "head");
  }
  r.head_bytes_after = ggml_row_size(target, head->row_length) *
                       (head->bytes / ggml_row_size(head_type, head->row_length));
  // The new file is the old one with a smaller head: its room is checked
  // before llama.cpp writes a byte (it would stop at a full disk part-way).
  const std::filesystem::path out_dir = std::filesystem::path(out_path).parent_path();
  OUTPOST_RETURN_IF_ERROR(util::CheckDiskRoom(
      out_dir.empty() ? "." : out_dir.string(),
      r.file_bytes_before - r.head_bytes_before + r.head_bytes_after, "'" + out_path + "'"));

  // Every tensor pinned to the type it has (a tensor already of its target
  // type is copied, not requantized), the head to the new one. The pattern
  // strings must outlive the call.
  std::vector<std::string> patterns;
  patterns.reserve(tensors.size());
  std::vector<llama_model_tensor_override> overrides;
  for (const auto& t : tensors) {
    patterns.push_back(ExactPattern(t.name));
    overrides.push_back({nullptr, &t == head ? target : TypeNamed(t.type)});
  }
  for (size_t i = 0; i < overrides.size(); ++i) overrides[i].pattern = patterns[i].c_str();
  overrides.push_back({nullptr, GGML_TYPE_COUNT});
  // The mixture's own type choice never runs (every tensor is named above),
  // but it needs a quantized default; the file's own type is written back.
  std::vector<llama_model_kv_override> kv;
  if (file_type >= 0) {
    llama_model_kv_override o{};
    o.tag = LLAMA_KV_OVERRIDE_TYPE_INT;
    std::snprintf(o.key, sizeof o.key, "%s", "general.file_type");
    o.val_i64 = file_type;
    kv.push_back(o);
  }
  kv.push_back(llama_model_kv_override{});

  llama_model_quantize_params qp = llama_model_quantize_default_params();
  qp.nthread = n_threads;
  qp.ftype = LLAMA_FTYPE_MOSTLY_Q8_0;
  qp.allow_requantize = true;
  qp.quantize_output_tensor = true;
  qp.tt_overrides = overrides.data();
  qp.kv_overrides = kv.data();
  std::error_code ec;
  std::filesystem::remove(out_path, ec);
  uint32_t rc = 0;
  {
    // llama.cpp warns "applying manual override" for every pinned tensor
    // whose type differs from the nominal Q8_0: noise here.
    QuietLlamaWarnings quiet;
    rc = llama_model_quantize(in_path.c_str(), out_path.c_str(), &qp);
  }
  if (rc != 0) {
    std::filesystem::remove(out_path, ec);
    return Status::Internal("llama.cpp's quantizer failed writing '" + out_path + "' from '" +
                            in_path + "' (its error is logged above)");
  }
  r.file_bytes_after = std::filesystem::file_size(out_path, ec);
  return r;
}

}  // namespace outpost::engine
