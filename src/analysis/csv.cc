#include "analysis/csv.h"

#include <cmath>
#include <cstdio>

#include "util/atomic_file.h"
#include "util/error.h"

namespace attngeom {

CsvTable::CsvTable(std::vector<std::string> columns) : columns_(columns.size()) {
  for (std::size_t i = 0; i < columns.size(); ++i) text_ += (i ? "," : "") + columns[i];
  text_ += '\n';
}

void CsvTable::cell(const std::string& text) {
  ATTNGEOM_CHECK(cells_in_row_ < columns_);
  ATTNGEOM_CHECK(text.find_first_of(",\n") == std::string::npos);
  if (cells_in_row_++ > 0) text_ += ',';
  text_ += text;
}

CsvTable& CsvTable::add(double value) {
  if (std::isnan(value)) {
    cell("nan");
  } else if (std::isinf(value)) {
    cell(value > 0 ? "inf" : "-inf");
  } else {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    cell(buffer);
  }
  return *this;
}

CsvTable& CsvTable::add(std::size_t value) {
  cell(std::to_string(value));
  return *this;
}

CsvTable& CsvTable::add(int value) {
  cell(std::to_string(value));
  return *this;
}

CsvTable& CsvTable::add(const std::string& value) {
  cell(value);
  return *this;
}

void CsvTable::end_row() {
  ATTNGEOM_CHECK(cells_in_row_ == columns_);
  text_ += '\n';
  cells_in_row_ = 0;
}

void CsvTable::write(const std::filesystem::path& path) const {
  ATTNGEOM_CHECK(cells_in_row_ == 0);
  AtomicFile file(path);
  file.write_at(0, text_.data(), text_.size());
  file.commit();
}

}  // namespace attngeom
