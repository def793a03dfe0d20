// Unit tests of the report library: CSV reading, reductions over heads, HTML assembly.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>

#include "report/html.h"
#include "report/report_data.h"
#include "util/csv.h"
#include "util/error.h"

namespace attngeom::report {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("attngeom-report-test-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return path_ / name;
  }

 private:
  fs::path path_;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(CsvTable, ReadsNumbersNanAndText) {
  TempDir dir;
  const auto path = dir.write("t.csv", "a,b,label\r\n1,nan,x\n-2.5e-3,inf,y\n\n");
  const CsvTable t = CsvTable::read(path);
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.header().size(), 3u);
  EXPECT_DOUBLE_EQ(t.number(0, t.column("a")), 1.0);
  EXPECT_TRUE(std::isnan(t.number(0, t.column("b"))));
  EXPECT_DOUBLE_EQ(t.number(1, 0), -2.5e-3);
  EXPECT_TRUE(std::isinf(t.number(1, 1)));
  EXPECT_EQ(t.text(1, 2), "y");
  EXPECT_EQ(t.integer(0, 0), 1);
  EXPECT_TRUE(t.is_numeric(0));
  EXPECT_FALSE(t.is_numeric(2));
}

TEST(CsvTable, ErrorsNameFileLineAndColumn) {
  TempDir dir;
  const auto ragged = dir.write("ragged.csv", "a,b\n1,2\n3\n");
  EXPECT_NE(error_of([&] { CsvTable::read(ragged); }).find("ragged.csv:3: expected 2 fields, found 1"),
            std::string::npos);
  const auto bad = dir.write("bad.csv", "a,b\n1,2\n3,x4\n");
  const CsvTable t = CsvTable::read(bad);
  EXPECT_NE(error_of([&] { t.number(1, 1); }).find("bad.csv:3: column 'b': expected a number, found 'x4'"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { (void)t.integer(0, 0); }), "");
  EXPECT_NE(error_of([&] { t.column("zzz"); }).find("bad.csv: missing column 'zzz'"), std::string::npos);
  EXPECT_NE(error_of([&] {
              t.require_columns({"a", "c", "d"});
            }).find("missing column(s) 'c', 'd'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CsvTable::read(dir.write("empty.csv", "")); }).find("empty file"), std::string::npos);
  // A blank line inside would shift every later line number; a repeated column would hide one.
  EXPECT_NE(error_of([&] { CsvTable::read(dir.write("gap.csv", "a\n1\n\n2\n")); }).find("gap.csv:3: blank line"),
            std::string::npos);
  EXPECT_NE(error_of([&] { CsvTable::read(dir.write("twice.csv", "a,b,a\n1,2,3\n")); }).find("'a' appears twice"),
            std::string::npos);
  EXPECT_EQ(CsvTable::read(dir.write("bom.csv",
                                     "\xef\xbb\xbf"
                                     "a,b\n1,2\n"))
                .column("a"),
            0u);  // spreadsheet BOM
  EXPECT_NE(error_of([&] { CsvTable::read(fs::path("/nonexistent/x.csv")); }).find("/nonexistent/x.csv: missing"),
            std::string::npos);
}

// `attngeom synth` opens each CSV with a '#' provenance line; line numbers stay the file's.
TEST(CsvTable, CommentLinesBeforeTheHeaderAreSkippedAndCounted) {
  TempDir dir;
  const CsvTable t =
      CsvTable::read(dir.write("s.csv", "# attngeom synth --seed 1, --d 16\n#\nprofile,n\nuniform,2\nx,y\n"));
  EXPECT_EQ(t.header(), (std::vector<std::string>{"profile", "n"}));
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.line_of(0), 4u);
  EXPECT_NE(error_of([&] { (void)t.integer(1, 1); }).find("s.csv:5: column 'n'"), std::string::npos);
  EXPECT_NE(
      error_of([&] { CsvTable::read(dir.write("h.csv", "# c\na,a\n")); }).find("h.csv:2: column 'a' appears twice"),
      std::string::npos);
  // After the header, '#' is data like any other text.
  EXPECT_NE(error_of([&] { CsvTable::read(dir.write("late.csv", "a,b\n# c\n")); }).find("late.csv:2: expected 2"),
            std::string::npos);
}

TEST(CsvTable, IntegerRejectsFractions) {
  TempDir dir;
  const CsvTable t = CsvTable::read(dir.write("i.csv", "n\n3.0\n3.5\nnan\n"));
  EXPECT_EQ(t.integer(0, 0), 3);
  EXPECT_NE(error_of([&] { (void)t.integer(1, 0); }).find("expected an integer"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)t.integer(2, 0); }).find("expected an integer"), std::string::npos);
}

