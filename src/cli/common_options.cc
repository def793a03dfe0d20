#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <omp.h>

#include "cli/commands.h"
#include "corpus/documents.h"
#include "util/error.h"

namespace attngeom::cli {

void add_precision_options(CLI::App& cmd, PrecisionFlags& flags) {
  cmd.add_option("--precision", flags.precision,
                 "matmul precision: fp32 (exact reference path), bf16 (fast path), or auto (bf16 where it outruns fp32: "
                 "AMX, or AVX512-BF16 on AMD)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16"}))
      ->capture_default_str();
  cmd.add_option("--fp32-matmul", flags.fp32_matmul,
                 "fp32 kernel for bf16 weights: sgemm (oneDNN, weights widened) or bf16x3 (exact three-term "
                 "split on AMX, same maths)")
      ->check(CLI::IsMember({"sgemm", "bf16x3"}))
      ->capture_default_str();
}

void add_corpus_format_options(CLI::App& cmd, std::string& format, std::string& text_field) {
  cmd.add_option("--format", format, "text (a file is one document), lines (one per line) or jsonl")
      ->check(CLI::IsMember({"text", "lines", "jsonl"}))
      ->capture_default_str();
  cmd.add_option("--text-field", text_field, "JSONL field holding the text")->capture_default_str();
}

CorpusFormat resolve_corpus_format(const CLI::App& cmd, const std::string& format) {
  if (format != "jsonl" && cmd.get_option("--text-field")->count() > 0) {
    throw InputError("--text-field: applies only to --format jsonl, and --format is " + format);
  }
  return parse_corpus_format(format);
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
            return x && *x >= 0 && *x < (1LL << 53) ? std::string()
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
            return x && *x >= lo && *x <= hi ? std::string()
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

void add_queries_option(CLI::App& cmd, QuerySelection& queries) {
  cmd.add_option_function<std::string>(
         flag_of("queries"), [&queries](const std::string& text) { queries = parse_query_selection(text); },
         "query rows: last, all, stride:K, or positions i,j,k")
      ->default_str(queries.text);
}

namespace {

// Before any work starts: without it, the first bf16 product would fail mid-run.
void require_bf16_matmul(const std::string& flag, const std::string& instead) {
  if (!cpu_has_bf16_matmul()) {
    throw InputError(flag + ": oneDNN has no bf16 matmul on this CPU (it needs AVX-512); use " + instead);
  }
}

// auto: bf16 where oneDNN's bf16 matmul outruns its sgemm (cpu_has_fast_bf16_matmul), else fp32.
Precision parse_precision(const std::string& value) {
  if (value == "bf16") {
    require_bf16_matmul("--precision bf16", "--precision fp32 or auto");
    return Precision::kBf16;
  }
  if (value == "auto") return cpu_has_fast_bf16_matmul() ? Precision::kBf16 : Precision::kFp32;
  return Precision::kFp32;
}

// The fp32 path's kernel; bf16x3 beside an explicit --precision bf16 is refused.
Fp32Matmul resolve_fp32_matmul(const PrecisionFlags& flags, Precision precision) {
  if (flags.fp32_matmul != "bf16x3") return Fp32Matmul::kSgemm;
  if (precision == Precision::kBf16) {
    // The bf16 path has no fp32 products: a kernel asked for by name must not be dropped silently.
    if (flags.precision == "bf16") {
      throw InputError("--fp32-matmul bf16x3: chooses the fp32 path's kernel, but --precision bf16 runs bf16 "
                       "products; use --precision fp32");
    }
    std::fprintf(stderr, "attngeom: warning: --fp32-matmul bf16x3 has no effect: --precision auto chose bf16 (fast on this CPU)\n");
    return Fp32Matmul::kSgemm;
  }
  require_bf16_matmul("--fp32-matmul bf16x3", "--fp32-matmul sgemm");
  return Fp32Matmul::kBf16x3;
}

}  // namespace

PrecisionChoice resolve_precision(const PrecisionFlags& flags) {
  const Precision precision = parse_precision(flags.precision);
  return {precision, resolve_fp32_matmul(flags, precision)};
}

void apply_thread_count(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace attngeom::cli
