// InstancePool: at most `limit` instances, made on first need and lent again; a borrower waits
// while all are lent; an instance that fails to be made leaves its turn to the next borrower.
#include "analysis/instance_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace attngeom {
namespace {

struct Counted {
  int id;
};

TEST(InstancePool, LendsAtMostTheLimitAndReusesThem) {
  int made = 0;
  InstancePool<Counted> pool([&made] { return std::make_unique<Counted>(Counted{made++}); }, 2);
  std::atomic<int> third{-1};  // the instance the third borrower got
  std::thread waiting;
  {
    const auto a = pool.borrow();
    {
      const auto b = pool.borrow();
      EXPECT_NE(a->id, b->id);
      waiting = std::thread([&] { third = pool.borrow()->id; });
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      EXPECT_EQ(third, -1) << "a third instance was lent beyond the limit of two";
    }  // b goes back: the third borrower gets it
    waiting.join();
    EXPECT_NE(third, a->id);
  }
  EXPECT_EQ(made, 2);
  EXPECT_EQ(pool.made(), 2);
}

TEST(InstancePool, AFailedMakeLeavesItsTurn) {
  int calls = 0;
  InstancePool<Counted> pool(
      [&calls] {
        if (calls++ == 0) throw std::runtime_error("no GPU memory");
        return std::make_unique<Counted>(Counted{calls});
      },
      1);
  EXPECT_THROW(pool.borrow(), std::runtime_error);
  const auto lease = pool.borrow();
  EXPECT_EQ(lease->id, 2);
  EXPECT_EQ(pool.made(), 1);
}

}  // namespace
}  // namespace attngeom
