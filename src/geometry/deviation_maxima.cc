#include "geometry/deviation_maxima.h"

#include <algorithm>

#include "geometry/lag_walk_step.h"
#include "util/error.h"

namespace attngeom::geometry {
namespace {

// Lags per part at least: fewer parts for short rows, whose parts would cost less than their scheduling.
constexpr std::size_t kLagsPerPart = 64;
constexpr std::size_t kMaxParts = 64;

}  // namespace

DeviationMaxima::DeviationMaxima(const UnitRows& units, std::span<const std::size_t> keys)
    : units_(units),
      keys_(keys.begin(), keys.end()),
      parts_(std::clamp<std::size_t>(units.keys() / kLagsPerPart, 1, kMaxParts)),
      partial_(parts_ * keys.size(), 0.0) {
  ATTNGEOM_CHECK(!keys_.empty() && std::is_sorted(keys_.begin(), keys_.end()) && keys_.front() >= 1 &&
                 keys_.back() == units.keys());
}

void DeviationMaxima::compute(std::size_t part, std::span<const CosineModel> models) {
  ATTNGEOM_CHECK(part < parts_ && models.size() == keys_.size());
  const std::size_t length = units_.keys() - 1;  // L of the longest row
  const unsigned char* defined = units_.defined.data();
  std::vector<LagExtrema> by_lag(length + 1);  // [L + 1] this part's lags
  LagExtrema sink;                             // pairs (0, l), part 0's
  double* row_maximum = partial_.data() + part * keys_.size();
  std::size_t r = 0;
  // Rows whose last key is l have seen all their pairs.
  const auto finish_rows_ending_at = [&](std::size_t l) {
    for (; r < keys_.size() && keys_[r] - 1 <= l; ++r) {
      const CosineModel& model = models[r];
      double maximum = sink.widest(model.rho_0);
      for (std::size_t tau = part == 0 ? parts_ : part; tau < keys_[r] - 1; tau += parts_) {
        // exp(-beta tau) as CosineModel::content_cosine_by_lag takes it.
        if (by_lag[tau].seen()) {
          maximum = std::max(maximum, by_lag[tau].widest(lag_model_cosine(static_cast<int>(tau), model.beta, 0.0)));
        }
      }
      row_maximum[r] = maximum;
    }
  };
  finish_rows_ending_at(0);
  for (std::size_t l = 1; l <= length; ++l) {
    if (defined[l]) {
      if (part == 0 && defined[0]) sink.add(unit_pair_cosine(units_, 0, l));
      for (std::size_t tau = part == 0 ? parts_ : part; tau < l; tau += parts_) {
        if (defined[l - tau]) by_lag[tau].add(unit_pair_cosine(units_, l - tau, l));
      }
    }
    finish_rows_ending_at(l);
  }
}

std::vector<double> DeviationMaxima::maxima() const {
  std::vector<double> out(keys_.size(), 0.0);
  for (std::size_t p = 0; p < parts_; ++p) {
    for (std::size_t r = 0; r < keys_.size(); ++r) out[r] = std::max(out[r], partial_[p * keys_.size() + r]);
  }
  return out;
}

}  // namespace attngeom::geometry
