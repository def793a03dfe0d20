#include "capture/query_rows.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace attngeom {
namespace {

TEST(QueryRows, ResolvesLastAllAndLists) {
  EXPECT_EQ(resolve_query_rows(parse_query_selection("last"), 5), (std::vector<int>{4}));
  EXPECT_EQ(resolve_query_rows(parse_query_selection("all"), 3), (std::vector<int>{0, 1, 2}));
  const QuerySelection list = parse_query_selection("7,2,0");
  EXPECT_EQ(resolve_query_rows(list, 8), (std::vector<int>{0, 2, 7}));
  EXPECT_EQ(list.text, "0,2,7");  // recorded ascending: "7,2,0" and "0,2,7" resume each other
  EXPECT_EQ(resolve_query_rows(parse_query_selection("stride:3"), 8), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(resolve_query_rows(parse_query_selection("stride:100"), 8), (std::vector<int>{7}));
}

TEST(QueryRows, RejectsMalformedAndOutOfRange) {
  EXPECT_THROW(parse_query_selection("5,x"), InputError);
  EXPECT_THROW(parse_query_selection("-1"), InputError);
  EXPECT_THROW(parse_query_selection(""), InputError);
  EXPECT_THROW(parse_query_selection("1,,2"), InputError);
  EXPECT_THROW(parse_query_selection("1,2,"), InputError);
  EXPECT_THROW(parse_query_selection("+3"), InputError);
  EXPECT_THROW(parse_query_selection(" 3"), InputError);
  EXPECT_THROW(parse_query_selection("3,1,3"), InputError);  // listed twice
  EXPECT_THROW(parse_query_selection("0"), InputError);      // one key: nothing defined
  EXPECT_THROW(parse_query_selection("stride:0"), InputError);
  EXPECT_THROW(parse_query_selection("stride:x"), InputError);
  EXPECT_THROW(resolve_query_rows(parse_query_selection("3,9"), 9), InputError);
}

}  // namespace
}  // namespace attngeom
