#pragma once
// The CSV files of a run directory, a synth sweep and prune (docs/run_format.md): one
// header row, comma-separated, no quoting, `nan` for undefined values. Lines starting with
// '#' before the header are comments (`attngeom synth` writes one).
//
// CsvWriter builds a table in memory and writes it atomically. CsvTable reads one whole and
// validates it as it is read: every row has the header's field count. Every error names the
// file and line.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attngeom {

// How a table writes its real numbers.
enum class CsvReals {
  kRoundTrip,  // %.17g: reads back as the same double; every NaN as `nan`, infinities as inf / -inf
  kTenDigits,  // %.10g as printf writes it (a NaN with its sign bit set as `-nan`): the synth tables
};

// One real number as a table of that format writes it.
std::string format_real(double value, CsvReals reals);

class CsvWriter {
 public:
  // comment: written as a "# " line above the header when not empty.
  explicit CsvWriter(const std::vector<std::string>& columns, CsvReals reals = CsvReals::kRoundTrip,
                     const std::string& comment = "");
  CsvWriter& add(double value);
  CsvWriter& add(std::size_t value);
  CsvWriter& add(int value);
  CsvWriter& add(const std::string& value);  // must not contain a comma or newline
  void end_row();                            // ATTNGEOM_CHECKs that the row has one cell per column
  void write(const std::filesystem::path& path) const;

 private:
  void cell(const std::string& text);
  CsvReals reals_;
  std::size_t columns_ = 0;
  std::size_t cells_in_row_ = 0;
  std::string text_;
};

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

}  // namespace attngeom
