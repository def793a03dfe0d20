// Fuzz target: config.json parsing (io/config_json.h), then the tensor list the config
// implies (model/weights.h), whose shapes must be positive and fit the forward pass's ints.
#include <cstdint>
#include <string>

#include "io/config_json.h"
#include "model/weights.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const attngeom::ModelConfig c =
        attngeom::parse_model_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
    ATTNGEOM_CHECK(c.hidden > 0 && c.intermediate > 0 && c.layers > 0 && c.layers <= attngeom::kMaxLayers);
    ATTNGEOM_CHECK(c.heads > 0 && c.kv_heads > 0 && c.heads % c.kv_heads == 0 && c.head_dim > 0 && c.head_dim % 2 == 0);
    ATTNGEOM_CHECK(c.bos_token_id >= 0 && c.bos_token_id < c.vocab && c.rms_norm_eps > 0);
    // Families with learned positions (GPT-2, OPT) have no RoPE table; a NoPE layer reads none.
    ATTNGEOM_CHECK(c.recipe.layers.size() == static_cast<std::size_t>(c.layers) &&
                   c.recipe.ropes.empty() == (c.recipe.rotary_dim == 0));
    for (const attngeom::LayerRecipe& layer : c.recipe.layers) {
      ATTNGEOM_CHECK(layer.rope_table >= -1 && layer.rope_table < static_cast<int>(c.recipe.ropes.size()));
    }
    for (const attngeom::RopeSpec& rope : c.recipe.ropes) ATTNGEOM_CHECK(rope.theta > 0 && rope.factor > 0);
    // ALiBi families (BLOOM, MPT) have one slope in (0, 1) per head and no RoPE.
    ATTNGEOM_CHECK(c.recipe.alibi_slopes.empty() ||
                   (c.recipe.alibi_slopes.size() == static_cast<std::size_t>(c.heads) && c.recipe.ropes.empty()));
    for (const float slope : c.recipe.alibi_slopes) ATTNGEOM_CHECK(slope > 0 && slope < 1);
    // clip_qkv clamps to a positive bound; norms without a weight (OLMo) read a made one-vector.
    ATTNGEOM_CHECK(c.recipe.clip_qkv >= 0);
    ATTNGEOM_CHECK(c.recipe.embedding_scale > 0 && c.recipe.residual_scale > 0 && c.recipe.logits_scale > 0);
    for (const attngeom::WeightSlot& slot : attngeom::weight_slots(c)) {
      for (const std::int64_t dim : slot.shape) ATTNGEOM_CHECK(dim > 0 && dim <= (std::int64_t{1} << 30));
      ATTNGEOM_CHECK(!slot.unit || (slot.shape.size() == 1 && !c.recipe.norm_affine));
    }
  } catch (const attngeom::InputError&) {
  }
  return 0;
}
