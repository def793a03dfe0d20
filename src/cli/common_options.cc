#include <omp.h>

#include "cli/commands.h"

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

Precision resolve_precision(const std::string& value) {
  if (value == "bf16") return Precision::kBf16;
  if (value == "auto") return cpu_has_amx() ? Precision::kBf16 : Precision::kFp32;
  return Precision::kFp32;
}

Fp32Matmul resolve_fp32_matmul(const std::string& value) {
  return value == "bf16x3" ? Fp32Matmul::kBf16x3 : Fp32Matmul::kSgemm;
}

std::unique_ptr<LinearBackend> make_backend(const PrecisionFlags& flags) {
  return make_backend(resolve_precision(flags.precision), resolve_fp32_matmul(flags.fp32_matmul));
}

void apply_thread_count(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace attngeom::cli
