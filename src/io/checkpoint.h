#pragma once
// A Hugging Face model directory opened for reading: config.json, then either
// model.safetensors or the shards named by model.safetensors.index.json. Owns the
// memory maps; `weights()` are views into them, checked against the config.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "model/config.h"
#include "model/weights.h"
#include "util/mapped_file.h"

namespace attngeom {

// model.safetensors.index.json: which shard file holds each tensor. Shard names are
// plain file names inside the model directory (no separators, no "." or "..").
struct ShardIndex {
  std::vector<std::string> shards;  // each once, in first-mention order
  std::map<std::string, std::string> tensor_to_shard;
};

// Parses the index JSON text; `source` names the file in errors. Throws InputError.
ShardIndex parse_shard_index(const std::string& json_text, const std::string& source);

struct ShardInfo {
  std::filesystem::path path;
  std::size_t header_bytes = 0;  // 8 + JSON header length, for provenance hashing
};

class Checkpoint {
 public:
  // Throws InputError naming the file or tensor on anything missing or malformed.
  explicit Checkpoint(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  const Weights& weights() const { return weights_; }
  const std::vector<ShardInfo>& shards() const { return shards_; }
  std::size_t weight_bytes() const;
  // The dtype most weight bytes are stored in (for provenance and precision choice).
  DType dominant_dtype() const;

 private:
  std::filesystem::path dir_;
  ModelConfig config_;
  std::vector<MappedFile> files_;  // the single owner of all weight memory
  std::vector<ShardInfo> shards_;
  Weights weights_;
};

}  // namespace attngeom
