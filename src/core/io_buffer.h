// Buffers that downloads land in. A large one is fresh anonymous memory advised to use
// transparent huge pages: filling hundreds of MiB of 4 KiB pages costs a page fault per page,
// and on virtual machines those faults cost more CPU than the network copy itself (measured
// here: 60% of a 1 GiB load). Small ones come from the ordinary heap, where freed blocks are
// reused without faulting.
//
//   IoBuffer buffer = allocate_io_buffer(object_size);   // nullptr data only if out of memory
//   store.read_object(request, buffer.get(), object_size);
#ifndef DATAFLUX_SRC_CORE_IO_BUFFER_H_
#define DATAFLUX_SRC_CORE_IO_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace dataflux::internal {

// From this size on, a buffer gets its own huge-page-advised mapping.
inline constexpr std::uint64_t kHugePageBufferBytes = 8ull << 20;

struct IoBufferDeleter {
  std::size_t mapped = 0;  // bytes mapped with mmap, or 0 for a heap block
  void operator()(char* p) const noexcept;
};
using IoBuffer = std::unique_ptr<char[], IoBufferDeleter>;

// At least one byte, so a 0-byte object still has a valid address. Null when memory is
// exhausted (the caller reports it; nothing throws).
IoBuffer allocate_io_buffer(std::uint64_t size);

// The same advice for memory someone else allocated (a large std::string's heap block): the
// 2 MiB-aligned part of [data, data + size) is asked to use huge pages. Small spans: no-op.
void advise_huge_pages(void* data, std::size_t size);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_CORE_IO_BUFFER_H_
