#pragma once
// The precision settings as text ("auto" | "fp32" | "bf16", and the fp32 path's kernel
// "sgemm" | "bf16x3") resolved for this CPU: every front end's one route to make_backend's
// arguments. Errors are SettingErrors naming "precision" / "fp32_matmul".
#include <string>

#include "ops/gemm.h"

namespace attngeom {

struct PrecisionChoice {
  Precision precision;
  Fp32Matmul fp32_matmul;
  std::string warning;  // a setting that has no effect on this CPU; empty: none. Front ends show it.
};

// auto: bf16 where oneDNN's bf16 matmul outruns its sgemm (cpu_has_fast_bf16_matmul), else fp32.
PrecisionChoice choose_precision(const std::string& precision, const std::string& fp32_matmul);

}  // namespace attngeom
