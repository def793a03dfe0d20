// _RunFeed: a run directory fed layer by layer by the caller, for attngeom.hf (a transformers
// model's forward hooks hand over each layer's captured rows and value states as it runs).
// The records, tables, run.json and report are analyze's: each sequence goes through its own
// SequenceAnalyzer, as the engine's forward pass feeds it, and is written as a record when
// its last layer is in; finish() aggregates them as analyze does.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/dump_input.h"
#include "analysis/pipeline.h"
#include "analysis/progress.h"
#include "analysis/provenance.h"
#include "analysis/record.h"
#include "analysis/row_fields.h"
#include "analysis/run_dir.h"
#include "analysis/sequence_analyzer.h"
#include "analysis/settings.h"
#include "python/bindings.h"
#include "python/interrupt.h"
#include "python/option_args.h"
#include "python/python_progress.h"
#include "util/error.h"
#include "util/half.h"
#include "util/machine.h"

namespace attngeom::python {
namespace {

namespace py = pybind11;
using FloatArray = py::array_t<float, py::array::c_style>;

struct FeedSettings {
  geometry::RowAnalysisOptions row;
  AggregateOptions aggregate;
  bool per_sequence = false;
  std::string label;
  bool overwrite = false;
  int threads = 0;
  QuerySelection queries;
  PythonProgress progress;
};

std::map<std::string, KeywordSetter> own_keywords(FeedSettings& s) {
  return {
      {"label", [&](const std::string& n, const py::handle& v) { s.label = value_of<std::string>(n, v); }},
      {"overwrite", [&](const std::string& n, const py::handle& v) { s.overwrite = value_of<bool>(n, v); }},
      {"threads",
       [&](const std::string& n, const py::handle& v) { s.threads = static_cast<int>(integer_in(n, v, 1, 1024)); }},
      {"queries", [&](const std::string& n,
                      const py::handle& v) { s.queries = parse_query_selection(value_of<std::string>(n, v)); }},
      {"quiet", [&](const std::string& n, const py::handle& v) { s.progress.quiet = value_of<bool>(n, v); }},
      {"progress", [&](const std::string& n, const py::handle& v) { s.progress.callback = progress_callback(n, v); }},
  };
}

std::vector<std::string> feed_keyword_names() {
  FeedSettings s;
  return keyword_names(own_keywords(s));
}

int shape_entry(const py::dict& shape, const char* name) {
  if (!shape.contains(name)) throw py::type_error(std::string("shape: missing '") + name + "'");
  return static_cast<int>(integer_in(name, shape[name], 1, 1 << 20));
}

class RunFeed {
 public:
  // shape: {"layers", "heads", "kv_heads", "head_dim", "model_type"}; info: run.json's "model",
  // "precision", "device", "tokenizer" and "corpus" blocks, as JSON text.
  RunFeed(const std::string& out, const py::dict& shape, int seq_len, std::size_t sequences, int slots,
          const std::string& info, const py::dict& options)
      : out_(out), info_(nlohmann::json::parse(info)) {
    set_keywords("hf", options, own_keywords(s_), {s_.row, s_.aggregate, nullptr, &s_.per_sequence});
    config_.layers = shape_entry(shape, "layers");
    config_.heads = shape_entry(shape, "heads");
    config_.kv_heads = shape_entry(shape, "kv_heads");
    config_.head_dim = shape_entry(shape, "head_dim");
    if (config_.heads % config_.kv_heads != 0) {
      throw InputError("hf: " + std::to_string(config_.kv_heads) + " kv heads do not divide " +
                       std::to_string(config_.heads) + " heads");
    }
    if (seq_len < 2)
      throw SettingError({setting("seq_len"), ": expected at least 2 tokens, found " + std::to_string(seq_len)});
    if (sequences < 1) throw InputError("hf: no sequence to analyse");
    seq_len_ = seq_len;
    sequences_ = sequences;
    rows_ = resolve_query_rows(s_.queries, seq_len);
    schema_ = make_record_schema(static_cast<std::size_t>(seq_len), s_.row.every_n);
    settings_ = {
        {"source", "attngeom.hf"}, {"seq_len", seq_len}, {"queries", s_.queries.text}, {"sequences", sequences}};
    settings_.update(record_options_json(s_.row, s_.aggregate));
    const RunDirMode mode = s_.overwrite ? RunDirMode::kOverwrite : RunDirMode::kCreate;
    check_run_dir(out_, settings_, mode);
    guard_.emplace(out_, mode, std::vector<std::filesystem::path>{}, warn_in_python);
    run_dir_.emplace(out_, settings_, guard_->open_mode());
    for (int i = 0; i < slots; ++i) {
      analyzers_.push_back(std::make_unique<SequenceAnalyzer>(config_, schema_, s_.row));
    }
    slot_sequence_.assign(static_cast<std::size_t>(slots), -1);
    run_ = run_json();
    run_dir_->write_json("run.json", run_);
    progress_.emplace(sequences_, static_cast<std::size_t>(seq_len_), progress_sink(s_.progress));
    if (const auto started = start_sink(s_.progress)) {
      started({info_["model"].value("model_type", std::string("transformers")), info_.value("precision", ""),
               info_.value("device", ""), sequences_, seq_len_, rows_.size(), 0, sequences_, ""});
    }
  }

