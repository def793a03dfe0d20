#include "ops/backend.h"

#include <vector>

#include "util/error.h"

namespace attngeom {

Buffer::Buffer(MemorySpace space, std::int64_t rows, std::int64_t cols, float* memory, Release release)
    : space_(space), rows_(rows), cols_(cols), memory_(memory, release) {}

float* Buffer::data(MemorySpace space) {
  ATTNGEOM_CHECK(space == space_);
  return memory_.get();
}

const float* Buffer::data(MemorySpace space) const {
  ATTNGEOM_CHECK(space == space_);
  return memory_.get();
}

Buffer Buffer::leading_rows(std::int64_t rows) {
  ATTNGEOM_CHECK(rows >= 0 && rows <= rows_);
  return Buffer(space_, rows, cols_, memory_.get(), [](float*) {});  // the memory stays this buffer's
}

const TensorView& Weight::view(MemorySpace space) const {
  ATTNGEOM_CHECK(space == space_);
  return view_;
}

HostFloats Backend::host_floats(std::size_t count) {
  return {new float[count](), count, [](float* memory) { delete[] memory; }};
}

void check_distinct_rows(std::span<const int> rows, std::int64_t limit) {
  std::vector<bool> seen(static_cast<std::size_t>(limit), false);
  for (const int row : rows) {
    ATTNGEOM_CHECK(row >= 0 && row < limit && !seen[static_cast<std::size_t>(row)]);
    seen[static_cast<std::size_t>(row)] = true;
  }
}

LinearSource stored(Buffer& x) { return {LinearSource::Kind::kStored, &x, {}, nullptr, Activation::kSilu}; }

LinearSource normed(Buffer& x, const RmsNormSpec& norm) {
  return {LinearSource::Kind::kNormed, &x, norm, nullptr, Activation::kSilu};
}

LinearSource gated(Buffer& gate, const Buffer& up, Activation activation) {
  return {LinearSource::Kind::kGated, &gate, {}, &up, activation};
}

LinearSource activated(Buffer& x, Activation activation) {
  return {LinearSource::Kind::kActivated, &x, {}, nullptr, activation};
}

}  // namespace attngeom
