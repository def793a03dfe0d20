#pragma once
// Marks a function that both the CPU build and a CUDA kernel run (nvcc compiles it for the
// device too); elsewhere it is an ordinary inline function. Headers that use it stay C++17.
#if defined(__CUDACC__)
#define ATTNGEOM_HD __host__ __device__
#else
#define ATTNGEOM_HD
#endif

// `#pragma omp simd` with these clauses on the CPU; nothing in a CUDA translation unit.
#if defined(__CUDACC__)
#define ATTNGEOM_SIMD(clauses)
#else
#define ATTNGEOM_PRAGMA(text) _Pragma(#text)
#define ATTNGEOM_SIMD(clauses) ATTNGEOM_PRAGMA(omp simd clauses)
#endif