  const std::vector<int>& rows() const { return rows_; }

  // Slot `slot` holds sequence `sequence` (numbered from 0 in the order given) from now on.
  void begin(int slot, std::size_t sequence, const py::array_t<std::int32_t, py::array::c_style>& tokens) {
    SequenceAnalyzer& a = analyzer(slot);
    if (tokens.ndim() != 1 || tokens.shape(0) != seq_len_) {
      throw InputError("hf: sequence " + std::to_string(sequence) + " needs " + std::to_string(seq_len_) + " tokens");
    }
    a.begin(sequence, std::span<const int>(tokens.data(), static_cast<std::size_t>(seq_len_)), rows_);
    slot_sequence_[static_cast<std::size_t>(slot)] = static_cast<long long>(sequence);
  }

  // Layer `layer` of slots 0..B-1: attn [B, H, Q, T] (the captured rows; causal distributions)
  // and values [B, H_kv, T, d]. `subject` names the module in errors.
  void layer(int layer, const FloatArray& attn, const FloatArray& values, const std::string& subject) {
    const auto batch = attn.ndim() == 4 ? attn.shape(0) : 0;
    const std::vector<py::ssize_t> want_attn = {batch, config_.heads, static_cast<py::ssize_t>(rows_.size()), seq_len_};
    const std::vector<py::ssize_t> want_values = {batch, config_.kv_heads, seq_len_, config_.head_dim};
    const auto shape_of = [](const FloatArray& a) { return std::vector<py::ssize_t>(a.shape(), a.shape() + a.ndim()); };
    if (layer < 0 || layer >= config_.layers || batch < 1 || batch > static_cast<py::ssize_t>(analyzers_.size()) ||
        shape_of(attn) != want_attn || shape_of(values) != want_values) {
      throw InputError(subject + ": expected attention rows [B, " + std::to_string(config_.heads) + ", " +
                       std::to_string(rows_.size()) + ", " + std::to_string(seq_len_) + "] and values [B, " +
                       std::to_string(config_.kv_heads) + ", " + std::to_string(seq_len_) + ", " +
                       std::to_string(config_.head_dim) + "] of layer " + std::to_string(layer) + " of " +
                       std::to_string(config_.layers));
    }
    const std::size_t attn_size = static_cast<std::size_t>(attn.size() / batch);
    const std::size_t values_size = static_cast<std::size_t>(values.size() / batch);
    const float* attn_data = attn.data();
    const float* values_data = values.data();
    run_interruptibly(
        [&](const std::atomic<bool>&) {
          for (py::ssize_t b = 0; b < batch; ++b) {
            const float* a = attn_data + static_cast<std::size_t>(b) * attn_size;
            const float* v = values_data + static_cast<std::size_t>(b) * values_size;
            const std::string where =
                subject + " (sequence " + std::to_string(slot_sequence_.at(static_cast<std::size_t>(b))) + ")";
            check_attention_rows(std::span<const float>(a, attn_size), rows_, static_cast<std::size_t>(seq_len_),
                                 where + ", attention");
            if (const NonFiniteCount bad = count_nonfinite(DType::kF32, v, values_size); bad.count) {
              throw InputError(where + ": the value states hold " + std::to_string(bad.count) + " NaN/Inf value(s)");
            }
            SequenceAnalyzer& analyzer = *analyzers_[static_cast<std::size_t>(b)];
            analyzer.on_values(layer, ValueStates{config_.kv_heads, seq_len_, config_.head_dim, v, MemorySpace::kHost});
            analyzer.on_attention(layer, AttentionRows{0, config_.heads, rows_, seq_len_, a, MemorySpace::kHost});
          }
        },
        s_.threads);
  }

