#include "core/io_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>

namespace dataflux::internal {

void IoBufferDeleter::operator()(char* p) const noexcept {
  if (p == nullptr) return;
  if (mapped > 0) {
    munmap(p, mapped);
  } else {
    delete[] p;
  }
}

IoBuffer allocate_io_buffer(std::uint64_t size) {
  if (size >= kHugePageBufferBytes && size <= SIZE_MAX) {
    const auto n = static_cast<std::size_t>(size);
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return IoBuffer(nullptr, IoBufferDeleter{});
    (void)madvise(p, n, MADV_HUGEPAGE);  // advice only: without THP it is plain memory
    return IoBuffer(static_cast<char*>(p), IoBufferDeleter{n});
  }
  const std::size_t n = size == 0 ? 1 : static_cast<std::size_t>(size);
  return IoBuffer(new (std::nothrow) char[n], IoBufferDeleter{});
}

void advise_huge_pages(void* data, std::size_t size) {
  constexpr std::uintptr_t kHuge = 2u << 20;
  if (size < kHugePageBufferBytes) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (begin + kHuge - 1) & ~(kHuge - 1);
  const std::uintptr_t last = (begin + size) & ~(kHuge - 1);
  if (last > first) (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

}  // namespace dataflux::internal
