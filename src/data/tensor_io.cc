#include "dataflux/tensor_io.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <new>

#include "absl/strings/str_cat.h"
#include "core/io_buffer.h"
#include "data/byte_tensor.h"

namespace dataflux {
namespace internal {

at::Tensor byte_tensor(std::uint64_t size) {
  if (size < kHugePageBufferBytes) return at::empty({static_cast<std::int64_t>(size)}, at::kByte);
  IoBuffer buffer = allocate_io_buffer(size);
  if (!buffer) throw std::bad_alloc();
  const IoBufferDeleter release = buffer.get_deleter();
  char* data = buffer.get();
  at::Tensor tensor = at::from_blob(
      data, {static_cast<std::int64_t>(size)},
      [release](void* p) { release(static_cast<char*>(p)); }, at::kByte);
  (void)buffer.release();  // the tensor's storage owns it now
  return tensor;
}

}  // namespace internal

at::Tensor read_object_tensor(ObjectStore& store, const std::string& bucket,
                              const std::string& object) {
  ObjectMetadata meta = value_or_throw(store.get_object_metadata(bucket, object));
  at::Tensor tensor = internal::byte_tensor(meta.size);
  ReadObjectRequest request;
  request.bucket = bucket;
  request.object = object;
  request.generation =
      meta.generation != 0 ? std::optional<std::int64_t>(meta.generation) : std::nullopt;
  request.expected_crc32c = meta.crc32c;
  ReadObjectResult result = value_or_throw(store.read_object(
      request, static_cast<char*>(tensor.data_ptr()), static_cast<std::size_t>(meta.size)));
  if (result.bytes != meta.size) {
    throw Error(absl::DataLossError(absl::StrCat("read ", bucket, "/", object, ": got ",
                                                 result.bytes, " of ", meta.size, " bytes")));
  }
  return tensor;
}

ObjectMetadata write_object_tensor(ObjectStore& store, const std::string& bucket,
                                   const std::string& object, const at::Tensor& tensor) {
  if (!tensor.device().is_cpu() || !tensor.is_contiguous()) {
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("write ", bucket, "/", object,
                     ": the tensor must be a contiguous CPU tensor (call .contiguous().cpu())")));
  }
  WriteObjectRequest request;
  request.bucket = bucket;
  request.object = object;
  std::string_view bytes(static_cast<const char*>(tensor.data_ptr()), tensor.nbytes());
  return value_or_throw(store.write_object(request, bytes));
}

}  // namespace dataflux
