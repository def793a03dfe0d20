#include "ops/timed_linear.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace attngeom {

void TimedLinearBackend::linear_products(const LinearInput& x, std::span<const LinearOutput> outputs) {
  using Clock = std::chrono::steady_clock;
  // A produced input (a norm, an activation) runs inside the conversion; its time on the
  // busiest thread belongs to the rest of the forward, not to the linear layers.
  std::vector<double> produce_seconds(static_cast<std::size_t>(omp_get_max_threads()), 0.0);
  LinearInput timed = x;
  if (x.stored == nullptr) {
    timed.produce = [&](std::int64_t begin, std::int64_t end, float* out) {
      const auto start = Clock::now();
      x.produce(begin, end, out);
      produce_seconds[static_cast<std::size_t>(omp_get_thread_num())] +=
          std::chrono::duration<double>(Clock::now() - start).count();
    };
  }
  const auto start = Clock::now();
  inner_->linear_products(timed, outputs);
  timings_.seconds += std::chrono::duration<double>(Clock::now() - start).count() -
                      *std::max_element(produce_seconds.begin(), produce_seconds.end());
  for (const LinearOutput& output : outputs) {
    const TensorView& w = *output.weight;
    timings_.flops += 2.0 * static_cast<double>(x.rows) * static_cast<double>(w.rows) * static_cast<double>(w.cols);
  }
}

}  // namespace attngeom
