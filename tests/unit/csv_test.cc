// util/csv: the writer's two real-number formats, read back by the reader.
#include "util/csv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace attngeom {
namespace {

std::string text_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CsvWriter, RoundTripRealsReadBackExactly) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / "attngeom_csv_round_trip.csv";
  CsvWriter t({"name", "n", "x"});
  t.add(std::string("a")).add(std::size_t{3}).add(0.1).end_row();
  t.add(std::string("b")).add(-2).add(-std::nan("")).end_row();
  t.add(std::string("c")).add(0).add(-std::numeric_limits<double>::infinity()).end_row();
  t.write(path);
  EXPECT_EQ(text_of(path), "name,n,x\na,3,0.10000000000000001\nb,-2,nan\nc,0,-inf\n");
  const CsvTable read = CsvTable::read(path);
  EXPECT_EQ(read.number(0, 2), 0.1);
  EXPECT_TRUE(std::isnan(read.number(1, 2)));
  EXPECT_EQ(read.integer(1, 1), -2);
  EXPECT_EQ(read.number(2, 2), -std::numeric_limits<double>::infinity());
}

TEST(CsvWriter, TenDigitRealsUnderASettingsComment) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / "attngeom_csv_ten_digits.csv";
  CsvWriter t({"x", "y"}, CsvReals::kTenDigits, "attngeom synth --seed 1");
  t.add(0.1).add(1.0 / 3.0).end_row();
  t.write(path);
  EXPECT_EQ(text_of(path), "# attngeom synth --seed 1\nx,y\n0.1,0.3333333333\n");
  EXPECT_EQ(CsvTable::read(path).number(0, 1), 0.3333333333);
  EXPECT_EQ(format_real(1e-300, CsvReals::kTenDigits), "1e-300");
  EXPECT_EQ(format_real(2.0 / 3.0, CsvReals::kRoundTrip), "0.66666666666666663");
  EXPECT_EQ(format_real(2.0 / 3.0, CsvReals::kTenDigits), "0.6666666667");
}

}  // namespace
}  // namespace attngeom
