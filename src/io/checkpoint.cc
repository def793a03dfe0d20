#include "io/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "io/config_json.h"
#include "util/error.h"
#include "util/file_read.h"
#include "util/json_parse.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

// "owner/name" as the Hub spells a repository id: two parts of letters, digits, '.', '_' and '-'.
bool looks_like_hub_id(const fs::path& given) {
  const std::string text = given.string();
  const std::size_t slash = text.find('/');
  const auto part_ok = [](std::string_view part) {
    return !part.empty() && part != "." && part != ".." && std::all_of(part.begin(), part.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
    });
  };
  return slash != std::string::npos && part_ok(std::string_view(text).substr(0, slash)) &&
         part_ok(std::string_view(text).substr(slash + 1));
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Shard file names from the index must name plain files inside the model directory.
void check_shard_name(const std::string& name, const std::string& source) {
  if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
      name.find('\0') != std::string::npos || name == "." || name == "..") {
    throw InputError(source + ": shard name '" + name + "' must be a plain file name inside the model directory");
  }
}

// The storage dtype config.json's torch_dtype promises, if it states one.
std::optional<DType> promised_dtype(const ModelConfig& config) {
  if (config.torch_dtype == "float32") return DType::kF32;
  if (config.torch_dtype == "float16") return DType::kF16;
  if (config.torch_dtype == "bfloat16") return DType::kBF16;
  return std::nullopt;
}

void bind_weight(const WeightSlot& slot, const SafetensorsEntry& entry, const fs::path& file,
                 std::optional<DType> promised, Weights& weights) {
  const std::string where = file.string() + ": tensor '" + slot.name + "'";
  if (!entry.dtype || (*entry.dtype != DType::kF32 && *entry.dtype != DType::kF16 && *entry.dtype != DType::kBF16)) {
    throw InputError(where + " has dtype " + entry.dtype_name + "; expected F32, F16 or BF16");
  }
  if (promised && *entry.dtype != *promised) {
    throw InputError(where + " has dtype " + entry.dtype_name + "; config.json torch_dtype implies " +
                     std::string(dtype_name(*promised)));
  }
  if (entry.shape != slot.shape) {
    throw InputError(where + " has shape " + shape_text(entry.shape) + "; the config implies " +
                     shape_text(slot.shape));
  }
  TensorView& view = tensor_at(weights, slot);
  view.name = slot.name;
  view.dtype = *entry.dtype;
  view.rows = 1;  // a 3-D tensor (fused experts) is viewed as [shape[0] * shape[1], shape[2]]
  for (std::size_t d = 0; d + 1 < slot.shape.size(); ++d) view.rows *= slot.shape[d];
  view.cols = slot.shape.back();
  view.data = entry.data.data();
  // NaN or Inf in any weight reaches every later activation and head; refuse the checkpoint
  // rather than analyse garbage. The scan reads exponent bits only (see count_nonfinite).
  const NonFiniteCount bad = count_nonfinite(view.dtype, view.data, static_cast<std::size_t>(view.numel()));
  if (bad.count > 0) {
    throw InputError(where + " holds " + std::to_string(bad.count) + " NaN/Inf value" + (bad.count == 1 ? "" : "s") +
                     " (first at flat index " + std::to_string(bad.first) + "); refusing a corrupt checkpoint");
  }
}

}  // namespace

ShardIndex parse_shard_index(const std::string& json_text, const std::string& source) {
  nlohmann::json index;
  try {
    index = parse_json(json_text, source);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(source + ": malformed JSON (" + std::string(e.what()) + ")");
  }
  const auto weight_map = index.is_object() ? index.find("weight_map") : index.end();
  if (!index.is_object() || weight_map == index.end() || !weight_map->is_object()) {
    throw InputError(source + ": expected an object with a 'weight_map' object");
  }
  ShardIndex result;
  for (const auto& [tensor, shard] : weight_map->items()) {
    if (!shard.is_string()) throw InputError(source + ": weight_map['" + tensor + "'] is not a string");
    const auto name = shard.get<std::string>();
    check_shard_name(name, source);
    result.tensor_to_shard[tensor] = name;
    if (std::find(result.shards.begin(), result.shards.end(), name) == result.shards.end())
      result.shards.push_back(name);
  }
  if (result.shards.empty()) throw InputError(source + ": weight_map is empty");
  return result;
}

