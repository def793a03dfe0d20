// attngeom bench: seconds per sequence of one model at one length and precision, by
// stage: forward only, forward + capture of the query rows (--queries, the last by default;
// attention rows and values copied out, nothing computed on them), and full analyze (the
// geometry on every head; on a
// GPU with its placement: --layer-workers, --cpu-deviations, --cpu-selection, and
// --blocked-attention for the attention kernels; and also with
// the sequences back to back, each forward pass beside the analysis of the one before).
// Prints one JSON object; bench/run_bench.py drives it across models, lengths and
// precisions, each in a fresh process so peak RSS is per configuration.
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <vector>

#include "analysis/device_observer.h"
#include "analysis/overlapped_sequences.h"
#include "analysis/row_fields.h"
#include "cli/commands.h"
#include "io/checkpoint.h"
#include "model/engine.h"
#include "util/error.h"

namespace attngeom::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Copies what it is given, as any capture consumer must at least do.
class CopyingObserver final : public ForwardObserver {
 public:
  CopyingObserver(const ModelConfig& c, int seq, std::size_t rows)
      : values_(static_cast<std::size_t>(c.kv_dim()) * seq),
        probs_(static_cast<std::size_t>(c.heads) * rows * seq),
        rows_(rows),
        seq_(seq) {}
  void on_values(int, const ValueStates& values) override {
    std::copy_n(values.values, values_.size(), values_.data());
  }
  void on_attention(int, const AttentionRows& rows) override {
    const std::size_t head = rows_ * seq_;  // [rows, seq]
    std::copy_n(rows.probs, static_cast<std::size_t>(rows.heads()) * head,
                probs_.data() + static_cast<std::size_t>(rows.head_begin) * head);
  }

 private:
  std::vector<float> values_, probs_;
  std::size_t rows_;
  std::size_t seq_;
};

struct BenchFlags {
  std::string model_dir;
  int seq_len = 1024;
  int repeats = 1;
  PrecisionFlags precision;
  std::string stages = "forward,capture,analyze";
  QuerySelection queries;  // the rows capture and analyze take
  int threads = 0;
  GpuAnalysisPlacement gpu;  // --layer-workers, --cpu-deviations, --cpu-selection
  bool blocked_attention = false;
};

struct StageResult {
  double seconds = 0;            // per sequence
  double linear_seconds = 0;     // per sequence
  double attention_seconds = 0;  // per sequence
  double linear_flops = 0;       // per sequence
};

}  // namespace

