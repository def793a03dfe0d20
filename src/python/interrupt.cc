#include "python/interrupt.h"

#include <omp.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace attngeom::python {

namespace py = pybind11;

void run_interruptibly(const std::function<void(const std::atomic<bool>& stop)>& work, int threads) {
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::condition_variable finished_cv;
  bool finished = false;
  std::exception_ptr error;
  std::thread worker;
  {
    py::gil_scoped_release release;
    worker = std::thread([&] {
      try {
        // OpenMP's team size is a per-thread setting: set it on the thread that runs the work.
        if (threads > 0) omp_set_num_threads(threads);
        work(stop);
      } catch (...) {
        error = std::current_exception();
      }
      const std::lock_guard lock(mutex);
      finished = true;
      finished_cv.notify_all();
    });
  }
  bool interrupted = false;
  for (;;) {
    {
      py::gil_scoped_release release;
      std::unique_lock lock(mutex);
      if (finished_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return finished; })) break;
    }
    if (!interrupted && PyErr_CheckSignals() != 0) {
      interrupted = true;  // the Python error stays set until the work has stopped
      stop = true;
    }
  }
  {
    py::gil_scoped_release release;
    worker.join();
  }
  if (interrupted) throw py::error_already_set();
  if (error) std::rethrow_exception(error);
}

}  // namespace attngeom::python
