// analyze's progress: a line per finished sequence, and within a sequence that takes long one
// per layer analysed, at most once per interval; the Python callable hears of sequences only.
#include "analysis/progress.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

namespace attngeom {
namespace {

TEST(Progress, LayersAreShownOnlyOncePerInterval) {
  std::vector<ProgressUpdate> shown;
  const auto sink = [&](const ProgressUpdate& u) { shown.push_back(u); };
  Progress hourly(3, 100, sink, std::chrono::hours(1));
  hourly.layer_done(0, 1, 4);  // within the hour since the start: not shown
  hourly.sequence_done(1);
  hourly.layer_done(1, 2, 4);
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0].done, 1u);
  EXPECT_EQ(shown[0].layers, 0);

  shown.clear();
  Progress always(3, 100, sink, Progress::Clock::duration::zero());
  always.layer_done(0, 1, 4);
  always.layer_done(0, 4, 4);  // the last layer: the sequence's own line follows
  always.sequence_done(1);
  always.layer_done(1, 3, 4);
  ASSERT_EQ(shown.size(), 3u);
  EXPECT_EQ(shown[0].layers_done, 1);
  EXPECT_EQ(shown[0].layers, 4);
  EXPECT_EQ(shown[0].done, 0u);
  EXPECT_EQ(shown[1].layers, 0);
  EXPECT_EQ(shown[2].layers_done, 3);
  EXPECT_EQ(shown[2].done, 1u);
  for (const ProgressUpdate& u : shown) EXPECT_TRUE(std::isfinite(u.eta_s) && u.eta_s >= 0.0) << u.eta_s;
}

TEST(Progress, TextOfALayerUpdate) {
  ProgressUpdate u;
  u.done = 2, u.total = 8, u.layers_done = 12, u.layers = 32, u.eta_s = 90.4;
  EXPECT_EQ(progress_text(u, false), "attngeom: sequence 2/8 done, 12/32 layers of the next, ETA 90 s\n");
  EXPECT_EQ(progress_text(u, true), "\r2/8 sequences, layer 12/32 of the next  ETA 90 s   ");
  u.layers = 0;
  EXPECT_EQ(progress_text(u, false).rfind("attngeom: sequence 2/8 done, 0 tok/s", 0), 0u);
}

}  // namespace
}  // namespace attngeom
