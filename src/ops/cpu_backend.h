#pragma once
// The CPU implementation of the compute seam (ops/backend.h): host memory, oneDNN products
// through a LinearBackend (fp32, bf16x3 or bf16), and the fp32 kernels of ops/elementwise.h
// and ops/attention.h.
#include <memory>

#include "ops/backend.h"
#include "ops/gemm.h"

namespace attngeom {

std::unique_ptr<Backend> make_cpu_backend(std::unique_ptr<LinearBackend> linear);

}  // namespace attngeom
