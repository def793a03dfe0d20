// util/float_copies.h: a copy holds the values; a released buffer serves the next copy that
// fits it (the tightest of those kept; else the largest grows), up to the byte budget; no
// more buffers than copies held at once; a copy may outlive its pool.
#include "util/float_copies.h"

#include <gtest/gtest.h>

#include <numeric>
#include <thread>
#include <vector>

namespace attngeom {
namespace {

std::vector<float> ramp(std::size_t count, float start) {
  std::vector<float> v(count);
  std::iota(v.begin(), v.end(), start);
  return v;
}

TEST(FloatCopies, ACopyHoldsTheValues) {
  const auto pool = FloatCopies::make(1 << 20);
  const std::vector<float> values = ramp(1000, 0.5f);
  const auto copy = pool->copy(values.data(), values.size());
  EXPECT_EQ(*copy, values);
  const auto empty = pool->copy(values.data(), 0);
  EXPECT_TRUE(empty->empty());
}

TEST(FloatCopies, AReleasedBufferServesTheNextCopyThatFits) {
  const auto pool = FloatCopies::make(1 << 20);
  const std::vector<float> large = ramp(4000, 1.0f), small = ramp(1000, 7.0f);
  auto first = pool->copy(large.data(), large.size());
  const float* storage = first->data();
  first.reset();
  EXPECT_EQ(pool->kept_buffers(), 1u);
  const auto second = pool->copy(small.data(), small.size());
  EXPECT_EQ(second->data(), storage);  // the same pages, now holding the smaller copy
  EXPECT_EQ(*second, small);
  EXPECT_EQ(pool->kept_buffers(), 0u);
  const auto third = pool->copy(large.data(), large.size());  // none kept: a new buffer
  EXPECT_NE(third->data(), storage);
  EXPECT_EQ(*third, large);
}

TEST(FloatCopies, WhereNoneFitsTheLargestKeptGrows) {
  const auto pool = FloatCopies::make(1 << 20);
  const std::vector<float> values = ramp(3000, 2.0f);
  auto a = pool->copy(values.data(), 100);
  auto b = pool->copy(values.data(), 200);
  a.reset();
  b.reset();
  EXPECT_EQ(pool->kept_buffers(), 2u);
  const auto grown = pool->copy(values.data(), 3000);
  EXPECT_EQ(*grown, values);
  EXPECT_EQ(pool->kept_buffers(), 1u);  // the 200-float buffer was taken
}

TEST(FloatCopies, TheTightestKeptBufferIsTaken) {
  const auto pool = FloatCopies::make(1 << 20);
  const std::vector<float> values = ramp(5000, 0.0f);
  auto big = pool->copy(values.data(), 5000);
  auto medium = pool->copy(values.data(), 2000);
  auto tiny = pool->copy(values.data(), 100);
  const float* medium_storage = medium->data();
  big.reset();
  medium.reset();
  tiny.reset();
  EXPECT_EQ(pool->kept_buffers(), 3u);
  const auto next = pool->copy(values.data(), 1500);
  EXPECT_EQ(next->data(), medium_storage);
}

TEST(FloatCopies, BuffersBeyondTheBudgetAreFreed) {
  const auto pool = FloatCopies::make(3000 * sizeof(float));
  const std::vector<float> values = ramp(2000, 0.0f);
  auto a = pool->copy(values.data(), 2000);
  auto b = pool->copy(values.data(), 2000);
  a.reset();
  b.reset();  // 4000 floats would exceed 3000: freed
  EXPECT_EQ(pool->kept_buffers(), 1u);
}

TEST(FloatCopies, ACopyMayOutliveItsPool) {
  auto pool = FloatCopies::make(1 << 20);
  const std::vector<float> values = ramp(100, 3.0f);
  auto copy = pool->copy(values.data(), values.size());
  pool.reset();
  EXPECT_EQ(*copy, values);
  copy.reset();  // freed, not kept (ASan: no leak, no use after free)
}

TEST(FloatCopies, CopiesAndReleasesFromManyThreads) {
  const auto pool = FloatCopies::make(1 << 22);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      for (int i = 0; i < 200; ++i) {
        const std::vector<float> values = ramp(static_cast<std::size_t>(100 + (i * 37 + t) % 900), float(t));
        const auto copy = pool->copy(values.data(), values.size());
        ASSERT_EQ(*copy, values);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_LE(pool->kept_buffers(), 4u);  // at most one buffer per thread was ever in use
}

}  // namespace
}  // namespace attngeom
