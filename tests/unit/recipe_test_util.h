#pragma once
// Shared by the recipe tests: a config of one family at small sizes, and what its recipe and
// tensor list hold, each as a value a test compares.
#include <string>
#include <vector>

#include "io/config_json.h"
#include "model/weights.h"
#include "util/error.h"

namespace attngeom {

inline std::string sizes(int layers) {
  return R"("hidden_size":64,"intermediate_size":128,"num_attention_heads":4,"num_key_value_heads":2,"head_dim":16,)"
         R"("vocab_size":100,"num_hidden_layers":)" +
         std::to_string(layers);
}

inline ModelConfig parse(const std::string& model_type, int layers, const std::string& extra = "") {
  return parse_model_config(R"({"model_type":")" + model_type + R"(",)" + sizes(layers) + extra + "}", "config.json");
}

inline std::vector<int> windows(const ModelConfig& c) {
  std::vector<int> out;
  for (const LayerRecipe& l : c.recipe.layers) out.push_back(l.window);
  return out;
}

// "name AxB" of the slot of `role` in `layer` (of expert `expert` for the kExpert* roles); "" if none.
inline std::string slot_of(const ModelConfig& c, int layer, TensorRole role, int expert = -1) {
  for (const WeightSlot& slot : weight_slots(c)) {
    if (slot.layer != layer || slot.role != role || slot.expert != expert) continue;
    std::string text = slot.name + " ";
    for (std::size_t d = 0; d < slot.shape.size(); ++d) {
      if (d) text += 'x';
      text += std::to_string(slot.shape[d]);
    }
    return text;
  }
  return "";
}

// How many slots have `role`, and how many have `part` in their name.
inline int count_slots(const ModelConfig& c, TensorRole role) {
  int n = 0;
  for (const WeightSlot& slot : weight_slots(c)) n += slot.role == role;
  return n;
}
inline int count_names(const ModelConfig& c, const std::string& part) {
  int n = 0;
  for (const WeightSlot& slot : weight_slots(c)) n += slot.name.find(part) != std::string::npos;
  return n;
}

inline std::vector<int> rope_tables(const ModelConfig& c) {
  std::vector<int> out;
  for (const LayerRecipe& l : c.recipe.layers) out.push_back(l.rope_table);
  return out;
}

// The message of the InputError that parsing `json` throws; "" when it parses.
inline std::string refusal(const std::string& json) {
  try {
    parse_model_config(json, "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace attngeom
