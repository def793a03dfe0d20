#include "prune/head_matrix.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/atomic_file.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/npy.h"
#include "util/plural.h"

namespace attngeom::prune {

namespace fs = std::filesystem;

namespace {

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open");
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string shape_text(long a, long b) {
  std::string text = "(";  // appended step by step: GCC 12 misreports "(" + std::string as -Wrestrict
  text += std::to_string(a);
  text += ", ";
  text += std::to_string(b);
  text += ")";
  return text;
}

// The value of `key` in a .npy header dict, up to (excluding) the next top-level ',' or '}'.
std::string header_field(const std::string& header, const std::string& key, const fs::path& path) {
  const std::size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) throw InputError(path.string() + ": .npy header has no '" + key + "'");
  std::size_t p = header.find(':', at);
  if (p == std::string::npos) throw InputError(path.string() + ": malformed .npy header");
  ++p;
  int depth = 0;
  std::size_t end = p;
  for (; end < header.size(); ++end) {
    const char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
  }
  std::string value = header.substr(p, end - p);
  const auto first = value.find_first_not_of(" ");
  const auto last = value.find_last_not_of(" ");
  return first == std::string::npos ? "" : value.substr(first, last - first + 1);
}

double element(const char* p, char kind, int size) {
  switch (kind) {
    case 'f':
      if (size == 4) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
      } else {
        double d;
        std::memcpy(&d, p, 8);
        return d;
      }
    case 'i': {
      std::int64_t v = 0;
      if (size == 1) v = static_cast<std::int8_t>(*p);
      if (size == 2) {
        std::int16_t x;
        std::memcpy(&x, p, 2);
        v = x;
      }
      if (size == 4) {
        std::int32_t x;
        std::memcpy(&x, p, 4);
        v = x;
      }
      if (size == 8) std::memcpy(&v, p, 8);
      return static_cast<double>(v);
    }
    default: {  // 'u' and 'b'
      std::uint64_t v = 0;
      std::memcpy(&v, p, static_cast<std::size_t>(size));  // little-endian host
      return static_cast<double>(v);
    }
  }
}

std::vector<double> read_npy_matrix(const fs::path& path, const HeadGrid& grid) {
  const std::string bytes = read_bytes(path);
  const std::string where = path.string() + ": ";
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw InputError(where + "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, offset = 0;
  if (major == 1) {
    header_len =
        static_cast<unsigned char>(bytes[8]) | (static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw InputError(where + "truncated .npy header");
    for (int i = 0; i < 4; ++i)
      header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    throw InputError(where + "unsupported .npy version " + std::to_string(major));
  }
  if (header_len > bytes.size() - offset) throw InputError(where + ".npy header longer than the file");
  const std::string header = bytes.substr(offset, header_len);
  offset += header_len;

  const std::string descr = header_field(header, "descr", path);
  if (descr.size() < 5 || (descr.front() != '\'' && descr.front() != '"')) {
    throw InputError(where + "unsupported .npy dtype " + descr);
  }
  const std::string d = descr.substr(1, descr.size() - 2);  // e.g. <f4
  const char order = d.empty() ? '?' : d[0];
  const char kind = d.size() > 1 ? d[1] : '?';
  const int size = d.size() == 3 && d[2] >= '1' && d[2] <= '8' ? d[2] - '0' : 0;
  const bool size_ok = (kind == 'f' && (size == 4 || size == 8)) ||
                       ((kind == 'i' || kind == 'u') && (size == 1 || size == 2 || size == 4 || size == 8)) ||
                       (kind == 'b' && size == 1);
  if ((order != '<' && order != '|' && order != '=') || !size_ok) {
    throw InputError(where + "unsupported .npy dtype " + descr + " (expected little-endian float, integer or bool)");
  }
  const std::string fortran = header_field(header, "fortran_order", path);
  if (fortran != "False" && fortran != "True") throw InputError(where + "malformed fortran_order " + fortran);
  const std::string shape = header_field(header, "shape", path);
  long rows = -1, cols = -1;
  char tail = 0;
  if (std::sscanf(shape.c_str(), " ( %ld , %ld %c", &rows, &cols, &tail) != 3 || tail != ')') {
    throw InputError(where + "shape " + shape + ", expected a 2-D array " + shape_text(grid.layers, grid.heads) +
                     " [layers, heads]");
  }
  if (rows != grid.layers || cols != grid.heads) {
    throw InputError(where + "shape " + shape_text(rows, cols) + ", expected " + shape_text(grid.layers, grid.heads) +
                     " [layers, heads]");
  }
  const auto count = static_cast<std::size_t>(grid.count());
  if (bytes.size() - offset != count * static_cast<std::size_t>(size)) {
    throw InputError(where + "holds " + std::to_string(bytes.size() - offset) + " data bytes, expected " +
                     std::to_string(count * static_cast<std::size_t>(size)));
  }
  std::vector<double> out(count);
  for (int l = 0; l < grid.layers; ++l) {
    for (int h = 0; h < grid.heads; ++h) {
      const std::size_t stored = fortran == "True" ? static_cast<std::size_t>(h) * grid.layers + l : grid.index(l, h);
      out[grid.index(l, h)] = element(bytes.data() + offset + stored * static_cast<std::size_t>(size), kind, size);
    }
  }
  return out;
}

std::vector<double> read_text_matrix(const fs::path& path, const HeadGrid& grid) {
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot open");
  std::vector<double> out;
  std::string line;
  int rows = 0;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path.string() + ":" + std::to_string(number) + ": ";
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    std::stringstream fields(line);
    std::string field;
    int cols = 0;
    while (fields >> field) {
      char* end = nullptr;
      const double v = std::strtod(field.c_str(), &end);
      if (end == field.c_str() || *end != '\0') throw InputError(where + "'" + field + "' is not a number");
      out.push_back(v);
      ++cols;
    }
    if (cols != grid.heads) {
      throw InputError(where + count_of(cols, "value") + ", expected one per head (" + std::to_string(grid.heads) +
                       ")");
    }
    if (++rows > grid.layers)
      throw InputError(where + "more than one line per layer (" + std::to_string(grid.layers) + ")");
  }
  if (rows != grid.layers) {
    throw InputError(path.string() + ": " + count_of(rows, "line") + " of values, expected one per layer (" +
                     std::to_string(grid.layers) + ")");
  }
  return out;
}

void write_text(const fs::path& path, const std::string& text) {
  AtomicFile file(path);
  file.write_at(0, text.data(), text.size());
  file.commit();
}

}  // namespace

std::vector<double> read_head_matrix(const fs::path& path, const HeadGrid& grid) {
  if (!fs::is_regular_file(path)) throw InputError(path.string() + ": not a file");
  return path.extension() == ".npy" ? read_npy_matrix(path, grid) : read_text_matrix(path, grid);
}

void write_head_scores(const fs::path& dir, const std::string& name, std::span<const double> values,
                       const HeadGrid& grid) {
  ATTNGEOM_CHECK(values.size() == static_cast<std::size_t>(grid.count()));
  write_npy(dir / (name + ".npy"), values, {grid.layers, grid.heads});
  std::string tsv;
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  for (int l = 0; l < grid.layers; ++l) {
    for (int h = 0; h < grid.heads; ++h) {
      const double v = values[grid.index(l, h)];
      tsv += format_real(v, CsvReals::kRoundTrip) + (h + 1 < grid.heads ? "\t" : "\n");
      json[grid.name(grid.index(l, h))] =
          std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
    }
  }
  write_text(dir / (name + ".tsv"), tsv);
  write_text(dir / (name + ".json"), json.dump(1) + "\n");
}

}  // namespace attngeom::prune
