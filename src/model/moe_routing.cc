#include "model/moe_routing.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace attngeom {

void route_tokens(std::span<const float> logits, const MoeRecipe& moe, ExpertRoutes& routes) {
  const auto experts = static_cast<std::size_t>(moe.experts);
  const auto top_k = static_cast<std::size_t>(moe.top_k);
  ATTNGEOM_CHECK(experts > 0 && top_k >= 1 && top_k <= experts && logits.size() % experts == 0);
  routes.rows.assign(experts, {});
  routes.weights.assign(experts, {});
  routes.choices.clear();
  routes.choice_weights.clear();
  std::vector<double> p(experts);
  std::vector<int> order(experts);
  for (std::size_t t = 0; t < logits.size() / experts; ++t) {
    const std::span<const float> row = logits.subspan(t * experts, experts);
    // softmax(router_logits, dim=-1) in a wider type than the logits
    const double top = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (std::size_t e = 0; e < experts; ++e) sum += p[e] = std::exp(static_cast<double>(row[e]) - top);
    for (double& v : p) v /= sum;
    // topk(p, top_k): the largest first; equal probabilities in ascending expert order.
    for (std::size_t e = 0; e < experts; ++e) order[e] = static_cast<int>(e);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    double kept = 0;
    for (std::size_t i = 0; i < top_k; ++i) kept += p[static_cast<std::size_t>(order[i])];
    for (std::size_t i = 0; i < top_k; ++i) {
      const auto e = static_cast<std::size_t>(order[i]);
      // Mixtral: routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
      const double weight = moe.renormalize ? p[e] / kept : p[e];
      routes.rows[e].push_back(static_cast<int>(t));
      routes.weights[e].push_back(static_cast<float>(weight));
      routes.choices.push_back(static_cast<int>(e));
      routes.choice_weights.push_back(static_cast<float>(weight));
    }
  }
}

int routing_flips(const ExpertRoutes& fast, const ExpertRoutes& exact, int top_k, std::vector<int>& flipped) {
  ATTNGEOM_CHECK(top_k >= 1 && fast.choices.size() == exact.choices.size() && fast.choices.size() % top_k == 0);
  const auto k = static_cast<std::size_t>(top_k);
  flipped.assign(fast.choices.size() / k, 0);
  std::vector<int> a(k), b(k);
  int flips = 0;
  for (std::size_t t = 0; t < flipped.size(); ++t) {
    std::copy_n(fast.choices.begin() + static_cast<std::ptrdiff_t>(t * k), k, a.begin());
    std::copy_n(exact.choices.begin() + static_cast<std::ptrdiff_t>(t * k), k, b.begin());
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    flipped[t] = a != b ? 1 : 0;
    flips += flipped[t];
  }
  return flips;
}

}  // namespace attngeom
