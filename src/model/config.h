#pragma once
// Typed model configuration. Every architecture difference is a field here, mapped
// once at load time; the forward pass never looks at the model name.
#include <cstdint>
#include <string>

#include "ops/elementwise.h"

namespace attngeom {

enum class Architecture { kLlama, kMistral, kGemma };

struct ModelConfig {
  Architecture architecture = Architecture::kLlama;
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
  float rope_theta = 10000.0f;
  int sliding_window = 0;         // 0: full causal attention
  float norm_weight_offset = 0;   // RMSNorm multiplies by (offset + w): Gemma uses 1
  float embedding_scale = 1;      // Gemma scales embeddings by sqrt(hidden)
  Activation activation = Activation::kSilu;
  bool tie_embeddings = false;
  int bos_token_id = 1;
  std::string torch_dtype;  // "float32", "float16", "bfloat16", or empty when unstated

  int q_dim() const { return heads * head_dim; }
  int kv_dim() const { return kv_heads * head_dim; }
  int group_size() const { return heads / kv_heads; }  // query heads per kv head (GQA)
  int kv_head_of(int head) const { return head / group_size(); }
};

const char* architecture_name(Architecture architecture);
const char* activation_name(Activation activation);

}  // namespace attngeom