TEST(Stats, QuantileMatchesNumpyLinearAndSkipsNan) {
  const std::vector<double> v = {4, 1, NAN, 3, 2};
  EXPECT_DOUBLE_EQ(*finite_quantile(v, 0.25), 1.75);  // numpy.quantile([1,2,3,4], .25)
  EXPECT_DOUBLE_EQ(*finite_quantile(v, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(*finite_quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(*finite_quantile(v, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(*finite_mean(v), 2.5);
  EXPECT_FALSE(finite_quantile({NAN, INFINITY}, 0.5).has_value());
  EXPECT_FALSE(finite_mean({}).has_value());
  EXPECT_DOUBLE_EQ(*finite_quantile({7}, 0.75), 7.0);
}

TEST(SelectionSummary, ReducesOverHeadsPerNAndMetric) {
  TempDir dir;
  // Two heads at N = 2; the second head's precision is undefined there.
  RunData run;
  run.label = "r";
  run.selection = CsvTable::read(
      dir.write("selection.csv",
                "layer,head,n,precision_mean,recall_mean,f_mean,margin_mean,separated,r1_precision_lo,r1_precision_hi,"
                "r1_recall_lo,r1_recall_hi,r1_f_lo,r1_f_hi,r1_inside\n"
                "0,0,2,0.5,0.2,0.3,0,0,0.1,0.9,0.0,0.4,0.2,0.6,1.0\n"
                "0,1,2,nan,0.6,0.7,0,0,0.3,1.0,0.2,0.8,0.4,1.0,0.5\n"));
  const auto summary = selection_summary(run);
  ASSERT_EQ(summary["rows"].size(), 3u);  // Precision, Recall, F at N = 2
  const auto& cols = summary["columns"];
  ASSERT_EQ(cols[2], "metric");
  for (const auto& row : summary["rows"]) {
    EXPECT_EQ(row[0], "r");
    EXPECT_EQ(row[1], 2);
    EXPECT_EQ(row[9], row[2] == "Precision" ? 1 : 2);  // heads whose mean is defined
    EXPECT_DOUBLE_EQ(row[8].get<double>(), 0.75);      // mean r1_inside
    if (row[2] == "Precision") {
      EXPECT_DOUBLE_EQ(row[3].get<double>(), 0.5);  // NaN skipped
      EXPECT_DOUBLE_EQ(row[6].get<double>(), 0.2);
      EXPECT_DOUBLE_EQ(row[7].get<double>(), 0.95);
    } else if (row[2] == "Recall") {
      EXPECT_DOUBLE_EQ(row[3].get<double>(), 0.4);
      EXPECT_DOUBLE_EQ(row[4].get<double>(), 0.3);  // q25 of {0.2, 0.6}
      EXPECT_DOUBLE_EQ(row[5].get<double>(), 0.5);  // q75
    } else {
      EXPECT_EQ(row[2], "F");
      EXPECT_DOUBLE_EQ(row[3].get<double>(), 0.5);
    }
  }
}

TEST(SeparationSummary, AveragesEachSeriesOverTheHeadsThatDefineIt) {
  TempDir dir;
  // Two heads at N = 2 and N = 3; R2 says nothing for the second head at N = 3 (NaN).
  RunData run;
  run.label = "r";
  run.selection = CsvTable::read(dir.write("selection.csv",
                                           "layer,head,n,separated,r2_separation_prob,r3_certified\n"
                                           "0,0,2,1.0,0.5,0.75\n"
                                           "0,1,2,0.5,0.25,0.0\n"
                                           "0,0,3,0.25,0.125,0.25\n"
                                           "0,1,3,0.75,nan,0.5\n"));
  const auto summary = separation_summary(run);
  ASSERT_EQ(summary["columns"], nlohmann::json({"run", "n", "series", "value", "heads"}));
  ASSERT_EQ(summary["rows"].size(), 6u);                              // three series at each N
  std::map<std::pair<int, std::string>, std::pair<double, int>> got;  // (n, series) -> (value, heads)
  for (const auto& row : summary["rows"]) {
    EXPECT_EQ(row[0], "r");
    got[{row[1].get<int>(), row[2].get<std::string>()}] = {row[3].get<double>(), row[4].get<int>()};
  }
  const std::pair<double, int> want_measured_2{0.75, 2}, want_r2_2{0.375, 2}, want_r3_2{0.375, 2};
  const std::pair<double, int> want_measured_3{0.5, 2}, want_r2_3{0.125, 1}, want_r3_3{0.375, 2};
  EXPECT_EQ((got[{2, "separated"}]), want_measured_2);
  EXPECT_EQ((got[{2, "r2_separation_prob"}]), want_r2_2);
  EXPECT_EQ((got[{2, "r3_certified"}]), want_r3_2);
  EXPECT_EQ((got[{3, "separated"}]), want_measured_3);
  EXPECT_EQ((got[{3, "r2_separation_prob"}]), want_r2_3);  // the NaN head left out
  EXPECT_EQ((got[{3, "r3_certified"}]), want_r3_3);
}

TEST(Html, EscapesTextAndScriptData) {
  EXPECT_EQ(escape_html("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  const nlohmann::json data = {{"path", "</script><script>alert(1)</script><!--"}, {"n", 1}};
  const std::string text = script_safe_json(data);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(text), data);
}

TEST(Html, InlinesEverythingAndFillsEveryPlaceholder) {
  const nlohmann::json data = {{"title", "T <1>"}, {"generator", "attngeom test"}, {"runs", nlohmann::json::array()}};
  const std::string html = render_html(data);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("@@"), std::string::npos);
  EXPECT_NE(html.find("<title>T &lt;1&gt;</title>"), std::string::npos);
  EXPECT_NE(html.find("id=\"attngeom-data\""), std::string::npos);
  EXPECT_NE(html.find(".vegaLite={}"), std::string::npos);  // the libraries are in the file ...
  EXPECT_EQ(html.find("<script src"), std::string::npos);   // ... not referenced
  EXPECT_EQ(html.find("sourceMappingURL"), std::string::npos);
}

}  // namespace
}  // namespace attngeom::report
