// Download buffers: every size gets writable memory of its own, large ones a mapping of
// exactly their size, and the deleter gives back what was allocated (ASan checks the heap side).
#include "core/io_buffer.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace dataflux::internal {
namespace {

TEST(IoBuffer, SmallSizesComeFromTheHeapAndZeroStillHasAnAddress) {
  for (std::uint64_t size :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{4096}, kHugePageBufferBytes - 1}) {
    IoBuffer buffer = allocate_io_buffer(size);
    ASSERT_NE(buffer.get(), nullptr) << size;
    EXPECT_EQ(buffer.get_deleter().mapped, 0u) << size;
    std::memset(buffer.get(), 0x5a, size);
    if (size > 0) EXPECT_EQ(buffer[size - 1], 0x5a);
  }
}

TEST(IoBuffer, LargeSizesAreMappedWholeAndWritableEndToEnd) {
  const std::uint64_t size = kHugePageBufferBytes + 12345;  // not a page multiple
  IoBuffer buffer = allocate_io_buffer(size);
  ASSERT_NE(buffer.get(), nullptr);
  EXPECT_EQ(buffer.get_deleter().mapped, size);
  for (std::uint64_t i = 0; i < size; i += 4096) buffer[i] = static_cast<char>(i >> 12);
  buffer[size - 1] = 'z';
  EXPECT_EQ(buffer[4096 * 3], 3);
  EXPECT_EQ(buffer[size - 1], 'z');
  buffer.reset();  // munmap of the whole mapping
  EXPECT_EQ(buffer.get(), nullptr);
}

TEST(IoBuffer, AdviceOnForeignMemoryLeavesItsBytesAlone) {
  std::string big(kHugePageBufferBytes + 3 * 4096 + 7, 'q');
  advise_huge_pages(big.data() + 1, big.size() - 1);  // unaligned start and end
  advise_huge_pages(big.data(), 100);                 // too small: nothing to do
  EXPECT_EQ(big.find_first_not_of('q'), std::string::npos);
}

}  // namespace
}  // namespace dataflux::internal
