#pragma once
// Long calls from Python: the work runs on a worker thread with the GIL released, while the
// calling thread wakes every few milliseconds to let Python see signals. On Ctrl-C the stop
// flag is raised (the work checks it between sequences or rows), the work is joined, and
// KeyboardInterrupt propagates; an exception of the work is rethrown in the caller.
#include <atomic>
#include <functional>

namespace attngeom::python {

// Runs work(stop) to completion; throws pybind11::error_already_set when a signal handler
// raised (KeyboardInterrupt). `threads` > 0 sets the worker's OpenMP team size.
void run_interruptibly(const std::function<void(const std::atomic<bool>& stop)>& work, int threads);

}  // namespace attngeom::python
