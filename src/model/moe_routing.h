#pragma once
// A mixture of experts' routing, on the host: per-token bookkeeping over the router logits
// [seq, experts] that the backend computed, not tensor arithmetic. Semantics of HF
// MixtralSparseMoeBlock (transformers 4.57 modeling_mixtral.py): probabilities = softmax of
// the logits over the experts, the top_k largest kept, divided by their sum when the recipe
// renormalises. Computed in double from the fp32 logits and rounded to fp32 once; among equal
// probabilities the lower expert index is chosen (torch.topk leaves ties unspecified).
#include <span>
#include <vector>

#include "model/recipe.h"

namespace attngeom {

// Which tokens each expert receives, in ascending token order, and their weights; and each
// token's experts, the largest weight first.
struct ExpertRoutes {
  std::vector<std::vector<int>> rows;       // [experts][tokens routed to the expert]
  std::vector<std::vector<float>> weights;  // [experts][tokens routed to the expert]
  std::vector<int> choices;                 // [seq, top_k]
  std::vector<float> choice_weights;        // [seq, top_k]
};

// logits [seq, moe.experts] row-major -> routes (resized to moe.experts).
void route_tokens(std::span<const float> logits, const MoeRecipe& moe, ExpertRoutes& routes);

// flipped[t] = 1 where token t's set of experts in `fast` differs from `exact`'s, else 0;
// returns how many differ. Both routed the same tokens with the same top_k.
int routing_flips(const ExpertRoutes& fast, const ExpertRoutes& exact, int top_k, std::vector<int>& flipped);

}  // namespace attngeom
