#include "util/machine.h"

#include <unistd.h>

#include <ctime>
#include <fstream>
#include <thread>

namespace attngeom {

MachineInfo machine_info() {
  MachineInfo info;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) info.hostname = host;
  info.logical_cores = static_cast<int>(std::thread::hardware_concurrency());
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0) {
      info.cpu_model = line.substr(line.find(':') + 2);
      break;
    }
  }
  info.memory_bytes = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  return info;
}

std::string utc_timestamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace attngeom
