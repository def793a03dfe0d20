#pragma once
// The provenance block of run.json: what produced a run, on what, from what.
#include <nlohmann/json.hpp>

#include "corpus/documents.h"
#include "corpus/sequences.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "ops/gemm.h"

namespace attngeom {

nlohmann::json model_provenance(const Checkpoint& checkpoint);
// Where the model is and its shape: the part of model_provenance a capture dump records too.
nlohmann::json model_shape(const Checkpoint& checkpoint);
// The tokenizer's file and hash, its BOS, and what position 0 of every sequence holds:
// "bos", or "text" for a tokenizer without BOS (the sink is then a text token).
nlohmann::json tokenizer_provenance(const Tokenizer& tokenizer);
nlohmann::json corpus_provenance(const Corpus& corpus, const SequenceSet& sequences);
nlohmann::json machine_provenance();
nlohmann::json tool_provenance();  // attngeom version and git commit

}  // namespace attngeom
