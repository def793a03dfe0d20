#pragma once
// The RoPE a config.json asks for: how many channels of each head turn (partial_rotary_factor,
// GPT-NeoX's rotary_pct, GPT-J's rotary_dim) and the table of each layer type (rope_theta with
// rope_scaling, or transformers 5.x's rope_parameters), as modeling_rope_utils.py reads them.
#include "io/config_fields.h"
#include "model/config.h"
#include "model/recipe.h"

namespace attngeom {

// Sets in.rotary_dim, in.global_rope and in.local_rope; InputError naming the field otherwise.
void parse_rope_inputs(const FieldReader& f, const Family& family, const ModelConfig& c, RecipeInputs& in);

}  // namespace attngeom