  // The sequence in `slot` has had every layer: its record is written.
  void end(int slot) {
    const SequenceAnalyzer& a = analyzer(slot);
    write_record(record_path(run_dir_->records_dir(), a.record().sequence), schema_, a.record());
    slot_sequence_[static_cast<std::size_t>(slot)] = -1;
    progress_->sequence_done(++done_);
  }

  // Every sequence is in: the tables, run.json ("complete") and report.html.
  void finish() {
    if (done_ != sequences_) {
      throw InputError("hf: " + std::to_string(done_) + " of " + std::to_string(sequences_) + " sequences analysed");
    }
    run_interruptibly(
        [&](const std::atomic<bool>&) {
          const RunAggregate aggregate = finish_run_dir(out_, config_.kv_heads, s_.aggregate, s_.per_sequence);
          run_["sequences_done"] = done_;
          run_["complete"] = true;
          run_["taxonomy"] = taxonomy_json(aggregate);
          run_dir_->write_json("run.json", run_);
          write_run_report(out_);
        },
        s_.threads);
    guard_.reset();
  }

  // Ends the feed without finishing: a run without a record leaves `out` as it was found.
  void close() { guard_.reset(); }

 private:
  SequenceAnalyzer& analyzer(int slot) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= analyzers_.size()) {
      throw py::index_error("hf: slot " + std::to_string(slot) + " of " + std::to_string(analyzers_.size()));
    }
    return *analyzers_[static_cast<std::size_t>(slot)];
  }

  nlohmann::json run_json() const {
    nlohmann::json model = info_.value("model", nlohmann::json::object());
    model["layers"] = config_.layers;
    model["heads"] = config_.heads;
    model["kv_heads"] = config_.kv_heads;
    model["head_dim"] = config_.head_dim;
    nlohmann::json run = {{"format", "attngeom-run-v1"},
                          {"label", s_.label.empty() ? default_run_label(out_) : s_.label},
                          {"attngeom", tool_provenance()},
                          {"created", utc_timestamp()},
                          {"machine", machine_provenance()},
                          {"model", model},
                          {"precision", info_.value("precision", "")},
                          {"device", info_.value("device", "")},
                          {"tokenizer", info_.value("tokenizer", nlohmann::json(nullptr))},
                          {"seq_len", seq_len_},
                          {"n_grid", schema_.n_grid},
                          {"queries", s_.queries.text},
                          {"corpus", info_.value("corpus", nlohmann::json::object())},
                          {"options", options_json(s_.row, s_.aggregate)},
                          {"shard", {{"index", 0}, {"count", 1}}},
                          {"settings", settings_},
                          {"sequences_done", 0}};
    return run;
  }

  std::filesystem::path out_;
  nlohmann::json info_, settings_, run_;
  FeedSettings s_;
  ModelConfig config_;
  int seq_len_ = 0;
  std::size_t sequences_ = 0, done_ = 0;
  std::vector<int> rows_;
  RecordSchema schema_;
  std::optional<RunDirGuard> guard_;
  std::optional<RunDir> run_dir_;
  std::vector<std::unique_ptr<SequenceAnalyzer>> analyzers_;  // one per batch slot
  std::vector<long long> slot_sequence_;                      // the sequence each slot holds, -1: none
  std::optional<Progress> progress_;
};

}  // namespace

void bind_run_feed(py::module_& m) {
  py::class_<RunFeed>(m, "_RunFeed")
      .def(py::init<const std::string&, const py::dict&, int, std::size_t, int, const std::string&, const py::dict&>(),
           py::arg("out"), py::arg("shape"), py::arg("seq_len"), py::arg("sequences"), py::arg("slots"),
           py::arg("info"), py::arg("options"))
      .def_property_readonly("rows", &RunFeed::rows)
      .def("begin", &RunFeed::begin, py::arg("slot"), py::arg("sequence"), py::arg("tokens"))
      .def("layer", &RunFeed::layer, py::arg("layer"), py::arg("attn"), py::arg("values"), py::arg("subject"))
      .def("end", &RunFeed::end, py::arg("slot"))
      .def("finish", &RunFeed::finish)
      .def("close", &RunFeed::close);
  m.def("_hf_option_names", &feed_keyword_names);
}

}  // namespace attngeom::python
