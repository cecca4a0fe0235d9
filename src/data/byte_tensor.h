// The uint8 tensors that downloads land in. A large one (a checkpoint shard, a video, a
// 150 MiB sample) sits on huge-page-advised memory (core/io_buffer.h), so filling it costs
// a page fault per 2 MiB rather than per 4 KiB; small ones come from libtorch's allocator.
//
//   at::Tensor t = internal::byte_tensor(size);
//   store.read_object(request, static_cast<char*>(t.data_ptr()), size);
#ifndef DATAFLUX_SRC_DATA_BYTE_TENSOR_H_
#define DATAFLUX_SRC_DATA_BYTE_TENSOR_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace dataflux::internal {

// A contiguous 1-D uint8 CPU tensor of `size` elements; throws std::bad_alloc when out of memory.
at::Tensor byte_tensor(std::uint64_t size);

}  // namespace dataflux::internal

#endif  // DATAFLUX_SRC_DATA_BYTE_TENSOR_H_
