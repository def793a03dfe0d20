#include <omp.h>

#include "cli/commands.h"

namespace attngeom::cli {

void add_precision_option(CLI::App& cmd, std::string& value) {
  cmd.add_option("--precision", value,
                 "matmul precision: fp32 (exact reference path), bf16 (AMX fast path), or auto (bf16 when AMX is present)")
      ->check(CLI::IsMember({"auto", "fp32", "bf16"}))
      ->capture_default_str();
}

Precision resolve_precision(const std::string& value) {
  if (value == "bf16") return Precision::kBf16;
  if (value == "auto") return cpu_has_amx() ? Precision::kBf16 : Precision::kFp32;
  return Precision::kFp32;
}

void apply_thread_count(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

}  // namespace attngeom::cli
