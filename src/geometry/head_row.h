#pragma once
// One (head, query row): the keys a query attends to, as plain non-owning views.
// Everything in geometry/ takes this view; the caller keeps the memory alive.
#include <cstddef>
#include <span>

namespace attngeom::geometry {

struct HeadRowView {
  std::span<const float> alpha;   // [M] the query's softmax weights over keys 0..M-1, summing to 1
  std::span<const float> values;  // [M, d] value vectors v_k, row-major
  std::size_t dim = 0;            // d

  std::size_t keys() const { return alpha.size(); }  // M
  std::span<const float> value(std::size_t key) const { return values.subspan(key * dim, dim); }
};

// Softmax rows captured in bf16/fp32 sum to 1 only up to rounding; further off is a bug upstream.
inline constexpr double kAlphaSumTolerance = 1e-3;

// Throws InputError unless M >= 1, d >= 1, values holds M*d finite numbers, and alpha is
// finite, non-negative and sums to 1 within kAlphaSumTolerance.
void validate(const HeadRowView& row);

// A row that validate() has passed, so that the parts of one analysis (analyze_row) scan its
// values once: only validated() makes one.
class ValidatedRow {
 public:
  const HeadRowView& view() const { return row_; }

 private:
  explicit ValidatedRow(const HeadRowView& row) : row_(row) {}
  friend ValidatedRow validated(const HeadRowView& row);
  friend ValidatedRow validated_given_values(const HeadRowView& row);
  HeadRowView row_;  // views: the caller keeps the memory alive
};
ValidatedRow validated(const HeadRowView& row);  // validate(row), then the row as checked
// The same where the values have passed validate() already, through a row over the same values
// and at least as many keys (its unit_rows): the heads and rows that share a kv head's value
// geometry then check only their own weights, not M*d values each.
ValidatedRow validated_given_values(const HeadRowView& row);

}  // namespace attngeom::geometry
