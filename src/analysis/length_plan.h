#pragma once
// One sequence length of a run, planned before anything is written: the sequences, the
// captured rows, the record schema and this shard's share. Every input error (length beyond
// the model, no sequence available, a query row beyond the length, an empty shard) surfaces
// here, before the run directory exists.
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "analysis/record.h"
#include "analysis/run_control.h"
#include "analysis/settings.h"
#include "corpus/documents.h"
#include "corpus/sequences.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"

namespace attngeom {

// What stays the same across the lengths of a sweep: model, tokenizer, corpus.
struct RunInputs {
  const Checkpoint& checkpoint;
  const Tokenizer& tokenizer;
  const Corpus& corpus;
};

struct LengthPlan {
  int seq_len = 0;
  std::filesystem::path out;
  SequenceSet sequences;
  std::vector<int> rows;  // captured query positions of every sequence
  RecordSchema schema;
  std::vector<std::size_t> shard_sequences;  // the indices of the sequences this shard computes
  nlohmann::json settings;                   // settings_json with this seq_len
};

// The plan of length `seq_len`, written to `out`; warns through `control` when the corpus
// gives fewer sequences than asked for.
LengthPlan plan_length(const AnalysisSettings& settings, const RunInputs& inputs, const std::filesystem::path& out,
                       int seq_len, const RunControl& control);

// Records a length still has to write: all of the shard's, less those a resumed run holds.
std::size_t records_to_write(const LengthPlan& plan, bool resuming);

}  // namespace attngeom
