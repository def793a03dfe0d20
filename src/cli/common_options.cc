#include <cstdint>

#include <omp.h>

#include "cli/commands.h"
#include "util/error.h"

namespace attngeom::cli {

void add_precision_options(CLI::App& cmd, PrecisionFlags& flags) {
  cmd.add_option("--precision", flags.precision,
                 "matmul precision: fp32 (exact reference path), bf16 (AMX fast path), or auto (bf16 when AMX is present)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16"}))
      ->capture_default_str();
  cmd.add_option("--fp32-matmul", flags.fp32_matmul,
                 "fp32 kernel for bf16 weights: sgemm (oneDNN, weights widened) or bf16x3 (exact three-term "
                 "split on AMX, same maths)")
      ->check(CLI::IsMember({"sgemm", "bf16x3"}))
      ->capture_default_str();
}

CLI::Validator non_empty() {
  return {[](const std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); },
          "NON-EMPTY"};
}

CLI::Validator seed_value() {
  return {[](const std::string& value) {
            const bool digits = !value.empty() && value.size() <= 16 &&
                                value.find_first_not_of("0123456789") == std::string::npos;
            return digits && std::stoull(value) < (std::uint64_t{1} << 53)
                       ? std::string()
                       : std::string("expected an integer in [0, 2^53), found '" + value + "'");
          },
          "SEED"};
}

namespace {

// Before any work starts: without it, the first bf16 product would fail mid-run.
void require_bf16_matmul(const std::string& flag, const std::string& instead) {
  if (!cpu_has_bf16_matmul()) {
    throw InputError(flag + ": oneDNN has no bf16 matmul on this CPU (it needs AVX-512); use " + instead);
  }
}

}  // namespace

Precision resolve_precision(const std::string& value) {
  if (value == "bf16") {
    require_bf16_matmul("--precision bf16", "--precision fp32 or auto");
    return Precision::kBf16;
  }
  if (value == "auto") return cpu_has_amx() ? Precision::kBf16 : Precision::kFp32;
  return Precision::kFp32;
}

Fp32Matmul resolve_fp32_matmul(const std::string& value) {
  if (value != "bf16x3") return Fp32Matmul::kSgemm;
  require_bf16_matmul("--fp32-matmul bf16x3", "--fp32-matmul sgemm");
  return Fp32Matmul::kBf16x3;
}

std::unique_ptr<LinearBackend> make_backend(const PrecisionFlags& flags, DType weights) {
  return make_backend(resolve_precision(flags.precision), resolve_fp32_matmul(flags.fp32_matmul), weights);
}

void apply_thread_count(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace attngeom::cli
