#include "util/csv.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "util/atomic_file.h"
#include "util/error.h"

namespace attngeom {

namespace {

std::vector<std::string> split_fields(std::string_view line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = line.find(',', start);
    fields.emplace_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

}  // namespace

std::string format_real(double value, CsvReals reals) {
  char buffer[32];
  if (reals == CsvReals::kTenDigits) {
    std::snprintf(buffer, sizeof buffer, "%.10g", value);
    return buffer;
  }
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::snprintf(buffer, sizeof buffer, "%.17g", value);
  return buffer;
}

CsvWriter::CsvWriter(const std::vector<std::string>& columns, CsvReals reals, const std::string& comment)
    : reals_(reals), columns_(columns.size()) {
  if (!comment.empty()) text_ += "# " + comment + '\n';
  for (std::size_t i = 0; i < columns.size(); ++i) text_ += (i ? "," : "") + columns[i];
  text_ += '\n';
}

void CsvWriter::cell(const std::string& text) {
  ATTNGEOM_CHECK(cells_in_row_ < columns_);
  ATTNGEOM_CHECK(text.find_first_of(",\n") == std::string::npos);
  if (cells_in_row_++ > 0) text_ += ',';
  text_ += text;
}

CsvWriter& CsvWriter::add(double value) {
  cell(format_real(value, reals_));
  return *this;
}

CsvWriter& CsvWriter::add(std::size_t value) {
  cell(std::to_string(value));
  return *this;
}

CsvWriter& CsvWriter::add(int value) {
  cell(std::to_string(value));
  return *this;
}

CsvWriter& CsvWriter::add(const std::string& value) {
  cell(value);
  return *this;
}

void CsvWriter::end_row() {
  ATTNGEOM_CHECK(cells_in_row_ == columns_);
  text_ += '\n';
  cells_in_row_ = 0;
}

void CsvWriter::write(const std::filesystem::path& path) const {
  ATTNGEOM_CHECK(cells_in_row_ == 0);
  AtomicFile file(path);
  file.write_at(0, text_.data(), text_.size());
  file.commit();
}

bool parse_number(std::string_view field, double& out) {
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  if (field.empty()) return false;
  const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), out);
  return ec == std::errc() && end == field.data() + field.size();
}

CsvTable CsvTable::read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": missing or unreadable");
  CsvTable table;
  table.path_ = path;
  std::string line;
  std::size_t line_no = 0, blank = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line_no == 1 && line.rfind("\xef\xbb\xbf", 0) == 0) line.erase(0, 3);  // a UTF-8 BOM (spreadsheets)
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {  // trailing blank lines are harmless; inside, they would shift every line number
      if (blank == 0) blank = line_no;
      continue;
    }
    if (blank != 0) throw InputError(path.string() + ":" + std::to_string(blank) + ": blank line inside the table");
    if (table.header_.empty() && line.front() == '#') continue;
    std::vector<std::string> fields = split_fields(line);
    if (table.header_.empty()) {
      const std::string at = path.string() + ":" + std::to_string(line_no);
      for (std::size_t i = 0; i < fields.size(); ++i) {
        if (fields[i].empty()) throw InputError(at + ": empty column name in header");
        for (std::size_t j = 0; j < i; ++j) {
          if (fields[j] == fields[i]) throw InputError(at + ": column '" + fields[i] + "' appears twice");
        }
      }
      table.header_ = std::move(fields);
      table.header_line_ = line_no;
      continue;
    }
    if (fields.size() != table.header_.size()) {
      throw InputError(path.string() + ":" + std::to_string(line_no) + ": expected " +
                       std::to_string(table.header_.size()) + " fields, found " + std::to_string(fields.size()));
    }
    for (auto& f : fields) table.cells_.push_back(std::move(f));
  }
  if (in.bad()) throw InputError(path.string() + ": read error");
  if (table.header_.empty()) throw InputError(path.string() + ": empty file (no header row)");
  return table;
}

bool CsvTable::has_column(std::string_view name) const {
  for (const auto& h : header_) {
    if (h == name) return true;
  }
  return false;
}

std::size_t CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header_.size(); ++i) {
    if (header_[i] == name) return i;
  }
  throw InputError(path_.string() + ": missing column '" + std::string(name) + "'");
}

void CsvTable::require_columns(const std::vector<std::string>& names) const {
  std::string missing;
  for (const auto& n : names) {
    if (!has_column(n)) missing += (missing.empty() ? "'" : ", '") + n + "'";
  }
  if (!missing.empty()) throw InputError(path_.string() + ": missing column(s) " + missing);
}

void CsvTable::fail_cell(std::size_t row, std::size_t col, const char* expected) const {
  throw InputError(path_.string() + ":" + std::to_string(line_of(row)) + ": column '" + header_[col] + "': expected " +
                   expected + ", found '" + text(row, col) + "'");
}

double CsvTable::number(std::size_t row, std::size_t col) const {
  double v = 0;
  if (!parse_number(text(row, col), v)) fail_cell(row, col, "a number");
  return v;
}

long CsvTable::integer(std::size_t row, std::size_t col) const {
  double v = 0;
  if (!parse_number(text(row, col), v) || !std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 1e15) {
    fail_cell(row, col, "an integer");
  }
  return static_cast<long>(v);
}

bool CsvTable::is_numeric(std::size_t col) const {
  double v = 0;
  for (std::size_t r = 0; r < rows(); ++r) {
    if (!parse_number(text(r, col), v)) return false;
  }
  return true;
}

}  // namespace attngeom
