#include "analysis/option_table.h"

#include <array>

namespace attngeom {
namespace {

constexpr double kLargeCount = 1 << 20;

const std::array kOptions = {
    OptionSpec{"every_n", OptionPlace::kRecord, [](const OptionTarget& t) -> OptionMember { return &t.row.every_n; }, 0,
               0, "metrics at every N in 1..M-1 instead of the default grid"},
    OptionSpec{"recency_window", OptionPlace::kRecord,
               [](const OptionTarget& t) -> OptionMember { return &t.row.mass.recency_window; }, 1, kLargeCount,
               "keys counted in the recency mass"},
    OptionSpec{"top_k", OptionPlace::kRecord, [](const OptionTarget& t) -> OptionMember { return &t.row.mass.top_k; },
               1, kLargeCount, "k of the top-k mass"},
    OptionSpec{"max_lag", OptionPlace::kRecord,
               [](const OptionTarget& t) -> OptionMember { return &t.row.lag.max_lag; }, 0, kLargeCount,
               "tau_max of the lag curve (0: min(64, L/4); at most L - 1 in each row)"},
    OptionSpec{"normalised_radii", OptionPlace::kRecord,
               [](const OptionTarget& t) -> OptionMember { return &t.row.selection.normalised_radii; }},
    OptionSpec{"bounds", OptionPlace::kRecord, [](const OptionTarget& t) -> OptionMember { return &t.row.bounds; }, 0,
               0,
               "skip the reconstructed envelopes R1/R2 (their O(M^2 d) cosine Gram is most of the geometry's cost at "
               "large M); R3 and every metric remain"},
    OptionSpec{"r1_eta", OptionPlace::kRecord, [](const OptionTarget& t) -> OptionMember { return &t.row.r1_eta; }, 0,
               0, "R1's cosine-deviation bound: max (provable) or mae (typical)", "bounds"},
    OptionSpec{"r2_delta", OptionPlace::kRecord, [](const OptionTarget& t) -> OptionMember { return &t.row.r2_delta; },
               1e-9, 0.5, "stated violation probability of the R2 envelope", "bounds"},
    OptionSpec{"bootstrap", OptionPlace::kStats,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.bootstrap.resamples; }, 10, 1000000,
               "bootstrap resamples for correlation CIs"},
    OptionSpec{"stats_seed", OptionPlace::kStats,
               [](const OptionTarget& t) -> OptionMember { return SeedMember{&t.aggregate.seed}; }, 0, 0,
               "seed of the bootstrap and k-means"},
    OptionSpec{"small_n_max", OptionPlace::kTaxonomy,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.taxonomy.small_n_max; }},
    OptionSpec{"large_n_fraction", OptionPlace::kTaxonomy,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.taxonomy.large_n_fraction; }},
    OptionSpec{"retriever_min_cos_last", OptionPlace::kTaxonomy,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.taxonomy.retriever_min_cos_last; }, -1,
               1, "taxonomy: Retriever needs cos(s_N, v_L) at least this at small and large N"},
    OptionSpec{"reset_min_sink_share", OptionPlace::kTaxonomy,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.taxonomy.reset_min_sink_share; }, 0, 1,
               "taxonomy: Reset needs this share of the magnitude on the sink"},
    OptionSpec{"reset_max_small_cos_last", OptionPlace::kTaxonomy,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.taxonomy.reset_max_small_cos_last; }, -1,
               1, "taxonomy: Reset needs cos(s_N, v_L) at most this at small N"},
    OptionSpec{"mixer_min_small_cos_sink", OptionPlace::kTaxonomy,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.taxonomy.mixer_min_small_cos_sink; }, -1,
               1, "taxonomy: Mixer needs cos(s_N, v_0) at least this at small N"},
    OptionSpec{"mixer_min_sink_shift", OptionPlace::kTaxonomy,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.taxonomy.mixer_min_sink_shift; }, 0, 2,
               "taxonomy: Mixer needs cos(s_N, v_0) to fall at least this much from small to large N"},
    OptionSpec{"flat_precision_range", OptionPlace::kTables,
               [](const OptionTarget& t) -> OptionMember { return &t.aggregate.flat_precision_range; }},
};

}  // namespace

std::span<const OptionSpec> analysis_option_table() { return kOptions; }

std::string_view r1_eta_name(geometry::R1Eta eta) { return eta == geometry::R1Eta::kMaxDeviation ? "max" : "mae"; }

geometry::R1Eta parse_r1_eta(std::string_view name) {
  return name == "max" ? geometry::R1Eta::kMaxDeviation : geometry::R1Eta::kLagFitMae;
}

nlohmann::json option_json(const OptionSpec& spec, const OptionTarget& target) {
  return std::visit(
      [](auto member) -> nlohmann::json {
        if constexpr (std::is_same_v<decltype(member), SeedMember>) {
          return *member.value;
        } else if constexpr (std::is_same_v<decltype(member), geometry::R1Eta*>) {
          return std::string(r1_eta_name(*member));
        } else {
          return *member;
        }
      },
      spec.member(target));
}

}  // namespace attngeom
