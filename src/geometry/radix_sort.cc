#include "geometry/radix_sort.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace attngeom::geometry {
namespace {

constexpr int kMaxDigitBits = 8;
constexpr std::size_t kMaxBuckets = std::size_t{1} << kMaxDigitBits;
// Buckets up to this size are left to one final insertion sort over the nearly sorted array.
constexpr std::size_t kInsertionSortUpTo = 16;

// Orders like the value: a negative double's bits count down as it grows, so they are
// flipped; a non-negative one gets the sign bit, which puts it above every negative one.
std::uint64_t bits(double x) {
  const std::uint64_t u = std::bit_cast<std::uint64_t>(x);
  return (u >> 63) != 0 ? ~u : u | (std::uint64_t{1} << 63);
}

void insertion_sort(double* first, double* last) {
  for (double* i = first + 1; i < last; ++i) {
    const double x = *i;
    double* j = i;
    for (; j > first && *(j - 1) > x; --j) *j = *(j - 1);
    *j = x;
  }
}

// Splits [values, values + n) into buckets by the highest differing bits, recursing into
// crowded buckets that reach position `first` or beyond, until those hold at most
// kInsertionSortUpTo keys. Returns where the bucket containing `first` starts: every key
// before it is no larger than any key after it, and from there on only keys within small
// buckets are out of order.
std::size_t partition(double* values, double* scratch, std::size_t n, std::size_t first) {
  if (n <= kInsertionSortUpTo) return 0;
  std::uint64_t differing = 0;
  const std::uint64_t reference = bits(values[0]);
  for (std::size_t i = 0; i < n; ++i) differing |= bits(values[i]) ^ reference;
  if (differing == 0) return first;  // all equal: already in order
  // The digit: the highest differing bits, about two keys per bucket, so that short ranges
  // (most recursive calls) do not pay for 256 empty buckets.
  const int top = 63 - std::countl_zero(differing);
  const int width = std::clamp(static_cast<int>(std::bit_width(n)) - 1, 1, kMaxDigitBits);
  const int shift = std::max(0, top - (width - 1));
  const std::size_t buckets = std::size_t{1} << width;
  const std::uint64_t mask = buckets - 1;
  const auto digit = [shift, mask](double x) { return static_cast<std::size_t>((bits(x) >> shift) & mask); };

  // Four interleaved histograms: a cluster sends consecutive keys to one bucket, and a single
  // counter would then serialise on store-to-load forwarding.
  std::array<std::array<std::uint32_t, kMaxBuckets>, 4> counts;
  for (auto& histogram : counts)
    std::fill(histogram.begin(), histogram.begin() + static_cast<std::ptrdiff_t>(buckets), 0u);
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++counts[0][digit(values[i])];
    ++counts[1][digit(values[i + 1])];
    ++counts[2][digit(values[i + 2])];
    ++counts[3][digit(values[i + 3])];
  }
  for (; i < n; ++i) ++counts[0][digit(values[i])];
  std::array<std::size_t, kMaxBuckets + 1> start;
  std::array<std::size_t, kMaxBuckets> next;
  start[0] = 0;
  for (std::size_t b = 0; b < buckets; ++b) {
    next[b] = start[b];
    start[b + 1] = start[b] + counts[0][b] + counts[1][b] + counts[2][b] + counts[3][b];
  }
  for (std::size_t j = 0; j < n; ++j) scratch[next[digit(values[j])]++] = values[j];
  std::copy(scratch, scratch + n, values);

  std::size_t boundary = first;
  for (std::size_t b = 0; b < buckets; ++b) {
    const std::size_t begin = start[b];
    const std::size_t end = start[b + 1];
    if (end <= first) continue;  // wholly below the part that must be sorted
    if (begin <= first) {
      boundary = begin + partition(values + begin, scratch + begin, end - begin, first - begin);
    } else if (end - begin > kInsertionSortUpTo) {
      partition(values + begin, scratch + begin, end - begin, 0);
    }
  }
  return boundary;
}

}  // namespace

void RadixSorter::sort_from(std::span<double> values, std::size_t first) {
  if (first >= values.size()) return;
  if (scratch_.size() < values.size()) scratch_.resize(values.size());
  const std::size_t boundary = partition(values.data(), scratch_.data(), values.size(), first);
  insertion_sort(values.data() + boundary, values.data() + values.size());
}

}  // namespace attngeom::geometry
