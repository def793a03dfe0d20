#include "geometry/head_row.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "util/error.h"

namespace attngeom::geometry {

namespace {

// Everything validate() checks but the values' finiteness.
void validate_shape_and_weights(const HeadRowView& row) {
  const std::size_t keys = row.keys();
  if (keys == 0) throw InputError("head row: no keys (M = 0)");
  if (row.dim == 0) throw InputError("head row: value dimension d = 0");
  if (row.values.size() != keys * row.dim) {
    throw InputError("head row: values hold " + std::to_string(row.values.size()) +
                     " numbers, expected M*d = " + std::to_string(keys) + "*" + std::to_string(row.dim));
  }
  double sum = 0.0;
  for (std::size_t k = 0; k < keys; ++k) {
    const float a = row.alpha[k];
    if (!std::isfinite(a) || a < 0.0f) {
      throw InputError("head row: alpha[" + std::to_string(k) + "] = " + std::to_string(a) +
                       " is not a finite weight >= 0");
    }
    sum += a;
  }
  if (std::abs(sum - 1.0) > kAlphaSumTolerance) {
    throw InputError("head row: alpha sums to " + std::to_string(sum) + ", expected 1");
  }
}

}  // namespace

ValidatedRow validated(const HeadRowView& row) {
  validate(row);
  return ValidatedRow(row);
}

ValidatedRow validated_given_values(const HeadRowView& row) {
  validate_shape_and_weights(row);
  return ValidatedRow(row);
}

void validate(const HeadRowView& row) {
  validate_shape_and_weights(row);
  // One vectorised pass counts the non-finite values; only a bad row pays for finding the first.
  const float* values = row.values.data();
  const std::size_t count = row.values.size();
  std::size_t non_finite = 0;
#pragma omp simd reduction(+ : non_finite)
  for (std::size_t i = 0; i < count; ++i) non_finite += !std::isfinite(values[i]);
  if (non_finite == 0) return;
  const std::size_t first = static_cast<std::size_t>(
      std::find_if(row.values.begin(), row.values.end(), [](float x) { return !std::isfinite(x); }) -
      row.values.begin());
  throw InputError("head row: value of key " + std::to_string(first / row.dim) + " is not finite");
}

}  // namespace attngeom::geometry
