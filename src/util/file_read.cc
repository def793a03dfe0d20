#include "util/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace attngeom {
namespace {

// Opens read-only without blocking (a FIFO would otherwise wait for a writer) and checks
// the result is a regular file. Returns the descriptor and its size.
int open_regular(const std::filesystem::path& path, const std::string& what, std::size_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw MissingFileError(path.string() + ": " + what + " not found");
    throw InputError(path.string() + ": cannot open " + what + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw InputError(path.string() + ": " + what + " is not a regular file");
  }
  size = static_cast<std::size_t>(st.st_size);
  return fd;
}

}  // namespace

std::string read_file_bytes(const std::filesystem::path& path, std::size_t max_bytes, const std::string& what) {
  std::size_t size = 0;
  const int fd = open_regular(path, what, size);
  if (size > max_bytes) {
    ::close(fd);
    throw InputError(path.string() + ": " + what + " of " + std::to_string(size) + " bytes is larger than the " +
                     std::to_string(max_bytes) + "-byte limit");
  }
  std::string bytes(size, '\0');
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::read(fd, bytes.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(path.string() + ": cannot read " + what + ": " + std::strerror(err));
    }
    if (n == 0) break;  // shrank while reading
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  bytes.resize(done);
  return bytes;
}

}  // namespace attngeom
