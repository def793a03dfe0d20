#include "analysis/run_readback.h"

#include <type_traits>
#include <utility>
#include <variant>

#include "analysis/option_table.h"
#include "analysis/run_dir.h"
#include "util/error.h"

namespace attngeom {

namespace fs = std::filesystem;

AggregateOptions aggregate_options_of_run(const nlohmann::json& run, const fs::path& dir) {
  const auto section = [](const nlohmann::json& object, const char* key) {
    return object.is_object() ? object.value(key, nlohmann::json::object()) : nlohmann::json::object();
  };
  const nlohmann::json settings = section(run, "settings");
  const nlohmann::json options = section(run, "options");
  const nlohmann::json taxonomy = section(options, "taxonomy");
  geometry::RowAnalysisOptions row;  // held by the records, not read back
  AggregateOptions o;
  const OptionTarget target{row, o};
  for (const OptionSpec& spec : analysis_option_table()) {
    if (spec.place != OptionPlace::kStats && spec.place != OptionPlace::kTaxonomy &&
        spec.place != OptionPlace::kTables) {
      continue;  // held by the records, by the settings compared whole, or not in run.json
    }
    const auto& [object, where] = spec.place == OptionPlace::kStats      ? std::pair(&settings, "settings.")
                                  : spec.place == OptionPlace::kTaxonomy ? std::pair(&taxonomy, "options.taxonomy.")
                                                                         : std::pair(&options, "options.");
    const std::string key(spec.name);
    if (!object->is_object() || !object->contains(key)) continue;  // an older run: the default
    const nlohmann::json& value = (*object)[key];
    if (!value.is_number()) throw InputError((dir / "run.json").string() + ": '" + where + key + "' must be a number");
    std::visit(
        [&](auto member) {
          if constexpr (std::is_same_v<decltype(member), SeedMember>) {
            *member.value = value.get<std::uint64_t>();
          } else if constexpr (std::is_arithmetic_v<std::remove_pointer_t<decltype(member)>>) {
            *member = value.get<std::remove_pointer_t<decltype(member)>>();
          }
        },
        spec.member(target));
  }
  return o;
}

std::string resumed_label(const AnalysisSettings& s) {
  if (s.mode != RunDirMode::kResume || !is_run_dir(s.out)) return s.label;
  const nlohmann::json run = read_run_json(s.out);
  const auto stored = run.find("label");
  if (stored == run.end() || !stored->is_string()) return s.label;
  const std::string label = stored->get<std::string>();
  if (!s.label.empty() && s.label != label) {
    throw SettingError(
        {setting("label"),
         " " + s.label + ": the run in " + s.out.string() + " is labelled '" + label + "'; resume it without ",
         setting("label"), " (it keeps its label) or with ", setting("label"), " " + label});
  }
  return label == default_run_label(s.out) ? s.label : label;
}

}  // namespace attngeom