Checkpoint::Checkpoint(const fs::path& dir) : dir_(dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    std::error_code ignored;
    const std::string given = fs::exists(dir, ignored) ? "a file, not a folder; "
                              : looks_like_hub_id(dir) ? "this looks like a Hugging Face Hub id; "
                                                       : "";
    throw MissingFileError(dir.string() + ": model directory not found (" + given +
                           "expected a local Hugging Face checkpoint folder with config.json and safetensors: "
                           "attngeom reads local folders only and downloads nothing" +
                           (ec && ec != std::errc::no_such_file_or_directory ? "; " + ec.message() : std::string()) +
                           ")");
  }
  config_ = load_model_config(dir / "config.json");

  // Locate shards: the index when present, else the single model.safetensors.
  const fs::path index_path = dir / "model.safetensors.index.json";
  ShardIndex index;
  if (fs::exists(index_path, ec)) {
    index = parse_shard_index(read_file_bytes(index_path, kMaxConfigBytes, "shard index"), index_path.string());
  } else {
    index.shards = {"model.safetensors"};
  }
  const auto& shard_names = index.shards;
  const auto& tensor_to_shard = index.tensor_to_shard;

  std::vector<SafetensorsHeader> headers;
  for (const auto& name : shard_names) {
    const fs::path path = dir / name;
    // A dangling link or a loop sets `ec`: MappedFile then reports the system's reason.
    if (!fs::exists(path, ec) && !ec) {
      throw InputError(path.string() + ": missing weight file" +
                       (tensor_to_shard.empty() ? " (expected model.safetensors or model.safetensors.index.json)"
                                                : " (named in model.safetensors.index.json)"));
    }
    files_.emplace_back(path);
    headers.push_back(parse_safetensors(files_.back().bytes(), path.string()));
    std::size_t header_len = 0;
    const auto bytes = files_.back().bytes();
    for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[static_cast<std::size_t>(i)];
    shards_.push_back({path, 8 + header_len});
  }

  const auto holds = [&](const std::string& name) {
    return tensor_to_shard.empty() ? headers[0].find(name) != nullptr : tensor_to_shard.count(name) > 0;
  };
  // GPT-2: GPT2LMHeadModel names its tensors transformer.*, while checkpoints saved from
  // GPT2Model (the Hub's original gpt2) name them bare; the embedding's name tells which.
  ModelRecipe& recipe = config_.recipe;
  if (!recipe.body_prefix.empty()) {
    const std::string bare = recipe.weight_prefix + recipe.names.embed;
    if (!holds(recipe.weight_prefix + recipe.body_prefix + recipe.names.embed) && holds(bare)) {
      recipe.body_prefix.clear();
    }
  }
  // Mixtures of experts: transformers 5.x's save_pretrained(save_original_format=False) writes the
  // experts fused (TensorNames::fused_experts); the first sparse layer's gate_up_proj tells.
  for (std::size_t l = 0; l < recipe.layers.size(); ++l) {
    if (!recipe.layers[l].sparse_mlp) continue;
    recipe.fused_experts = holds(recipe.weight_prefix + recipe.body_prefix + recipe.names.layers + std::to_string(l) +
                                 "." + recipe.names.fused_experts + "gate_up_proj");
    break;
  }
  weights_.layers.assign(static_cast<std::size_t>(config_.layers), LayerTensors<TensorView>{});
  for (const WeightSlot& slot : weight_slots(config_)) {
    if (slot.unit) {
      tensor_at(weights_, slot) = unit_weight(slot, weights_.derived);
      continue;
    }
    std::size_t shard = 0;
    if (!tensor_to_shard.empty()) {
      const auto it = tensor_to_shard.find(slot.name);
      if (it == tensor_to_shard.end()) {
        throw InputError(index_path.string() + ": missing tensor '" + slot.name + "' (expected shape " +
                         shape_text(slot.shape) + ")");
      }
      shard =
          static_cast<std::size_t>(std::find(shard_names.begin(), shard_names.end(), it->second) - shard_names.begin());
    }
    const SafetensorsEntry* entry = headers[shard].find(slot.name);
    if (entry == nullptr) {
      throw InputError(shards_[shard].path.string() + ": missing tensor '" + slot.name + "' (expected shape " +
                       shape_text(slot.shape) + ")");
    }
    bind_weight(slot, *entry, shards_[shard].path, promised_dtype(config_), weights_);
  }
  if (config_.tie_embeddings) {
    weights_.lm_head = weights_.embed;
  }
  arrange_weights(config_, weights_);
}

std::size_t Checkpoint::weight_bytes() const {
  std::size_t total = 0;
  for (const auto& f : files_) total += f.bytes().size();
  return total;
}

DType Checkpoint::dominant_dtype() const { return attngeom::dominant_dtype(weights_); }

}  // namespace attngeom
