#pragma once
// Reads a Hugging Face config.json into a typed ModelConfig, checking every field.
#include <filesystem>
#include <string>

#include "model/config.h"

namespace attngeom {

ModelConfig load_model_config(const std::filesystem::path& config_path);
ModelConfig parse_model_config(const std::string& json_text, const std::string& source);

}  // namespace attngeom
