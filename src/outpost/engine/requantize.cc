#include "outpost/engine/requantize.h"

#include <ggml.h>
#include <gguf.h>
#include <llama.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "outpost/engine/model.h"
#include "outpost/util/status_macros.h"

namespace outpost::engine {
namespace {

struct GgufDeleter {
  void operator()(gguf_context* c) const { gguf_free(c); }
};
struct GgmlDeleter {
  void operator()(ggml_context* c) const { ggml_free(c); }
};

// Every tensor of the model at `path` (all shards) and its general.file_type
// (-1 when absent).
Status ReadTensors(const std::string& path, std::vector<GgufTensor>* out, int64_t* file_type,
                   uint64_t* file_bytes) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Status::NotFound("'" + path + "' does not exist", "model");
  }
  std::vector<std::string> files = {path};
  *file_type = -1;
  *file_bytes = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    ggml_context* meta_raw = nullptr;
    gguf_init_params params{/*no_alloc=*/true, /*ctx=*/&meta_raw};
    std::unique_ptr<gguf_context, GgufDeleter> g(gguf_init_from_file(files[f].c_str(), params));
    std::unique_ptr<ggml_context, GgmlDeleter> meta(meta_raw);
    if (!g) {
      return Status::InvalidArgument("'" + files[f] + "' could not be parsed as GGUF", "model");
    }
    *file_bytes += std::filesystem::file_size(files[f], ec);
    if (f == 0) {
      if (const int64_t id = gguf_find_key(g.get(), "general.file_type");
          id >= 0 && gguf_get_kv_type(g.get(), id) == GGUF_TYPE_UINT32) {
        *file_type = gguf_get_val_u32(g.get(), id);
      }
      const int64_t split = gguf_find_key(g.get(), "split.count");
      const int count = split >= 0 ? static_cast<int>(gguf_get_val_u16(g.get(), split)) : 1;
      if (count > 1) {
        char prefix[4096], shard[4096];
        if (llama_split_prefix(prefix, sizeof prefix, path.c_str(), 0, count) <= 0) {
          return Status::InvalidArgument("'" + path + "' is the first of " + std::to_string(count) +
                                             " shards but not named as gguf-split names them",
                                         "model");
        }
        for (int i = 1; i < count; ++i) {
          llama_split_path(shard, sizeof shard, prefix, i, count);
          files.push_back(shard);
        }
      }
    }
    const uint64_t data = gguf_get_data_offset(g.get());
    for (int64_t i = 0; i < gguf_get_n_tensors(g.get()); ++i) {
      const ggml_tensor* t = ggml_get_tensor(meta.get(), gguf_get_tensor_name(g.get(), i));
      out->push_back({gguf_get_tensor_name(g.get(), i),
                      ggml_type_name(gguf_get_tensor_type(g.get(), i)), t != nullptr ? t->ne[0] : 0,
                      gguf_get_tensor_size(g.get(), i), files[f],
                      data + gguf_get_tensor_offset(g.get(), i)});
    }
  }
  return Status::Ok();
}

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

StatusOr<std::vector<GgufTensor>> ListTensors(const std::string& path) {
  std::vector<GgufTensor> tensors;
  int64_t file_type = -1;
  uint64_t bytes = 0;
  OUTPOST_RETURN_IF_ERROR(ReadTensors(path, &tensors, &file_type, &bytes));
  return tensors;
}

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
  std::vector<GgufTensor> tensors;
  int64_t file_type = -1;
  HeadRequantizeResult r;
  OUTPOST_RETURN_IF_ERROR(ReadTensors(in_path, &tensors, &file_type, &r.file_bytes_before));
  const GgufTensor* head = nullptr;
  for (const char* name : {"output.weight", "token_embd.weight"}) {
    for (const auto& t : tensors) {
      if (head == nullptr && t.name == name) head = &t;
    }
  }
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
