#pragma once
// The provenance block of run.json: what produced a run, on what, from what.
#include <nlohmann/json.hpp>

#include "corpus/documents.h"
#include "corpus/sequences.h"
#include "io/checkpoint.h"
#include "ops/gemm.h"

namespace attngeom {

nlohmann::json model_provenance(const Checkpoint& checkpoint);
nlohmann::json corpus_provenance(const Corpus& corpus, const SequenceSet& sequences);
nlohmann::json machine_provenance();
nlohmann::json tool_provenance();  // attngeom version and git commit

}  // namespace attngeom
