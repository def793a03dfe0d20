#include "interop/head_set_files.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <set>

#include "util/atomic_file.h"
#include "util/csv.h"
#include "util/error.h"
#include "util/file_read.h"
#include "util/json_parse.h"

namespace attngeom::interop {

namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxHeadSetBytes = 64u << 20;

void write_text(const fs::path& path, const std::string& text) {
  AtomicFile out(path);
  out.write_at(0, text.data(), text.size());
  out.commit();
}

std::string head_name(int layer, int head) { return std::to_string(layer) + "-" + std::to_string(head); }

// A whole decimal integer of at most 9 digits, or -1.
long small_integer(const std::string& text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stol(text);
}

// The flat index of "L-H" on the grid; throws naming the file.
std::size_t parse_head(const std::string& name, const FileGrid& grid, const std::string& file) {
  const auto dash = name.find('-');
  const long layer = dash == std::string::npos ? -1 : small_integer(name.substr(0, dash));
  const long head = dash == std::string::npos ? -1 : small_integer(name.substr(dash + 1));
  if (layer < 0 || head < 0) throw InputError(file + ": head '" + name + "' is not \"layer-head\" (e.g. \"3-7\")");
  if (layer >= grid.layers || head >= grid.heads) {
    throw InputError(file + ": unknown head '" + name + "' (the run has layers 0.." + std::to_string(grid.layers - 1) +
                     " and heads 0.." + std::to_string(grid.heads - 1) + ")");
  }
  return static_cast<std::size_t>(layer) * grid.heads + head;
}

// Every gate of a layer, tab-separated as numpy.loadtxt(delimiter='\t') reads them.
ImportedHeadSet read_duo(const fs::path& path, const FileGrid& grid) {
  const std::string file = path.string();
  const std::string text = read_file_bytes(path, kMaxHeadSetBytes, "DuoAttention gate file");
  const std::string expected = "expected " + std::to_string(grid.layers) + " rows (layers) of " +
                               std::to_string(grid.kv_heads) + " tab-separated gates in [0, 1] (KV heads)";
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
    start = end == std::string::npos ? text.size() : end + 1;
  }
  if (lines.size() != static_cast<std::size_t>(grid.layers)) {
    throw InputError(file + ": " + std::to_string(lines.size()) + " rows; " + expected);
  }
  ImportedHeadSet out{path, HeadSetFormat::kDuo, std::vector<double>(grid.layers * grid.heads), {}};
  const int group = grid.heads / grid.kv_heads;
  for (int l = 0; l < grid.layers; ++l) {
    std::vector<std::string> cells;
    std::size_t from = 0;
    for (std::size_t tab; (tab = lines[l].find('\t', from)) != std::string::npos; from = tab + 1) {
      cells.push_back(lines[l].substr(from, tab - from));
    }
    cells.push_back(lines[l].substr(from));
    const std::string where = file + ":" + std::to_string(l + 1) + ": ";
    if (cells.size() != static_cast<std::size_t>(grid.kv_heads)) {
      throw InputError(where + std::to_string(cells.size()) + " gates; " + expected);
    }
    for (int k = 0; k < grid.kv_heads; ++k) {
      const std::string& cell = cells[k];
      char* end = nullptr;
      errno = 0;
      const double gate = cell.empty() ? NAN : std::strtod(cell.c_str(), &end);
      if (cell.empty() || end != cell.c_str() + cell.size() || !std::isfinite(gate) || gate < 0.0 || gate > 1.0) {
        throw InputError(where + "gate '" + cell + "' of KV head " + std::to_string(k) + " is not a number in [0, 1]");
      }
      // A KV head's gate applies to every query head of its group.
      for (int j = 0; j < group; ++j) out.score[static_cast<std::size_t>(l) * grid.heads + k * group + j] = gate;
    }
  }
  return out;
}

