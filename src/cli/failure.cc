#include "cli/failure.h"

#include <filesystem>
#include <new>

#include "cli/commands.h"
#include "util/error.h"

namespace attngeom::cli {

Failure describe_failure(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const SettingError& e) {
    return {false, printable_message(spelled(e.message())), 2};
  } catch (const InputError& e) {
    return {false, e.what(), 2};
  } catch (const std::filesystem::filesystem_error& e) {
    // A file system refusal (permissions, a vanished path) the code did not anticipate.
    return {false, printable_message(e.what()), 2};
  } catch (const std::bad_alloc&) {
    return {false, "out of memory (try a smaller input: a shorter sequence, fewer query rows or values)", 2};
  } catch (const std::exception& e) {
    // A library's own failure (oneDNN's dnnl::error, say) that no check foresaw: one line and
    // the internal-error exit code, rather than std::terminate's abort.
    return {true, printable_message(e.what()), 1};
  }
}

}  // namespace attngeom::cli
