#include "capture/query_rows.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace attngeom {
namespace {

TEST(QueryRows, ResolvesLastAllAndLists) {
  EXPECT_EQ(resolve_query_rows(parse_query_selection("last", "--q"), 5, "--q"), (std::vector<int>{4}));
  EXPECT_EQ(resolve_query_rows(parse_query_selection("all", "--q"), 3, "--q"), (std::vector<int>{0, 1, 2}));
  const QuerySelection list = parse_query_selection("7,2,0", "--q");
  EXPECT_EQ(resolve_query_rows(list, 8, "--q"), (std::vector<int>{0, 2, 7}));
  EXPECT_EQ(list.text, "0,2,7");  // recorded ascending: "7,2,0" and "0,2,7" resume each other
  EXPECT_EQ(resolve_query_rows(parse_query_selection("stride:3", "--q"), 8, "--q"), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(resolve_query_rows(parse_query_selection("stride:100", "--q"), 8, "--q"), (std::vector<int>{7}));
}

TEST(QueryRows, RejectsMalformedAndOutOfRange) {
  EXPECT_THROW(parse_query_selection("5,x", "--q"), InputError);
  EXPECT_THROW(parse_query_selection("-1", "--q"), InputError);
  EXPECT_THROW(parse_query_selection("", "--q"), InputError);
  EXPECT_THROW(parse_query_selection("1,,2", "--q"), InputError);
  EXPECT_THROW(parse_query_selection("1,2,", "--q"), InputError);
  EXPECT_THROW(parse_query_selection("+3", "--q"), InputError);
  EXPECT_THROW(parse_query_selection(" 3", "--q"), InputError);
  EXPECT_THROW(parse_query_selection("3,1,3", "--q"), InputError);  // listed twice
  EXPECT_THROW(parse_query_selection("0", "--q"), InputError);      // one key: nothing defined
  EXPECT_THROW(parse_query_selection("stride:0", "--q"), InputError);
  EXPECT_THROW(parse_query_selection("stride:x", "--q"), InputError);
  EXPECT_THROW(resolve_query_rows(parse_query_selection("3,9", "--q"), 9, "--q"), InputError);
}

}  // namespace
}  // namespace attngeom
