#include "analysis/option_table.h"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace attngeom {
namespace {

constexpr double kLargeCount = 1 << 20;

const std::array kOptions = {
    OptionSpec{"every_n", OptionPlace::kRecord, [](const OptionTarget& t) -> OptionMember { return &t.row.every_n; }, 0,
               0, "metrics at every N in 1..M-1 instead of the default grid"},
    OptionSpec{"per_sequence", OptionPlace::kOutputs,
               [](const OptionTarget& t) -> OptionMember { return t.per_sequence; }, 0, 0,
               "also write selection_per_seq.csv"},
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
    OptionSpec{"seq_len", OptionPlace::kSequences,
               [](const OptionTarget& t) -> OptionMember { return &t.run->seq_len; }, 2, 1 << 20,
               "tokens per sequence, BOS included"},
    OptionSpec{"num_seqs", OptionPlace::kSequences,
               [](const OptionTarget& t) -> OptionMember { return &t.run->num_seqs; }, 1, 1 << 24,
               "number of sequences"},
    OptionSpec{"queries", OptionPlace::kSequences,
               [](const OptionTarget& t) -> OptionMember { return &t.run->queries; }, 0, 0,
               "query rows: last, all, stride:K, or positions i,j,k"},
    OptionSpec{"skip", OptionPlace::kCorpusCut, [](const OptionTarget& t) -> OptionMember { return &t.run->skip; }, 0,
               1 << 30, "skip this many candidate sequences first"},
    OptionSpec{"seed", OptionPlace::kCorpusCut,
               [](const OptionTarget& t) -> OptionMember { return OptionalSeedMember{&t.run->shuffle_seed}; }, 0, 0,
               "shuffle candidate sequences with this seed (default: corpus order)"},
    OptionSpec{"pack", OptionPlace::kCorpusCut, [](const OptionTarget& t) -> OptionMember { return &t.run->pack; }, 0,
               0, "concatenate all documents into one stream (short ones are no longer skipped)"},
    OptionSpec{"pack_separator",
               OptionPlace::kCorpusCut,
               [](const OptionTarget& t) -> OptionMember { return NamedBoolMember{&t.run->pack_bos, "bos", "none"}; },
               0,
               0,
               "with --pack: bos (each document after the first starts with BOS, as Hugging Face packs) or none",
               {},
               "pack"},
    OptionSpec{"max_document_bytes", OptionPlace::kCorpusCut,
               [](const OptionTarget& t) -> OptionMember { return &t.run->corpus.max_document_bytes; }, 1,
               static_cast<double>(1LL << 40), "skip (with a warning) longer documents"},
    OptionSpec{"max_corpus_bytes", OptionPlace::kRun,
               [](const OptionTarget& t) -> OptionMember { return &t.run->corpus.max_file_bytes; }, 1,
               static_cast<double>(1LL << 50), "refuse corpus files larger than this, decompressed"},
    OptionSpec{"label", OptionPlace::kRun, [](const OptionTarget& t) -> OptionMember { return &t.run->label; }, 0, 0,
               "run label in reports (default: the directory name)"},
    OptionSpec{"force", OptionPlace::kRun, [](const OptionTarget& t) -> OptionMember { return &t.run->force; }, 0, 0,
               "allow sequences longer than max_position_embeddings"},
};

}  // namespace

bool is_run_level(OptionPlace place) {
  return place == OptionPlace::kSequences || place == OptionPlace::kCorpusCut || place == OptionPlace::kRun;
}

std::span<const OptionSpec> analysis_option_table() { return kOptions; }

const OptionSpec& option_spec(std::string_view name) {
  const auto spec = std::find_if(kOptions.begin(), kOptions.end(), [&](const OptionSpec& o) { return o.name == name; });
  if (spec == kOptions.end()) throw std::logic_error("no option " + std::string(name) + " in the option table");
  return *spec;
}

bool option_applies(const OptionSpec& spec, const OptionTarget& target) {
  if (spec.needs.empty()) return true;
  return *std::get<bool*>(option_spec(spec.needs).member(target));
}

std::string_view r1_eta_name(geometry::R1Eta eta) { return eta == geometry::R1Eta::kMaxDeviation ? "max" : "mae"; }

geometry::R1Eta parse_r1_eta(std::string_view name) {
  return name == "max" ? geometry::R1Eta::kMaxDeviation : geometry::R1Eta::kLagFitMae;
}

nlohmann::json option_json(const OptionSpec& spec, const OptionTarget& target) {
  return std::visit(
      [](auto member) -> nlohmann::json {
        using T = decltype(member);
        if constexpr (std::is_same_v<T, SeedMember>) {
          return *member.value;
        } else if constexpr (std::is_same_v<T, OptionalSeedMember>) {
          return *member.value ? nlohmann::json(**member.value) : nlohmann::json(nullptr);
        } else if constexpr (std::is_same_v<T, NamedBoolMember>) {
          return std::string(*member.value ? member.if_true : member.if_false);
        } else if constexpr (std::is_same_v<T, QuerySelection*>) {
          return member->text;
        } else if constexpr (std::is_same_v<T, geometry::R1Eta*>) {
          return std::string(r1_eta_name(*member));
        } else {
          return *member;
        }
      },
      spec.member(target));
}

}  // namespace attngeom
