// Dataflux: cloud object storage for libtorch training jobs. This header includes the whole
// public API.
//
//   #include <dataflux/dataflux.h>
//   auto store = dataflux::open_store("gs://my-bucket/train/").value();
//   auto page = store->list_objects({"my-bucket", "train/"}).value();
//   at::Tensor bytes = dataflux::read_object_tensor(*store, "my-bucket", page.objects[0].name);
#ifndef DATAFLUX_DATAFLUX_H_
#define DATAFLUX_DATAFLUX_H_

#include "dataflux/checkpoint.h"
#include "dataflux/crc32c.h"
#include "dataflux/credentials.h"
#include "dataflux/dataset.h"
#include "dataflux/error.h"
#include "dataflux/fetch.h"
#include "dataflux/gcs.h"
#include "dataflux/image.h"
#include "dataflux/line_dataset.h"
#include "dataflux/list_prefixes.h"
#include "dataflux/listing.h"
#include "dataflux/local.h"
#include "dataflux/log.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"
#include "dataflux/retry.h"
#include "dataflux/s3.h"
#include "dataflux/shard_dataset.h"
#include "dataflux/shards.h"
#include "dataflux/tensor_io.h"
#include "dataflux/transport.h"
#include "dataflux/upload.h"
#include "dataflux/url.h"

#endif  // DATAFLUX_DATAFLUX_H_