ImportedHeadSet read_retrieval_json(const fs::path& path, const FileGrid& grid) {
  const std::string file = path.string();
  const std::string text = read_file_bytes(path, kMaxHeadSetBytes, "Retrieval-Head score file");
  nlohmann::json j;
  std::set<std::string> keys;
  try {
    // Duplicate keys, which nlohmann would silently collapse, are refused as they are parsed.
    j = nlohmann::json::parse(text, [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      if (event == nlohmann::json::parse_event_t::key && depth == 1 && !keys.insert(parsed.get<std::string>()).second) {
        throw InputError(file + ": head '" + parsed.get<std::string>() + "' appears twice");
      }
      if (depth > kMaxJsonDepth) throw InputError(file + ": nested deeper than " + std::to_string(kMaxJsonDepth));
      return true;
    });
  } catch (const nlohmann::json::exception& e) {
    throw InputError(file + ": invalid JSON: " + e.what());
  }
  const std::string expected = "expected an object {\"layer-head\": [scores...]} (Retrieval-Head format)";
  if (!j.is_object() || j.empty()) throw InputError(file + ": " + expected);
  ImportedHeadSet out{path, HeadSetFormat::kRetrievalJson, std::vector<double>(grid.layers * grid.heads, 0.0), {}};
  std::vector<bool> seen(out.score.size(), false);
  for (const auto& [name, values] : j.items()) {
    const std::size_t i = parse_head(name, grid, file);
    if (seen[i]) throw InputError(file + ": head '" + name + "' appears twice");
    seen[i] = true;
    if (!values.is_array() || values.empty()) throw InputError(file + ": head '" + name + "': " + expected);
    double sum = 0;
    for (const auto& v : values) {
      if (!v.is_number() || !std::isfinite(v.get<double>())) {
        throw InputError(file + ": head '" + name + "': score " + v.dump() + " is not a finite number");
      }
      sum += v.get<double>();
    }
    out.score[i] = sum / static_cast<double>(values.size());  // the consumers' np.mean
  }
  return out;
}

// A strict reader of QRHead's one shape: `attn_head_set:` then a block list (`- "L-H"`) or a
// flow list (`["L-H", ...]`), quotes optional, `#` comments and blank lines allowed.
ImportedHeadSet read_qrhead_yaml(const fs::path& path, const FileGrid& grid) {
  const std::string file = path.string();
  const std::string text = read_file_bytes(path, kMaxHeadSetBytes, "QRHead head-set file");
  const std::string expected = "expected `attn_head_set:` and a list of \"layer-head\" strings (QRHead format)";
  auto trim = [](std::string s) {
    const auto a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  auto unquote = [&](std::string s, std::size_t line) {
    s = trim(s);
    if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
      s = s.substr(1, s.size() - 2);
    if (s.empty()) throw InputError(file + ":" + std::to_string(line) + ": empty list item; " + expected);
    return s;
  };
  std::vector<std::pair<std::string, std::size_t>> items;  // (name, line)
  bool key_seen = false, flow = false;
  std::size_t line_no = 0, start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    ++line_no;
    if (line.find('#') != std::string::npos && line.find_first_of("\"'") == std::string::npos)
      line.resize(line.find('#'));
    line = trim(line);
    if (line.empty()) continue;
    const std::string where = file + ":" + std::to_string(line_no) + ": ";
    if (!key_seen) {
      if (line.rfind("attn_head_set:", 0) != 0) throw InputError(where + "'" + line + "': " + expected);
      key_seen = true;
      const std::string rest = trim(line.substr(14));
      if (rest.empty()) continue;
      if (rest.front() != '[' || rest.back() != ']') throw InputError(where + "'" + rest + "': " + expected);
      flow = true;
      const std::string inner = trim(rest.substr(1, rest.size() - 2));
      std::size_t from = 0;
      while (!inner.empty() && from <= inner.size()) {
        const std::size_t comma = inner.find(',', from);
        items.emplace_back(
            unquote(inner.substr(from, comma == std::string::npos ? std::string::npos : comma - from), line_no),
            line_no);
        if (comma == std::string::npos) break;
        from = comma + 1;
      }
      continue;
    }
    if (flow || line.rfind("- ", 0) != 0) throw InputError(where + "'" + line + "': " + expected);
    items.emplace_back(unquote(line.substr(2), line_no), line_no);
  }
  if (!key_seen) throw InputError(file + ": no `attn_head_set:`; " + expected);
  ImportedHeadSet out{path, HeadSetFormat::kQrheadYaml, std::vector<double>(grid.layers * grid.heads, 0.0), {}};
  for (const auto& [name, line] : items) {
    const std::size_t i = parse_head(name, grid, file + ":" + std::to_string(line));
    if (out.score[i] != 0.0)
      throw InputError(file + ":" + std::to_string(line) + ": head '" + name + "' appears twice");
    out.score[i] = 1.0;
  }
  return out;
}

}  // namespace

