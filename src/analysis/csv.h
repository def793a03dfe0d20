#pragma once
// A CSV table built in memory and written atomically. Numbers use %.17g (exact round
// trip of a double); NaN and
// infinities are written as nan / inf / -inf (numpy and pandas read them).
#include <filesystem>
#include <string>
#include <vector>

namespace attngeom {

class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> columns);
  CsvTable& add(double value);
  CsvTable& add(std::size_t value);
  CsvTable& add(int value);
  CsvTable& add(const std::string& value);  // must not contain a comma or newline
  void end_row();  // ATTNGEOM_CHECKs that the row has one cell per column
  void write(const std::filesystem::path& path) const;

 private:
  void cell(const std::string& text);
  std::size_t columns_ = 0;
  std::size_t cells_in_row_ = 0;
  std::string text_;
};

}  // namespace attngeom