void add_bench_command(CLI::App& app) {
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = app.add_subcommand("bench", "Time forward, capture and analyze on random tokens (prints JSON)");
  cmd->add_option("--model", f->model_dir, "Hugging Face model directory")->required();
  cmd->add_option("--seq-len", f->seq_len, "tokens per sequence")
      ->check(integer_in(2, 1LL << 20))
      ->capture_default_str();
  cmd->add_option("--repeats", f->repeats, "timed sequences per stage (after one warm-up forward)")
      ->check(integer_in(1, 1000))
      ->capture_default_str();
  cmd->add_option("--stages", f->stages, "comma-separated subset of forward,capture,analyze")->capture_default_str();
  add_queries_option(*cmd, f->queries);
  cmd->add_option("--threads", f->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  cmd->add_option("--layer-workers", f->gpu.layer_workers,
                  "on a GPU, layers analysed at once (default: one per four threads, at most four)")
      ->check(integer_in(1, 64));
  cmd->add_flag_callback(
      "--cpu-deviations", [f] { f->gpu.gpu_deviations = false; },
      "on a GPU, screen the cosine deviations on the CPU as without one");
  cmd->add_flag_callback(
      "--cpu-selection", [f] { f->gpu.gpu_selection = false; },
      "on a GPU, compute the selection metrics and envelopes on the CPU as without one");
  cmd->add_flag("--blocked-attention", f->blocked_attention,
                "on a GPU in bf16, attention by query blocks with their scores in GPU memory, as in fp32, "
                "instead of the fused kernel");
  add_precision_options(*cmd, f->precision);
  cmd->callback([f] {
    apply_thread_count(f->threads);
    std::vector<std::string> stages;
    std::stringstream list(f->stages);
    for (std::string stage; std::getline(list, stage, ',');) {
      if (stage != "forward" && stage != "capture" && stage != "analyze") {
        throw InputError("--stages: unknown stage '" + stage + "' (forward, capture, analyze)");
      }
      if (std::find(stages.begin(), stages.end(), stage) != stages.end()) {
        throw InputError("--stages: '" + stage + "' appears twice");
      }
      stages.push_back(stage);
    }
    if (stages.empty() || f->stages.back() == ',') {
      throw InputError("--stages '" + f->stages + "': expected a comma-separated subset of forward, capture, analyze");
    }
    const Checkpoint checkpoint(f->model_dir);
    const ModelConfig& c = checkpoint.config();
    if (f->seq_len > c.max_positions) {
      throw InputError("--seq-len " + std::to_string(f->seq_len) + " exceeds max_position_embeddings " +
                       std::to_string(c.max_positions) + " of " + f->model_dir);
    }
    EngineOptions options = resolve_compute(f->precision);
    options.timed = true;
    options.blocked_attention = f->blocked_attention;
    if (options.device != Device::kCuda &&
        (f->gpu.layer_workers != 0 || !f->gpu.gpu_deviations || !f->gpu.gpu_selection || f->blocked_attention)) {
      std::fprintf(stderr,
                   "attngeom: warning: --layer-workers, --cpu-deviations, --cpu-selection and --blocked-attention "
                   "have no effect on the CPU\n");
    }
    Engine engine(c, checkpoint.weights(), options);
    Transformer& model = engine.model();
    const Backend& backend = engine.backend();
    const LinearTimings& linear = *engine.linear_timings();
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> token(0, c.vocab - 1);
    std::vector<int> tokens(static_cast<std::size_t>(f->seq_len));
    for (int& t : tokens) t = token(rng);
    tokens[0] = c.bos_token_id;

    ForwardRequest request;
    for (int l = 0; l < c.layers; ++l) request.capture_layers.push_back(l);
    request.capture_rows = resolve_query_rows(f->queries, f->seq_len);
    const RecordSchema schema = make_record_schema(static_cast<std::size_t>(f->seq_len), false);
    // As analyze does: on a GPU the host analyses each layer while the GPU computes the next.
    const GpuAnalysisPlacement placement =
        fitted_placement(engine, c, geometry::RowAnalysisOptions{}, f->gpu, f->seq_len, request.capture_rows.size());
    OverlappedSequences sequences(c, schema, geometry::RowAnalysisOptions{}, overlapped_setup(engine, placement));
    const auto forward_with = [&](ForwardObserver& observer) { model.forward(tokens, request, &observer, nullptr); };
    CopyingObserver copier(c, f->seq_len, request.capture_rows.size());

    nlohmann::json out = {{"model", f->model_dir},
                          {"seq_len", f->seq_len},
                          {"precision", std::string(precision_name(backend.precision()))},
                          {"matmul", std::string(backend.kernel())},
                          {"device", std::string(device_name(engine.device()))},
                          {"weight_bytes", checkpoint.weight_bytes()},
                          {"threads", omp_get_max_threads()},
                          {"queries", f->queries.text},
                          {"query_rows", request.capture_rows.size()},
                          {"repeats", f->repeats}};
    if (!engine.gpu_name().empty()) out["gpu"] = engine.gpu_name();
    if (sequences.layer_workers() > 0) {
      out["layer_workers"] = sequences.layer_workers();
      out["deviations"] = f->gpu.gpu_deviations ? "gpu" : "cpu";
      out["selection"] = f->gpu.gpu_selection ? "gpu" : "cpu";
      out["attention"] = engine.gpu_attention(f->seq_len, request.capture_rows.size());
    }
    // Per sequence, the repeats run back to back as analyze runs a corpus: each forward pass
    // beside the analysis of the sequence before.
    const auto overlapped_seconds = [&] {
      const OverlappedSequences::Done ignore = [](const SequenceAnalyzer&) {};
      const auto start = Clock::now();
      for (int rep = 0; rep < f->repeats; ++rep) {
        sequences.analyze(static_cast<std::size_t>(rep), tokens, request.capture_rows, forward_with, ignore);
      }
      sequences.finish(ignore);
      return std::chrono::duration<double>(Clock::now() - start).count() / f->repeats;
    };
    const auto run_stage = [&](const std::string& stage) {
      ForwardObserver* observer = stage == "forward" ? nullptr : &copier;
      StageResult r;
      SequenceAnalyzer::PartSeconds parts;  // analyze: the mean per sequence
      const OverlappedSequences::Done add_parts = [&](const SequenceAnalyzer& analyzed) {
        const SequenceAnalyzer::PartSeconds p = analyzed.part_seconds();
        for (auto part : {&SequenceAnalyzer::PartSeconds::value_geometry, &SequenceAnalyzer::PartSeconds::deviations,
                          &SequenceAnalyzer::PartSeconds::row_parts, &SequenceAnalyzer::PartSeconds::heads}) {
          parts.*part += p.*part / f->repeats;
        }
      };
      for (int rep = 0; rep < f->repeats; ++rep) {
        const double linear0 = linear.seconds, flops0 = linear.flops, attn0 = model.timings().attention_seconds;
        const auto start = Clock::now();
        if (stage == "analyze") {
          sequences.analyze(0, tokens, request.capture_rows, forward_with, add_parts);
          sequences.finish(add_parts);  // this sequence alone: nothing overlaps its analysis
        } else {
          model.forward(tokens, request, observer, nullptr);
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        r.seconds += seconds / f->repeats;
        r.linear_seconds += (linear.seconds - linear0) / f->repeats;
        r.attention_seconds += (model.timings().attention_seconds - attn0) / f->repeats;
        r.linear_flops = linear.flops - flops0;  // the same on every repeat
      }
      out[stage] = {{"seconds", r.seconds},
                    {"linear_seconds", r.linear_seconds},
                    {"attention_seconds", r.attention_seconds},
                    {"linear_tflops", r.linear_flops / r.linear_seconds * 1e-12},
                    {"linear_flops", r.linear_flops},
                    {"other_seconds", r.seconds - r.linear_seconds - r.attention_seconds}};
      if (stage == "analyze") {
        // Busy seconds of each part, summed over the layers (which may run at once).
        out[stage]["parts"] = {{"value_geometry_seconds", parts.value_geometry},
                               {"deviations_seconds", parts.deviations},
                               {"row_parts_seconds", parts.row_parts},
                               {"heads_seconds", parts.heads}};
        if (sequences.layer_workers() > 0) out[stage]["overlapped_seconds"] = overlapped_seconds();
      }
    };
    model.forward(tokens, request, nullptr, nullptr);  // warm-up: primitive creation, weight page faults
    for (const std::string& stage : stages) run_stage(stage);
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    out["peak_rss_bytes"] = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
    std::printf("%s\n", out.dump().c_str());
  });
}

}  // namespace attngeom::cli
