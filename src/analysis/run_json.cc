#include "analysis/run_json.h"

#include <string>

#include "analysis/provenance.h"
#include "util/machine.h"

namespace attngeom {

nlohmann::json run_json(const AnalysisSettings& s, const RunInputs& in, const LengthPlan& plan, const Engine& engine,
                        const RunControl& control) {
  nlohmann::json run = {{"format", "attngeom-run-v1"},
                        {"label", s.label.empty() ? default_run_label(plan.out) : s.label},
                        {"attngeom", tool_provenance()},
                        {"created", utc_timestamp()},
                        {"machine", machine_provenance()},
                        {"model", model_provenance(in.checkpoint)},
                        {"precision", std::string(precision_name(s.precision))},
                        {"matmul", std::string(engine.backend().kernel())},
                        {"device", std::string(device_name(engine.device()))},
                        {"tokenizer", tokenizer_provenance(in.tokenizer)},
                        {"seq_len", plan.seq_len},
                        {"n_grid", plan.schema.n_grid},
                        {"queries", plan.settings["queries"]},
                        {"corpus", corpus_provenance(in.corpus, plan.sequences)},
                        {"options", options_json(s.row, s.aggregate)},
                        {"shard", {{"index", s.shard_index}, {"count", s.shard_count}}},
                        {"settings", plan.settings}};
  if (!engine.gpu_name().empty()) run["gpu"] = engine.gpu_name();
  if (!s.lengths.empty() && plan.out == s.out) run["lengths"] = s.lengths;
  for (const char* key : {"format", "text_field", "pack", "pack_separator", "num_seqs", "skip", "seed"}) {
    if (plan.settings.contains(key)) run["corpus"][key] = plan.settings[key];
  }
  if (control.ranks != nullptr) run["mpi_ranks"] = control.ranks->size();
  return run;
}

}  // namespace attngeom
