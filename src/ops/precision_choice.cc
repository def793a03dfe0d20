#include "ops/precision_choice.h"

#include "util/error.h"

namespace attngeom {
namespace {

// Before any work starts: without it, the first bf16 product would fail mid-run.
void require_bf16_matmul(const SettingMessage& what, const SettingMessage& instead) {
  if (!cpu_has_bf16_matmul()) {
    throw SettingError(what + ": oneDNN has no bf16 matmul on this CPU (it needs AVX-512); use " + instead);
  }
}

Precision parse_precision(const std::string& value) {
  if (value == "bf16") {
    require_bf16_matmul({setting("precision"), " bf16"}, {setting("precision"), " fp32 or auto"});
    return Precision::kBf16;
  }
  if (value == "auto") return cpu_has_fast_bf16_matmul() ? Precision::kBf16 : Precision::kFp32;
  if (value != "fp32") throw SettingError({setting("precision"), " '" + value + "': expected auto, fp32 or bf16"});
  return Precision::kFp32;
}

// The fp32 path's kernel; bf16x3 beside an explicit bf16 precision is refused, beside an
// automatic one dropped with `warning`.
Fp32Matmul resolve_fp32_matmul(const std::string& precision_text, const std::string& kernel, Precision precision,
                               std::string& warning) {
  if (kernel != "bf16x3") {
    if (kernel != "sgemm") throw SettingError({setting("fp32_matmul"), " '" + kernel + "': expected sgemm or bf16x3"});
    return Fp32Matmul::kSgemm;
  }
  if (precision == Precision::kBf16) {
    // The bf16 path has no fp32 products: a kernel asked for by name must not be dropped silently.
    if (precision_text == "bf16") {
      throw SettingError({setting("fp32_matmul"), " bf16x3: chooses the fp32 path's kernel, but ", setting("precision"),
                          " bf16 runs bf16 products; use ", setting("precision"), " fp32"});
    }
    warning = "fp32_matmul bf16x3 has no effect: precision auto chose bf16 (fast on this CPU)";
    return Fp32Matmul::kSgemm;
  }
  require_bf16_matmul({setting("fp32_matmul"), " bf16x3"}, {setting("fp32_matmul"), " sgemm"});
  return Fp32Matmul::kBf16x3;
}

}  // namespace

PrecisionChoice choose_precision(const std::string& precision, const std::string& fp32_matmul) {
  PrecisionChoice choice{parse_precision(precision), Fp32Matmul::kSgemm, {}};
  choice.fp32_matmul = resolve_fp32_matmul(precision, fp32_matmul, choice.precision, choice.warning);
  return choice;
}

}  // namespace attngeom