const char* format_name(HeadSetFormat format) {
  switch (format) {
    case HeadSetFormat::kDuo:
      return "duo";
    case HeadSetFormat::kRetrievalJson:
      return "retrieval-json";
    case HeadSetFormat::kQrheadYaml:
      return "qrhead-yaml";
  }
  return "";
}

HeadSetFormat parse_format(const std::string& name) {
  for (const HeadSetFormat f : {HeadSetFormat::kDuo, HeadSetFormat::kRetrievalJson, HeadSetFormat::kQrheadYaml}) {
    if (name == format_name(f)) return f;
  }
  throw SettingError({"unknown ", setting("format"), " '" + name + "' (expected duo, retrieval-json or qrhead-yaml)"});
}

ImportedHeadSet read_head_set(const std::string& spec, const FileGrid& grid) {
  fs::path path = spec;
  HeadSetFormat format;
  const auto colon = spec.find(':');
  const std::string prefix = colon == std::string::npos ? "" : spec.substr(0, colon);
  if (prefix == "duo" || prefix == "retrieval-json" || prefix == "qrhead-yaml") {
    format = parse_format(prefix);
    path = spec.substr(colon + 1);
  } else {
    const std::string ext = path.extension().string();
    if (ext == ".tsv") {
      format = HeadSetFormat::kDuo;
    } else if (ext == ".json") {
      format = HeadSetFormat::kRetrievalJson;
    } else if (ext == ".yaml" || ext == ".yml") {
      format = HeadSetFormat::kQrheadYaml;
    } else {
      throw InputError(
          spec +
          ": unknown head-set format (name it .tsv, .json or .yaml, or prefix duo:, retrieval-json: or qrhead-yaml:)");
    }
  }
  ImportedHeadSet out = format == HeadSetFormat::kDuo             ? read_duo(path, grid)
                        : format == HeadSetFormat::kRetrievalJson ? read_retrieval_json(path, grid)
                                                                  : read_qrhead_yaml(path, grid);
  // The file's own set: listed heads, or heads whose gate / mean score reaches 0.5.
  out.member.resize(out.score.size());
  for (std::size_t i = 0; i < out.score.size(); ++i) out.member[i] = out.score[i] >= 0.5;
  return out;
}

void write_duo_tsv(const fs::path& path, const FileGrid& grid, const std::vector<double>& per_head) {
  const int group = grid.heads / grid.kv_heads;
  std::string text;
  for (int l = 0; l < grid.layers; ++l) {
    for (int k = 0; k < grid.kv_heads; ++k) {
      // A KV head's gate: the largest score among its group's query heads (docs/method.md section 6).
      double gate = 0.0;
      for (int j = 0; j < group; ++j)
        gate = std::max(gate, per_head[static_cast<std::size_t>(l) * grid.heads + k * group + j]);
      if (k) text += '\t';
      text += format_real(gate, CsvReals::kRoundTrip);
    }
    text += "\n";
  }
  write_text(path, text);
}

void write_retrieval_json(const fs::path& path, const FileGrid& grid,
                          const std::vector<std::vector<double>>& per_head_lists) {
  nlohmann::json j = nlohmann::json::object();
  for (int l = 0; l < grid.layers; ++l) {
    for (int h = 0; h < grid.heads; ++h)
      j[head_name(l, h)] = per_head_lists[static_cast<std::size_t>(l) * grid.heads + h];
  }
  write_text(path, j.dump() + "\n");
}

void write_qrhead_yaml(const fs::path& path, const FileGrid& grid, const std::vector<bool>& member) {
  std::string items;
  for (int l = 0; l < grid.layers; ++l) {
    for (int h = 0; h < grid.heads; ++h) {
      if (member[static_cast<std::size_t>(l) * grid.heads + h]) items += "- \"" + head_name(l, h) + "\"\n";
    }
  }
  // An empty block list would read as YAML null, not as an empty list.
  write_text(path, items.empty() ? "attn_head_set: []\n" : "attn_head_set:\n" + items);
}

}  // namespace attngeom::interop
