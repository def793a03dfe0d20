// attngeom perplexity: held-out perplexity of a text under the documented protocol
// (eval/perplexity.h), optionally with heads masked.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "cli/commands.h"
#include "eval/perplexity.h"
#include "io/checkpoint.h"
#include "io/tokenizer.h"
#include "model/engine.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/plural.h"

namespace attngeom::cli {
namespace {

struct PerplexityOptions {
  std::string model_dir;
  std::string text_file;
  std::string tokens_file;
  std::string out;
  int context = 256;
  int stride = 0;
  bool no_bos = false;
  bool force = false;
  int max_tokens = 0;
  int threads = 0;
  PrecisionFlags precision{"fp32"};
};

void run_perplexity(const PerplexityOptions& o) {
  if (!o.out.empty())
    check_output_path(o.out, {setting("out"), " " + o.out}, "a .json file path",
                      {o.model_dir, o.text_file, o.tokens_file});
  apply_thread_count(o.threads);
  const Checkpoint checkpoint(o.model_dir);
  const ModelConfig& c = checkpoint.config();
  std::vector<int> stream;
  std::size_t text_bytes = 0;
  std::optional<int> bos_id;  // none: the tokenizer puts nothing before a text (Qwen)
  if (!o.text_file.empty()) {
    const Tokenizer tokenizer = Tokenizer::for_model(o.model_dir, c.vocab, c.bos_token_id);
    const std::string text = read_text_file(o.text_file);
    text_bytes = text.size();
    stream = tokenizer.encode(text, o.text_file);
    bos_id = tokenizer.bos_id();
  } else {
    stream = read_token_file(o.tokens_file, c.vocab);
    bos_id = checkpoint_bos_id(o.model_dir, c.vocab, c.bos_token_id);
    if (!o.no_bos && bos_id && !stream.empty() && stream.front() == *bos_id) {
      std::fprintf(stderr,
                   "attngeom perplexity: warning: %s starts with BOS (id %d), and each window starts with BOS "
                   "too, so the first window has two; drop the leading BOS or use --no-bos\n",
                   o.tokens_file.c_str(), *bos_id);
    }
  }
  const std::string input = o.text_file.empty() ? o.tokens_file : o.text_file;
  if (o.max_tokens > 0 && static_cast<int>(stream.size()) > o.max_tokens) {
    stream.resize(static_cast<std::size_t>(o.max_tokens));
    text_bytes = 0;  // the scored tokens no longer cover the text's bytes
  }
  if (o.context > c.max_positions && !o.force) {
    throw InputError("--context " + std::to_string(o.context) + " exceeds max_position_embeddings " +
                     std::to_string(c.max_positions) + " (--force allows it)");
  }
  const PerplexityProtocol protocol{o.context, o.stride, !o.no_bos && bos_id.has_value(), bos_id.value_or(0)};
  check_stride(protocol);
  Engine engine(c, checkpoint.weights(), resolve_compute(o.precision));
  const Backend& backend = engine.backend();
  const PerplexityResult r = evaluate_perplexity(engine.model(), stream, protocol, {}, nullptr, nullptr);
  if (r.tokens == 0) throw InputError(input + ": no token could be scored (text too short)");
  // Bits per byte needs every token of the whole text scored: a text, BOS before every window.
  std::optional<double> bits_per_byte;
  if (text_bytes > 0 && protocol.bos) {
    const double total_nll = std::accumulate(r.nll.begin(), r.nll.end(), 0.0);
    bits_per_byte = total_nll / std::log(2.0) / static_cast<double>(text_bytes);
  }

  const nlohmann::json result = {
      {"model", std::filesystem::absolute(o.model_dir).string()},
      {"input", input},
      {"precision", std::string(precision_name(backend.precision()))},
      {"matmul", std::string(backend.kernel())},
      {"protocol", {{"context", o.context}, {"stride", protocol.effective_stride()}, {"bos", protocol.bos}}},
      {"tokens", r.tokens},
      {"mean_nll", r.mean_nll},
      {"perplexity", r.perplexity},
      {"text_bytes", text_bytes > 0 ? nlohmann::json(text_bytes) : nlohmann::json()},
      {"bits_per_byte", bits_per_byte ? nlohmann::json(*bits_per_byte) : nlohmann::json()},
      {"nll", r.nll}};
  if (!o.out.empty()) {
    const std::string text = result.dump(1) + "\n";
    AtomicFile file(o.out);
    file.write_at(0, text.data(), text.size());
    file.commit();
  }
  std::printf("perplexity %.6f over %s (mean NLL %.6f nats; context %d, stride %zu, %s)\n", r.perplexity,
              count_of(r.tokens, "token").c_str(), r.mean_nll, o.context, protocol.effective_stride(),
              protocol.bos ? "BOS per window" : "no BOS");
  if (bits_per_byte) std::printf("bits per byte %.6f over %zu UTF-8 bytes\n", *bits_per_byte, text_bytes);
}

}  // namespace

void add_perplexity_command(CLI::App& app) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand("perplexity", "Held-out perplexity of a text (windows of --context tokens)");
  cmd->add_option("--model", o->model_dir, "Hugging Face model directory")->required();
  auto* text = cmd->add_option("--text", o->text_file, "UTF-8 text file");
  auto* tokens = cmd->add_option("--tokens", o->tokens_file, "whitespace-separated token ids (the stream, no BOS)");
  text->excludes(tokens);
  cmd->add_option("--out", o->out, "write the result (with per-token NLL) as JSON here")->check(non_empty());
  cmd->add_option("--context", o->context, "tokens per window, including BOS")
      ->check(integer_in(2, 1LL << 20))
      ->capture_default_str();
  cmd->add_option("--stride", o->stride, "tokens advanced per window (default: context - 1, no overlap)")
      ->check(integer_in(1, 1LL << 20));
  cmd->add_flag("--no-bos", o->no_bos, "do not start each window with BOS");
  cmd->add_flag("--force", o->force, "allow --context beyond max_position_embeddings");
  cmd->add_option("--max-tokens", o->max_tokens, "score at most the first N tokens of the text (default: all)")
      ->check(integer_in(1, 1LL << 30));
  cmd->add_option("--threads", o->threads, "worker threads (default: all cores)")->check(integer_in(1, 1024));
  add_precision_options(*cmd, o->precision);
  cmd->callback([o, text, tokens] {
    if (text->count() + tokens->count() != 1)
      throw InputError("perplexity: exactly one of --text or --tokens is required");
    run_perplexity(*o);
  });
}

}  // namespace attngeom::cli
