#include "analysis/settings.h"

#include <algorithm>
#include <initializer_list>

#include "analysis/option_table.h"

namespace attngeom {
namespace {

namespace fs = std::filesystem;

// The entries of the option table at `places` that apply in `target`, each under its run.json key.
nlohmann::json options_at(const OptionTarget& target, std::initializer_list<OptionPlace> places) {
  nlohmann::json out = nlohmann::json::object();
  for (const OptionSpec& spec : analysis_option_table()) {
    if (std::find(places.begin(), places.end(), spec.place) != places.end() && option_applies(spec, target)) {
      out[std::string(spec.name)] = option_json(spec, target);
    }
  }
  return out;
}

// The table's members are writable; these copies are only read.
nlohmann::json options_at(geometry::RowAnalysisOptions row, AggregateOptions aggregate,
                          std::initializer_list<OptionPlace> places) {
  return options_at(OptionTarget{row, aggregate}, places);
}

}  // namespace

nlohmann::json record_options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate) {
  return options_at(row, aggregate, {OptionPlace::kRecord, OptionPlace::kStats});
}

nlohmann::json options_json(const geometry::RowAnalysisOptions& row, const AggregateOptions& aggregate) {
  nlohmann::json options =
      options_at(row, aggregate, {OptionPlace::kRecord, OptionPlace::kStats, OptionPlace::kTables});
  options["taxonomy"] = options_at(row, aggregate, {OptionPlace::kTaxonomy});
  return options;
}

nlohmann::json settings_json(const AnalysisSettings& s) {
  AnalysisSettings copy = s;  // the table's members are writable; this copy is only read
  nlohmann::json settings = options_at(option_target(copy), {OptionPlace::kSequences, OptionPlace::kCorpusCut});
  settings.update({{"model_dir", fs::absolute(s.model_dir).string()},
                   {"data", s.data},
                   {"format", s.corpus.format == CorpusFormat::kText    ? "text"
                              : s.corpus.format == CorpusFormat::kLines ? "lines"
                                                                        : "jsonl"},
                   {"text_field", s.corpus.text_field},
                   {"lengths", s.lengths},
                   {"shard", {s.shard_index, s.shard_count}},
                   {"precision", std::string(precision_name(s.precision))}});
  // Only bf16x3 runs name their fp32 kernel, and only packed runs their separator (the
  // table's `needs`), so other runs keep resuming from older run.json.
  if (s.precision == Precision::kFp32 && s.fp32_matmul == Fp32Matmul::kBf16x3) settings["fp32_matmul"] = "bf16x3";
  // Likewise only runs off the CPU name their device: resume and merge compare the settings,
  // so runs made on different devices never mix.
  if (s.device != Device::kCpu) settings["device"] = device_name(s.device);
  settings.update(record_options_json(s.row, s.aggregate));
  return settings;
}

nlohmann::json length_settings_json(const AnalysisSettings& s, int seq_len) {
  AnalysisSettings length_settings = s;
  length_settings.seq_len = seq_len;
  if (seq_len != s.seq_len) length_settings.lengths.clear();
  return settings_json(length_settings);
}

}  // namespace attngeom
