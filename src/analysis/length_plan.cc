#include "analysis/length_plan.h"

#include <string>
#include <system_error>

#include "analysis/row_fields.h"
#include "capture/query_rows.h"
#include "util/error.h"
#include "util/plural.h"

namespace attngeom {

namespace fs = std::filesystem;

LengthPlan plan_length(const AnalysisSettings& s, const RunInputs& in, const fs::path& out, int seq_len,
                       const RunControl& control) {
  const ModelConfig& c = in.checkpoint.config();
  const bool main_length = seq_len == s.seq_len;
  if (seq_len > c.max_positions && !s.force) {
    throw SettingError({setting(main_length ? "seq_len" : "lengths"),
                        (main_length ? " " : ": ") + std::to_string(seq_len) +
                            " exceeds the model's max_position_embeddings " + std::to_string(c.max_positions) +
                            " (use ",
                        setting("force"), " to run anyway)"});
  }
  LengthPlan plan;
  plan.seq_len = seq_len;
  plan.out = out;
  plan.settings = length_settings_json(s, seq_len);
  const SequenceOptions seq_options{seq_len,   s.pack, s.num_seqs, s.skip, s.shuffle_seed, in.tokenizer.bos_id(),
                                    s.pack_bos};
  plan.sequences = make_sequences(
      in.corpus,
      [&](const std::string& text, const std::string& where) { return in.tokenizer.encode_document(text, where); },
      seq_options);
  const std::size_t made = plan.sequences.sequences.size();
  if (made < static_cast<std::size_t>(s.num_seqs) && control.warn) {
    control.warn({setting("num_seqs"), " ",
                  std::to_string(s.num_seqs) + ", but the corpus gives " + count_of(made, "sequence") + " of " +
                      std::to_string(seq_len) + " tokens (" + count_of(plan.sequences.candidates, "window") + ", ",
                  setting("skip"), " ",
                  std::to_string(s.skip) + "; " + count_of(plan.sequences.short_documents, "document") +
                      " shorter than one window)"});
  }
  const SettingMessage subject =
      main_length ? SettingMessage{setting("queries")}
                  : SettingMessage{setting("queries"), " (at ", setting("lengths"), " ", std::to_string(seq_len) + ")"};
  plan.rows = resolve_query_rows(s.queries, seq_len, subject);
  plan.schema = make_record_schema(static_cast<std::size_t>(seq_len), s.row.every_n);
  for (std::size_t i = 0; i < plan.sequences.sequences.size(); ++i) {
    if (static_cast<int>(i % static_cast<std::size_t>(s.shard_count)) == s.shard_index) {
      plan.shard_sequences.push_back(i);
    }
  }
  if (plan.shard_sequences.empty()) {  // an empty shard could never be aggregated, nor merged
    throw SettingError({setting("shard"),
                        " " + std::to_string(s.shard_index) + "/" + std::to_string(s.shard_count) +
                            ": no sequence falls to this shard (the corpus gives " + std::to_string(made) + " at ",
                        setting("seq_len"),
                        " " + std::to_string(seq_len) + "); use at most " + count_of(made, "shard")});
  }
  return plan;
}

std::size_t records_to_write(const LengthPlan& plan, bool resuming) {
  if (!resuming || !is_run_dir(plan.out)) return plan.shard_sequences.size();
  std::size_t done = 0;
  std::error_code ec;
  for (const std::size_t i : plan.shard_sequences) {
    done += fs::is_regular_file(record_path(plan.out / "records", i), ec) ? 1 : 0;
  }
  return plan.shard_sequences.size() - done;
}

}  // namespace attngeom
