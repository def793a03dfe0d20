// attngeom capture: one sequence through the model, attention rows and value states
// of every layer written to a safetensors dump (see capture/dump_writer.h).
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "analysis/provenance.h"
#include "capture/dump_writer.h"
#include "capture/query_rows.h"
#include "cli/commands.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "model/engine.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/plural.h"
#include "util/version.h"

namespace attngeom::cli {
namespace {

namespace fs = std::filesystem;

struct CaptureOptions {
  std::string model_dir;
  std::string text_file;
  std::string tokens_file;
  std::string out;
  QuerySelection queries;
  bool logits = false;
  int max_tokens = 0;
  bool no_bos = false;
  bool force = false;
  int threads = 0;
  PrecisionFlags precision{"fp32"};
};

// The sequence, and what its position 0 holds: "bos", "text" (no BOS: --no-bos, or a
// tokenizer without one) or "verbatim" (--tokens).
std::vector<int> input_tokens(const CaptureOptions& o, const Checkpoint& checkpoint, std::string* position0) {
  const ModelConfig& c = checkpoint.config();
  std::vector<int> tokens;
  *position0 = "verbatim";
  if (!o.text_file.empty()) {
    const Tokenizer tokenizer = Tokenizer::for_model(o.model_dir, c.vocab, c.bos_token_id);
    const std::string text = read_text_file(o.text_file);
    tokens = tokenizer.encode(text, o.text_file);
    const bool bos = !o.no_bos && tokenizer.bos_id();
    if (bos) tokens.insert(tokens.begin(), *tokenizer.bos_id());
    *position0 = bos ? "bos" : "text";
  } else {
    tokens = read_token_file(o.tokens_file, c.vocab);  // used verbatim
  }
  if (o.max_tokens > 0 && static_cast<int>(tokens.size()) > o.max_tokens)
    tokens.resize(static_cast<std::size_t>(o.max_tokens));
  if (static_cast<int>(tokens.size()) > c.max_positions && !o.force) {
    throw InputError("--text/--tokens: " + std::to_string(tokens.size()) + " tokens exceed the model's " +
                     "max_position_embeddings " + std::to_string(c.max_positions) + " (use --max-tokens, or --force)");
  }
  return tokens;
}

std::map<std::string, std::string> dump_metadata(const CaptureOptions& o, const Checkpoint& checkpoint,
                                                 const Backend& backend, const std::string& position0) {
  const nlohmann::json model = model_shape(checkpoint);
  const nlohmann::json settings = {
      {"queries", o.queries.text},  {"bos", position0 == "bos"},
      {"position0", position0},     {"input", fs::absolute(o.text_file.empty() ? o.tokens_file : o.text_file).string()},
      {"max_tokens", o.max_tokens}, {"logits", o.logits}};
  return {{"format", "attngeom-capture-v1"},
          {"model", model.dump()},
          {"precision", std::string(precision_name(backend.precision()))},
          {"matmul", std::string(backend.kernel())},
          {"settings", settings.dump()},
          {"attngeom", std::string(kVersion) + " " + kGitCommit}};
}

void run_capture(const CaptureOptions& o) {
  check_output_path(o.out, {setting("out"), " " + o.out}, "a .safetensors file path",
                    {o.model_dir, o.text_file, o.tokens_file});
  apply_thread_count(o.threads);

  const Checkpoint checkpoint(o.model_dir);
  const ModelConfig& c = checkpoint.config();
  std::string position0;
  const std::vector<int> tokens = input_tokens(o, checkpoint, &position0);
  const int seq = static_cast<int>(tokens.size());

  ForwardRequest request;
  request.capture_rows = resolve_query_rows(o.queries, seq);
  for (int l = 0; l < c.layers; ++l) request.capture_layers.push_back(l);
  if (o.logits) {
    for (int i = 0; i < seq; ++i) request.logit_rows.push_back(i);
  }

  Engine engine(c, checkpoint.weights(), resolve_compute(o.precision));
  engine.check_gpu_memory(seq, request.capture_rows.size(), request.logit_rows.size());
  DumpWriter dump(o.out, c, tokens, request.capture_rows, request.capture_layers, o.logits,
                  engine.backend().precision(), dump_metadata(o, checkpoint, engine.backend(), position0));
  std::vector<float> logits;
  engine.model().forward(tokens, request, &dump, &logits);
  if (o.logits) dump.write_logits(logits);
  dump.commit();
  std::printf("wrote %s: %s, %s, %s\n", o.out.c_str(), count_of(tokens.size(), "token").c_str(),
              count_of(request.capture_rows.size(), "query row").c_str(), count_of(c.layers, "layer").c_str());
  if (dump.routed_choices() > 0 && engine.backend().precision() != Precision::kFp32) {
    std::printf("routing: %lld of %s differ from the fp32 router's choice of experts\n",
                static_cast<long long>(dump.routing_flips()),
                count_of(static_cast<std::size_t>(dump.routed_choices()), "token choice").c_str());
  }
}

}  // namespace

void add_capture_command(CLI::App& app) {
  auto options = std::make_shared<CaptureOptions>();
  CLI::App* cmd = app.add_subcommand("capture", "Run one sequence and dump attention rows and value states");
  cmd->add_option("--model", options->model_dir, "Hugging Face model directory")->required();
  auto* text = cmd->add_option("--text", options->text_file,
                               "UTF-8 text file to tokenize (BOS prepended where the tokenizer has one)");
  auto* ids =
      cmd->add_option("--tokens", options->tokens_file, "file of whitespace-separated token ids, used verbatim");
  text->excludes(ids);
  cmd->add_option("--out", options->out, "output .safetensors path")->check(non_empty())->required();
  add_queries_option(*cmd, options->queries);
  cmd->add_flag("--logits", options->logits, "also write logits [T, vocab]");
  cmd->add_option("--max-tokens", options->max_tokens, "truncate the sequence to N tokens (default: all)")
      ->check(integer_in(1, 1LL << 24));
  cmd->add_flag("--no-bos", options->no_bos, "do not prepend BOS to --text")->excludes(ids);
  cmd->add_flag("--force", options->force, "allow sequences longer than max_position_embeddings");
  cmd->add_option("--threads", options->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  add_precision_options(*cmd, options->precision);
  cmd->callback([options, text, ids] {
    if (text->count() + ids->count() != 1) throw InputError("capture: exactly one of --text or --tokens is required");
    run_capture(*options);
  });
}

}  // namespace attngeom::cli
