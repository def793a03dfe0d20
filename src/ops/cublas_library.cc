#include "ops/cublas_library.h"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace attngeom {
namespace {

template <class Function>
void bind(void* library, const char* name, Function& function) {
  function = reinterpret_cast<Function>(dlsym(library, name));
  if (function == nullptr)
    throw std::runtime_error(std::string("cuBLAS: no symbol ") + name + " in " + ATTNGEOM_CUBLAS_SONAME);
}

CublasLibrary open_cublas() {
  // By its soname first (LD_LIBRARY_PATH, the loader's cache), then where the build found it.
  void* library = dlopen(ATTNGEOM_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) library = dlopen(ATTNGEOM_CUBLAS_PATH, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    throw std::runtime_error(std::string("cannot open cuBLAS (") + ATTNGEOM_CUBLAS_SONAME + "): " + dlerror());
  }
  CublasLibrary api{};
  // The exported names: cublas_v2.h maps some of the API's names to *_v2 symbols.
  bind(library, "cublasCreate_v2", api.create);
  bind(library, "cublasDestroy_v2", api.destroy);
  bind(library, "cublasSetStream_v2", api.set_stream);
  bind(library, "cublasSetMathMode", api.set_math_mode);
  bind(library, "cublasGetStatusString", api.status_string);
  bind(library, "cublasSgemm_v2", api.sgemm);
  bind(library, "cublasSgemmStridedBatched", api.sgemm_strided_batched);
  bind(library, "cublasDgemmStridedBatched", api.dgemm_strided_batched);
  bind(library, "cublasGemmEx", api.gemm_ex);
  bind(library, "cublasGemmStridedBatchedEx", api.gemm_strided_batched_ex);
  return api;  // the library stays open for the process's life
}

}  // namespace

const CublasLibrary& cublas_library() {
  static const CublasLibrary library = open_cublas();
  return library;
}

}  // namespace attngeom
