// The local filesystem backend: the embedded default, so every feature works with no server.
//
// A LocalStore serves objects under a root directory: object "a/b.bin" is the file
// root/a/b.bin, and the store's single bucket is named by the root itself. It keeps the same
// semantics as GCS: listing in byte order with prefix, delimiter and offsets, generations
// (a per-file counter stored beside the data), atomic writes (temporary file, fsync,
// rename), compose by concatenation, and no escape from the root whatever the name.
//
//   auto store = dataflux::make_local_store("/data").value();
//   store->write_object({"/data", "train/0.bin"}, "bytes");   // bucket = the root
//   auto page = store->list_objects({"/data", "train/"});
#ifndef DATAFLUX_LOCAL_H_
#define DATAFLUX_LOCAL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "dataflux/object_store.h"

namespace dataflux {

struct LocalOptions {
  bool fsync = true;  // fsync data and directory on every write (durability over speed)
};

// `root` must be an existing directory. Requests whose bucket is neither the root (as given
// or canonicalised) nor "" fail with InvalidArgument.
absl::StatusOr<std::shared_ptr<ObjectStore>> make_local_store(const std::string& root,
                                                              LocalOptions options = {});

}  // namespace dataflux

#endif  // DATAFLUX_LOCAL_H_
