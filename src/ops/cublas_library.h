#pragma once
// cuBLAS, opened when the first CUDA backend is made: a build with CUDA then starts, and runs
// on the CPU, without loading cuBLAS's libraries (about half a GB) or needing them installed.
#include <cublas_v2.h>

namespace attngeom {

// The C API's forms of the two Ex products (cublas_api.h adds C++ overloads beside them).
using CublasGemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                        const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
                                        const void*, void*, cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                                      int, const void*, const void*, cudaDataType, int, long long,
                                                      const void*, cudaDataType, int, long long, const void*, void*,
                                                      cudaDataType, int, long long, int, cublasComputeType_t,
                                                      cublasGemmAlgo_t);
// Unevaluated: each fails to compile unless the header declares that form.
static_assert(sizeof(static_cast<CublasGemmEx>(&cublasGemmEx)) > 0);
static_assert(sizeof(static_cast<CublasGemmStridedBatchedEx>(&cublasGemmStridedBatchedEx)) > 0);

// The cuBLAS entry points the CUDA backend and the pair deviations call, as cublas_v2.h declares them.
struct CublasLibrary {
  decltype(&cublasCreate) create;
  decltype(&cublasDestroy) destroy;
  decltype(&cublasSetStream) set_stream;
  decltype(&cublasSetMathMode) set_math_mode;
  decltype(&cublasGetStatusString) status_string;
  decltype(&cublasSgemm) sgemm;
  decltype(&cublasSgemmStridedBatched) sgemm_strided_batched;
  decltype(&cublasDgemmStridedBatched) dgemm_strided_batched;
  CublasGemmEx gemm_ex;
  CublasGemmStridedBatchedEx gemm_strided_batched_ex;
};

// The library, opened once; a std::runtime_error naming it when it cannot be opened.
const CublasLibrary& cublas_library();

}  // namespace attngeom
