#include "geometry/selection_evaluator.h"

#include "util/error.h"

namespace attngeom::geometry {

SelectionEvaluator::SelectionEvaluator(const PositionedRow& row, std::span<const double> normalised_radii)
    : normalised_radii_(normalised_radii),
      weighted_norm_min_(row.keys),
      offset_(row.keys),
      recomputed_(row.keys),
      recomputed_d2_(row.keys),
      selected_sorted_(row.keys),
      tally_(row.keys) {
  weighted_norm_minima(row.alpha.data(), row.sq_norms.data(), row.keys, weighted_norm_min_.data());
  view_ = {row.keys,         row.dim,    row.alpha.data(),  row.sq_norms.data(), weighted_norm_min_.data(),
           row.order.data(), row.values, row.sink_position, row.last_position};
}

SelectionMetrics SelectionEvaluator::evaluate(std::size_t n, std::span<const double> dots, std::span<const double> s) {
  ATTNGEOM_CHECK(n >= 1 && n < view_.keys && dots.size() == view_.keys && s.size() == view_.dim);
  SelectionScratch scratch{offset_.data(),          recomputed_.data(), recomputed_d2_.data(), 0,
                           selected_sorted_.data(), tally_.data()};
  auto sort_from = [this](double* values, std::size_t count, std::size_t first) {
    sorter_.sort_from(std::span<double>(values, count), first);
  };
  SelectionMetrics m;
  m.at_normalised_radius.resize(normalised_radii_.size());
  evaluate_selection(view_, n, dots.data(), s.data(), normalised_radii_.data(), normalised_radii_.size(), scratch,
                     sort_from, static_cast<SelectionPoint&>(m), m.at_normalised_radius.data());
  return m;
}

}  // namespace attngeom::geometry
