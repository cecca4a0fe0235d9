// Tensor I/O: objects straight into tensors, the first piece of the libtorch-facing layer.
//
// read_object_tensor() sizes a uint8 tensor from the object's metadata and downloads into its
// storage, so the bytes are never copied; a transform can then view or decode them. Failures
// throw dataflux::Error with the store's status (NotFound, DataLoss for a CRC32C mismatch...).
//
//   auto store = dataflux::open_store("gs://my-bucket/").value();
//   at::Tensor bytes = dataflux::read_object_tensor(*store, "my-bucket", "train/0001.bin");
//   at::Tensor floats = bytes.view(at::kFloat);                         // no copy
//   dataflux::write_object_tensor(*store, "my-bucket", "out/0001.bin", floats);
#ifndef DATAFLUX_TENSOR_IO_H_
#define DATAFLUX_TENSOR_IO_H_

#include <ATen/core/Tensor.h>

#include <string>

#include "dataflux/error.h"
#include "dataflux/object_store.h"

namespace dataflux {

// The whole object as a 1-D uint8 tensor owning the downloaded buffer (CRC32C verified).
at::Tensor read_object_tensor(ObjectStore& store, const std::string& bucket,
                              const std::string& object);

// The raw bytes of a contiguous CPU tensor, written as one object. Returns its metadata.
ObjectMetadata write_object_tensor(ObjectStore& store, const std::string& bucket,
                                   const std::string& object, const at::Tensor& tensor);

}  // namespace dataflux

#endif  // DATAFLUX_TENSOR_IO_H_
