// Reads GGUF metadata through ggml's gguf API (no weights are loaded).
#include <ggml.h>
#include <gguf.h>
#include <llama.h>

#include <filesystem>
#include <memory>
#include <string>

#include "outpost/engine/model_info.h"
#include "outpost/util/status_macros.h"

namespace outpost::engine {
namespace {

struct GgufDeleter {
  void operator()(gguf_context* c) const { gguf_free(c); }
};

// Reads an integer key that may be stored as any integer type or (per layer) as
// an array; arrays yield their maximum. Returns -1 when absent.
int64_t GetInt(const gguf_context* g, const std::string& key) {
  const int64_t id = gguf_find_key(g, key.c_str());
  if (id < 0) return -1;
  auto scalar = [&](enum gguf_type t, const void* data, size_t i) -> int64_t {
    switch (t) {
      case GGUF_TYPE_UINT8:
        return static_cast<const uint8_t*>(data)[i];
      case GGUF_TYPE_INT8:
        return static_cast<const int8_t*>(data)[i];
      case GGUF_TYPE_UINT16:
        return static_cast<const uint16_t*>(data)[i];
      case GGUF_TYPE_INT16:
        return static_cast<const int16_t*>(data)[i];
      case GGUF_TYPE_UINT32:
        return static_cast<const uint32_t*>(data)[i];
      case GGUF_TYPE_INT32:
        return static_cast<const int32_t*>(data)[i];
      case GGUF_TYPE_UINT64:
        return static_cast<int64_t>(static_cast<const uint64_t*>(data)[i]);
      case GGUF_TYPE_INT64:
        return static_cast<const int64_t*>(data)[i];
      default:
        return -1;
    }
  };
  const enum gguf_type t = gguf_get_kv_type(g, id);
  if (t == GGUF_TYPE_ARRAY) {
    const enum gguf_type at = gguf_get_arr_type(g, id);
    const size_t n = gguf_get_arr_n(g, id);
    if (at == GGUF_TYPE_STRING || at == GGUF_TYPE_ARRAY) return static_cast<int64_t>(n);
    const void* data = gguf_get_arr_data(g, id);
    int64_t best = -1;
    for (size_t i = 0; i < n; ++i) best = std::max(best, scalar(at, data, i));
    return best;
  }
  switch (t) {
    case GGUF_TYPE_UINT8:
      return gguf_get_val_u8(g, id);
    case GGUF_TYPE_INT8:
      return gguf_get_val_i8(g, id);
    case GGUF_TYPE_UINT16:
      return gguf_get_val_u16(g, id);
    case GGUF_TYPE_INT16:
      return gguf_get_val_i16(g, id);
    case GGUF_TYPE_UINT32:
      return gguf_get_val_u32(g, id);
    case GGUF_TYPE_INT32:
      return gguf_get_val_i32(g, id);
    case GGUF_TYPE_UINT64:
      return static_cast<int64_t>(gguf_get_val_u64(g, id));
    case GGUF_TYPE_INT64:
      return gguf_get_val_i64(g, id);
    default:
      return -1;
  }
}

std::string GetString(const gguf_context* g, const std::string& key) {
  const int64_t id = gguf_find_key(g, key.c_str());
  if (id < 0 || gguf_get_kv_type(g, id) != GGUF_TYPE_STRING) return {};
  return gguf_get_val_str(g, id);
}

// A GGUF's metadata and tensor descriptions (no weights), as ggml reads them.
// No ggml context is made from them: gguf's own checks of a tensor's shape are
// looser than ggml_new_tensor's asserts (an element count just under
// INT64_MAX passes the first and aborts the second — found by
// fuzz_gguf_metadata), and an untrusted header must never abort the process.
// Shapes come from gguf_get_tensor_ne instead.
struct Gguf {
  std::unique_ptr<gguf_context, GgufDeleter> g;
};
StatusOr<Gguf> OpenGguf(const std::string& path) {
  gguf_init_params params{/*no_alloc=*/true, /*ctx=*/nullptr};
  Gguf f;
  f.g.reset(gguf_init_from_file(path.c_str(), params));
  if (!f.g) {
    return Status::InvalidArgument(
        "'" + path + "' could not be parsed as GGUF (truncated or corrupt header)", "model");
  }
  return f;
}

// Adds the tensors of one parsed file to `info`: their data must lie inside
// the file (a truncated download fails here).
Status AddTensors(const gguf_context* g, const std::string& path, uint64_t file_bytes,
                  ModelInfo* info) {
  const size_t data_offset = gguf_get_data_offset(g);
  const int64_t n_tensors = gguf_get_n_tensors(g);
  for (int64_t i = 0; i < n_tensors; ++i) {
    const size_t size = gguf_get_tensor_size(g, i);
    const size_t end = data_offset + gguf_get_tensor_offset(g, i) + size;
    if (end > file_bytes) {
      return Status::InvalidArgument(
          "'" + path + "' is truncated: tensor '" + gguf_get_tensor_name(g, i) + "' ends at byte " +
              std::to_string(end) + " but the file has " + std::to_string(file_bytes) + " bytes",
          "model");
    }
    info->weight_bytes += size;
  }
  for (int64_t i = 0; i < n_tensors; ++i) {
    // ggml_new_tensor's own rule (stricter than gguf's), so that no loader
    // that builds tensors from this header (llama.cpp's) aborts on it.
    const int64_t* ne = gguf_get_tensor_ne(g, i);
    int64_t elements = ne[0];
    for (int d = 1; d < GGML_MAX_DIMS; ++d) {
      if (ne[d] <= 1) continue;
      if (INT64_MAX / ne[d] <= elements) {
        return Status::InvalidArgument("'" + path + "': tensor '" + gguf_get_tensor_name(g, i) +
                                           "' has too many elements for ggml",
                                       "model");
      }
      elements *= ne[d];
    }
    const bool empty = ne[1] == 0 || ne[2] == 0 || ne[3] == 0;
    info->n_params += empty ? 0 : static_cast<uint64_t>(elements);
  }
  return Status::Ok();
}

// The shards after the first (`first` is shard 1 of `count`): found by
// llama.cpp's own naming (its split numbers are 0-based), each checked to
// be the shard it should be.
Status AddShards(const std::string& first, int64_t count, ModelInfo* info) {
  char prefix[4096];
  if (llama_split_prefix(prefix, sizeof prefix, first.c_str(), 0, static_cast<int>(count)) <= 0) {
    return Status::InvalidArgument(
        "'" + first + "' is the first of " + std::to_string(count) +
            " shards, but its name does not follow gguf-split's PREFIX-00001-of-NNNNN.gguf, so "
            "the others cannot be found",
        "model");
  }
  info->shards.push_back(first);
  for (int64_t i = 2; i <= count; ++i) {
    char buf[4096];
    llama_split_path(buf, sizeof buf, prefix, static_cast<int>(i - 1), static_cast<int>(count));
    const std::string path = buf;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      return Status::NotFound("shard " + std::to_string(i) + " of " + std::to_string(count) +
                                  " of '" + first + "' is missing: " + path,
                              "model");
    }
    Gguf f;
    OUTPOST_ASSIGN_OR_RETURN(f, OpenGguf(path));
    const gguf_context* g = f.g.get();
    if (GetInt(g, "split.no") != i - 1 || GetInt(g, "split.count") != count) {
      return Status::InvalidArgument("'" + path + "' is not shard " + std::to_string(i) + " of " +
                                         std::to_string(count) +
                                         " (its split.no/split.count say otherwise)",
                                     "model");
    }
    const uint64_t bytes = std::filesystem::file_size(path, ec);
    info->file_bytes += bytes;
    if (Status st = AddTensors(g, path, bytes, info); !st.ok()) return st;
    info->shards.push_back(path);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<ModelInfo> ReadModelInfo(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Status::NotFound("model file '" + path + "' does not exist or is not a file", "model");
  }
  ModelInfo info;
  info.path = path;
  info.file_bytes = std::filesystem::file_size(path, ec);

  // Check the magic ourselves so the common mistake gets a plain message.
  {
    FILE* f = std::fopen(path.c_str(), "rb");
    char magic[4] = {0, 0, 0, 0};
    const size_t got = f ? std::fread(magic, 1, 4, f) : 0;
    if (f) std::fclose(f);
    if (got != 4 || std::string(magic, 4) != "GGUF") {
      return Status::InvalidArgument("'" + path + "' is not a GGUF file (bad magic)", "model");
    }
  }

  Gguf opened;
  OUTPOST_ASSIGN_OR_RETURN(opened, OpenGguf(path));
  const auto& g = opened.g;

  // Tensor data must lie inside the file: a truncated download fails here.
  if (Status st = AddTensors(g.get(), path, info.file_bytes, &info); !st.ok()) {
    return st;
  }
  if (const int64_t count = GetInt(g.get(), "split.count"); count > 1) {
    const int64_t no = GetInt(g.get(), "split.no");
    if (no != 0) {
      return Status::InvalidArgument("'" + path + "' is shard " + std::to_string(no + 1) + " of " +
                                         std::to_string(count) +
                                         " of a split model; give the first shard",
                                     "model");
    }
    if (Status st = AddShards(path, count, &info); !st.ok()) return st;
  }

  info.architecture = GetString(g.get(), "general.architecture");
  if (info.architecture.empty()) {
    return Status::InvalidArgument("'" + path + "' lacks general.architecture", "model");
  }
  const std::string a = info.architecture + ".";
  info.name = GetString(g.get(), "general.name");
  if (info.name.empty()) info.name = std::filesystem::path(path).stem().string();
  info.n_layers = static_cast<int32_t>(GetInt(g.get(), a + "block_count"));
  info.n_embd = static_cast<int32_t>(GetInt(g.get(), a + "embedding_length"));
  info.n_heads = static_cast<int32_t>(GetInt(g.get(), a + "attention.head_count"));
  info.n_kv_heads = static_cast<int32_t>(GetInt(g.get(), a + "attention.head_count_kv"));
  if (info.n_kv_heads <= 0) info.n_kv_heads = info.n_heads;
  info.head_dim_k = static_cast<int32_t>(GetInt(g.get(), a + "attention.key_length"));
  info.head_dim_v = static_cast<int32_t>(GetInt(g.get(), a + "attention.value_length"));
  if (info.head_dim_k <= 0 && info.n_heads > 0) info.head_dim_k = info.n_embd / info.n_heads;
  if (info.head_dim_v <= 0) info.head_dim_v = info.head_dim_k;
  info.n_ctx_train = static_cast<int32_t>(GetInt(g.get(), a + "context_length"));
  info.sliding_window =
      std::max<int32_t>(0, static_cast<int32_t>(GetInt(g.get(), a + "attention.sliding_window")));
  info.n_vocab = static_cast<int32_t>(GetInt(g.get(), "tokenizer.ggml.tokens"));
  const int64_t ftype = GetInt(g.get(), "general.file_type");
  info.file_type = ftype >= 0 ? "ftype " + std::to_string(ftype) : "unknown";
  info.file_type_id = ftype;

  const char* missing = info.n_layers <= 0     ? "block_count"
                        : info.n_embd <= 0     ? "embedding_length"
                        : info.n_heads <= 0    ? "attention.head_count"
                        : info.head_dim_k <= 0 ? "attention.key_length"
                                               : nullptr;
  if (missing) {
    return Status::InvalidArgument(
        "'" + path + "' lacks " + a + missing + ", needed for memory planning", "model");
  }
  return info;
}

StatusOr<std::vector<GgufTensor>> ListTensors(const std::string& path) {
  ModelInfo info;
  OUTPOST_ASSIGN_OR_RETURN(info, ReadModelInfo(path));
  const std::vector<std::string> files =
      info.shards.empty() ? std::vector<std::string>{path} : info.shards;
  std::vector<GgufTensor> out;
  for (const auto& file : files) {
    Gguf f;
    OUTPOST_ASSIGN_OR_RETURN(f, OpenGguf(file));
    const gguf_context* g = f.g.get();
    const uint64_t data = gguf_get_data_offset(g);
    for (int64_t i = 0; i < gguf_get_n_tensors(g); ++i) {
      out.push_back({gguf_get_tensor_name(g, i), ggml_type_name(gguf_get_tensor_type(g, i)),
                     gguf_get_tensor_ne(g, i)[0], gguf_get_tensor_size(g, i), file,
                     data + gguf_get_tensor_offset(g, i)});
    }
  }
  return out;
}

const GgufTensor* FindOutputHead(const std::vector<GgufTensor>& tensors) {
  for (const char* name : {"output.weight", "token_embd.weight"}) {
    for (const auto& t : tensors) {
      if (t.name == name) return &t;
    }
  }
  return nullptr;
}

}  // namespace outpost::engine
