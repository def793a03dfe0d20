#pragma once
// Reads a Hugging Face config.json into a typed ModelConfig, checking every field.
#include <cstddef>
#include <filesystem>
#include <string>

#include "model/config.h"

namespace attngeom {

// Largest config.json or model.safetensors.index.json we read (real ones are kilobytes).
inline constexpr std::size_t kMaxConfigBytes = std::size_t{64} << 20;

// Most transformer layers we accept (the largest public models have about 130).
inline constexpr int kMaxLayers = 4096;

ModelConfig load_model_config(const std::filesystem::path& config_path);
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);

}  // namespace attngeom
