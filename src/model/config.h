#pragma once
// Typed model configuration: the sizes, and the recipe (model/recipe.h) that holds every
// family difference, mapped once at load time; the forward pass never looks at the model name.
#include <cstdint>
#include <string>

#include "model/recipe.h"
#include "util/gqa.h"

namespace attngeom {

struct ModelConfig {
  std::string model_type;  // as written in config.json, for provenance only
  int hidden = 0;
  int intermediate = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int vocab = 0;
  int max_positions = 0;
  float rms_norm_eps = 1e-6f;
  int sliding_window = 0;  // the window every layer shares, 0 if any attends globally (per layer: recipe)
  bool tie_embeddings = false;
  int bos_token_id = 1;
  std::string torch_dtype;  // "float32", "float16", "bfloat16", or empty when unstated
  ModelRecipe recipe;

  int q_dim() const { return heads * head_dim; }
  int kv_dim() const { return kv_heads * head_dim; }
  int group_size() const { return heads / kv_heads; }  // query heads per kv head (GQA)
  int kv_head_of(int head) const { return attngeom::kv_head_of(head, heads, kv_heads); }
};

}  // namespace attngeom
