#include "analysis/option_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "analysis/run_readback.h"
#include "analysis/settings.h"
#include "capture/query_rows.h"
#include "util/error.h"

namespace attngeom {
namespace {

// run.json's reader gives back every table option its writer wrote (resume and merge rely on it).
TEST(OptionTable, RunJsonReaderReadsWhatTheWriterWrote) {
  geometry::RowAnalysisOptions row;
  AggregateOptions written;
  written.seed = 77;
  written.bootstrap.resamples = 321;
  written.flat_precision_range = 0.125;
  written.taxonomy.small_n_max = 3;
  written.taxonomy.mixer_min_sink_shift = 0.75;
  const nlohmann::json run = {{"settings", record_options_json(row, written)}, {"options", options_json(row, written)}};
  const AggregateOptions read = aggregate_options_of_run(run, "run");
  EXPECT_EQ(read.seed, 77u);
  EXPECT_EQ(read.bootstrap.resamples, 321u);
  EXPECT_EQ(read.flat_precision_range, 0.125);
  EXPECT_EQ(read.taxonomy.small_n_max, 3u);
  EXPECT_EQ(read.taxonomy.mixer_min_sink_shift, 0.75);
  EXPECT_EQ(options_json(row, read), options_json(row, written));
  EXPECT_EQ(run["options"]["r1_eta"], "max");
  EXPECT_EQ(run["settings"].size(), 10u);  // the record options, as older runs hold them
}

// run.json's "settings" keeps its keys (a resumed run compares them), whichever table spells them.
TEST(OptionTable, SettingsJsonKeepsItsKeys) {
  AnalysisSettings s;
  s.model_dir = "model";
  s.shuffle_seed = 5;
  nlohmann::json settings = settings_json(s);
  const nlohmann::json record_options = record_options_json(s.row, s.aggregate);
  for (const auto& [key, value] : record_options.items()) EXPECT_EQ(settings.erase(key), 1u);
  std::set<std::string> keys;
  for (const auto& [key, value] : settings.items()) keys.insert(key);
  EXPECT_EQ(keys,
            (std::set<std::string>{"data", "format", "lengths", "max_document_bytes", "model_dir", "num_seqs", "pack",
                                   "precision", "queries", "seed", "seq_len", "shard", "skip", "text_field"}));
  EXPECT_EQ(settings["seed"], 5);
  EXPECT_EQ(settings["queries"], "last");
  s.pack = true;
  s.pack_bos = false;
  EXPECT_EQ(settings_json(s)["pack_separator"], "none");  // only packed runs name their separator
}

TEST(OptionTable, NamesEachSettingOnce) {
  std::set<std::string_view> names;
  for (const OptionSpec& spec : analysis_option_table()) EXPECT_TRUE(names.insert(spec.name).second) << spec.name;
}

// Library errors name the setting; a front end spells it.
TEST(SettingError, NamesTheSettingAndLetsTheCliSpellIt) {
  try {
    parse_query_selection("5,x");
    FAIL() << "expected a SettingError";
  } catch (const SettingError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("queries '5,x': ", 0), 0u) << e.what();
    EXPECT_EQ(e.message().spelled([](const std::string& name) { return "<" + name + ">"; }).rfind("<queries> '5,x'", 0),
              0u);
  }
}

}  // namespace
}  // namespace attngeom
