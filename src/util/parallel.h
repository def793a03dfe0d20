#pragma once
// Independent work items on OpenMP threads.
#include <cstddef>
#include <exception>

namespace attngeom {

// Runs body(i) for every i in [0, count) on the current OpenMP team size, one index at a time
// per thread (items of uneven cost balance); omp_get_thread_num() inside body names the
// worker. An exception must not escape an OpenMP region: the first one thrown is kept and
// rethrown here once every item has run.
template <class Body>
void parallel_for_each(std::size_t count, const Body& body) {
  std::exception_ptr first_error;
#pragma omp parallel for schedule(dynamic, 1)
  for (std::size_t i = 0; i < count; ++i) {
    try {
      body(i);
    } catch (...) {
#pragma omp critical(parallel_for_each_error)
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace attngeom
