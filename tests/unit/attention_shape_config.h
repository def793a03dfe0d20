#pragma once
// A model config with only the attention's shape set: what analyze's observer reads.
#include "model/config.h"

namespace attngeom {

inline ModelConfig attention_shape_config(int layers, int heads, int kv_heads, int head_dim) {
  ModelConfig c;
  c.layers = layers;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.head_dim = head_dim;
  return c;
}

}  // namespace attngeom
