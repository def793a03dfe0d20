#pragma once
// A config.json's per-layer lists: layer indices (mlp_only_layers), the sliding layers
// (layer_types, GPT-Neo's attention_layers) and the layers with RoPE (SmolLM3's no_rope_layers).
#include <vector>

#include "io/config_fields.h"

namespace attngeom {

// mlp_only_layers: layer indices in [0, layers), or null / absent (none).
std::vector<int> parse_layer_list(const FieldReader& f, const char* key, int layers);
// layer_types: "sliding_attention" or "full_attention" per layer (empty when absent).
std::vector<bool> parse_layer_types(const FieldReader& f, int layers);
// SmolLM3Config: no_rope_layers, 1 where a layer has RoPE and 0 where not, one entry per layer
// or more (the first ones count); null or absent: NoPE on every no_rope_layer_interval-th layer.
std::vector<bool> parse_rope_layers(const FieldReader& f, int layers);
// GPTNeoConfig: attention_layers, "global" or "local" per layer, else attention_types expanded
// (each [types, n] appends `types` n times; default [[["global", "local"], 12]]); where both are
// written they must agree. True: local.
std::vector<bool> parse_local_layers(const FieldReader& f, int layers);

}  // namespace attngeom
