#pragma once
// A run-directory CSV file (docs/run_format.md): one header row, comma-separated,
// no quoting, `nan` for undefined values. Read whole and validated as it is read:
// every row has the header's field count. Every error names the file and line. Lines
// starting with '#' before the header are comments (`attngeom synth` writes one).
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attngeom::report {

class CsvTable {
 public:
  // Throws InputError: missing or unreadable file, empty file, ragged rows.
  static CsvTable read(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<std::string>& header() const { return header_; }
  std::size_t rows() const { return cells_.size() / header_.size(); }

  bool has_column(std::string_view name) const;
  // Index of a column; throws InputError naming the file when it is absent.
  std::size_t column(std::string_view name) const;
  // Throws InputError unless every named column is present (names all missing ones).
  void require_columns(const std::vector<std::string>& names) const;

  // The file's line number of a data row (1-based), for messages.
  std::size_t line_of(std::size_t row) const { return header_line_ + 1 + row; }

  const std::string& text(std::size_t row, std::size_t col) const { return cells_[row * header_.size() + col]; }
  // The cell as a number (`nan`, `inf` accepted); throws InputError with file:line.
  double number(std::size_t row, std::size_t col) const;
  // The cell as an integer (e.g. `3` or `3.0`); throws InputError with file:line.
  long integer(std::size_t row, std::size_t col) const;
  // Whether every cell of the column parses as a number.
  bool is_numeric(std::size_t col) const;

 private:
  [[noreturn]] void fail_cell(std::size_t row, std::size_t col, const char* expected) const;

  std::filesystem::path path_;
  std::vector<std::string> header_;
  std::size_t header_line_ = 1;
  std::vector<std::string> cells_;  // [rows, columns], row-major
};

// A number from a CSV field; false if the field is not one (empty, text, trailing junk).
bool parse_number(std::string_view field, double& out);

}  // namespace attngeom::report
