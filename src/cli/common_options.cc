#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "analysis/option_table.h"
#include "cli/commands.h"
#include "corpus/documents.h"
#include "util/error.h"

namespace attngeom::cli {

void add_precision_options(CLI::App& cmd, PrecisionFlags& flags) {
  cmd.add_option(
         "--precision", flags.precision,
         "matmul precision: fp32 (exact reference path), bf16 (fast path), or auto (bf16 where it outruns fp32: "
         "AMX, or AVX512-BF16 on AMD)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16"}))
      ->capture_default_str();
  cmd.add_option("--fp32-matmul", flags.fp32_matmul,
                 "fp32 kernel for bf16 weights: sgemm (oneDNN, weights widened) or bf16x3 (exact three-term "
                 "split on AMX, same maths)")
      ->check(CLI::IsMember({"sgemm", "bf16x3"}))
      ->capture_default_str();
  cmd.add_option("--device", flags.device,
                 "where the forward pass runs: cpu, cuda (GPU 0) or cuda:N (builds with CUDA; docs/gpu.md). On a GPU, "
                 "--precision auto is bf16")
      ->capture_default_str();
}

void add_corpus_format_options(CLI::App& cmd, std::string& format, std::string& text_field) {
  cmd.add_option("--format", format, "text (a file is one document), lines (one per line) or jsonl")
      ->check(CLI::IsMember({"text", "lines", "jsonl"}))
      ->capture_default_str();
  cmd.add_option("--text-field", text_field, "JSONL field holding the text")->capture_default_str();
}

CorpusFormat resolve_corpus_format(const CLI::App& cmd, const std::string& format,
                                   const std::vector<std::string>& data) {
  const CorpusFormat given = parse_corpus_format(format);
  const CorpusFormat chosen = cmd.get_option("--format")->count() > 0 ? given : infer_corpus_format(data, given);
  if (chosen != CorpusFormat::kJsonl && cmd.get_option("--text-field")->count() > 0) {
    throw InputError("--text-field: applies only to --format jsonl, and --format is " + format);
  }
  return chosen;
}

CLI::Validator non_empty() {
  return {[](const std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); },
          "NON-EMPTY"};
}

std::optional<long long> parse_integer(std::string_view text) {
  long long x = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, x);
  if (text.empty() || error != std::errc() || stop != end) return std::nullopt;
  return x;
}

std::optional<double> parse_number(const std::string& text) {
  char* end = nullptr;
  const double x = text.empty() ? NAN : std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) return std::nullopt;
  return x;
}

CLI::Validator seed_value() {
  return {[](const std::string& value) {
            const std::optional<long long> x = parse_integer(value);
            return x && *x >= 0 && *x < (1LL << 53)
                       ? std::string()
                       : std::string("expected an integer in [0, 2^53), found '" + value + "'");
          },
          "SEED"};
}

CLI::Validator number_in(double lo, double hi) {
  return {[lo, hi](const std::string& value) {
            const std::optional<double> x = parse_number(value);
            return x && *x >= lo && *x <= hi  // false for NaN
                       ? std::string()
                       : fmt::format("expected a number in [{}, {}], found '{}'", lo, hi, value);
          },
          fmt::format("[{}, {}]", lo, hi)};
}

CLI::Validator integer_in(long long lo, long long hi) {
  return {[lo, hi](const std::string& value) {
            const std::optional<long long> x = parse_integer(value);
            return x && *x >= lo && *x <= hi
                       ? std::string()
                       : fmt::format("expected an integer in [{}, {}], found '{}'", lo, hi, value);
          },
          fmt::format("[{}, {}]", lo, hi)};
}

std::string flag_of(const std::string& setting) {
  std::string flag = "--" + setting;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

std::string spelled(const SettingMessage& message) { return message.spelled(flag_of); }

CLI::Option* add_queries_option(CLI::App& cmd, QuerySelection& queries) {
  return cmd
      .add_option_function<std::string>(
          flag_of("queries"), [&queries](const std::string& text) { queries = parse_query_selection(text); },
          std::string(option_spec("queries").help))
      ->default_str(queries.text);
}

EngineOptions resolve_compute(const PrecisionFlags& flags) {
  const ComputeChoice choice = choose_compute(flags.device, flags.precision, flags.fp32_matmul);
  if (!choice.warning.empty()) std::fprintf(stderr, "attngeom: warning: %s\n", choice.warning.c_str());
  return choice.options;
}

void apply_thread_count(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace attngeom::cli
