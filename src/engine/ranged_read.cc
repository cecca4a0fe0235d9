#include "engine/ranged_read.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/read_checks.h"
#include "dataflux/crc32c.h"
#include "engine/upload_parts.h"

namespace dataflux::internal {

absl::StatusOr<RangedReadResult> read_object_ranged(
    ObjectStore& store, const std::string& bucket, const std::string& object,
    const RangedReadOptions& options, const std::function<char*(std::uint64_t size)>& allocate) {
  const std::string url = store.url(bucket, object);
  auto metadata = store.get_object_metadata(bucket, object);
  if (!metadata.ok()) return metadata.status();
  RangedReadResult result;
  result.metadata = *metadata;
  const std::uint64_t size = metadata->size;
  if (options.require_crc32c && !metadata->crc32c) {
    return absl::FailedPreconditionError(
        absl::StrCat("read ", url, ": the store reports no CRC32C to verify against"));
  }
  char* buffer = allocate(size);
  if (size > 0 && buffer == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("read ", url, ": no buffer for ", size, " bytes"));
  }
  // Clamped to the size so the range count cannot overflow (range_size may be ~0 = one GET).
  const std::uint64_t range =
      std::max<std::uint64_t>(1, std::min<std::uint64_t>(options.range_size, size));
  const std::size_t count = static_cast<std::size_t>((size + range - 1) / range);
  const int window = std::max(1, options.ranges_in_flight);

  std::mutex mu;
  std::condition_variable done_cv;
  std::deque<std::size_t> done;             // finished ranges, not yet checksummed
  std::vector<absl::Status> status(count);  // per range
  int in_flight = 0;
  int requests = 0;

  std::size_t next = 0, finished = 0;
  std::vector<std::uint32_t> crcs(count, 0);
  absl::Status first_error;
  auto launch = [&](std::size_t i) {
    ReadObjectRequest r;
    r.bucket = bucket;
    r.object = object;
    r.offset = i * range;
    const std::uint64_t n = std::min(range, size - r.offset);
    r.length = n;
    r.generation = metadata->generation != 0 ? std::optional<std::int64_t>(metadata->generation)
                                             : std::nullopt;
    r.verify_crc32c = false;  // verified below, over the whole object
    store.read_object_async(r, buffer + r.offset, static_cast<std::size_t>(n),
                            [&, i, n](absl::StatusOr<ReadObjectResult> got) {
                              std::lock_guard<std::mutex> lock(mu);
                              if (!got.ok()) {
                                status[i] = got.status();
                              } else {
                                requests += got->attempts;
                                if (got->bytes != n) {
                                  status[i] = absl::DataLossError(absl::StrCat(
                                      "got ", got->bytes, " bytes where ", n, " were asked"));
                                }
                              }
                              done.push_back(i);
                              --in_flight;
                              done_cv.notify_all();
                            });
  };
  std::unique_lock<std::mutex> lock(mu);
  while (finished < count) {
    while (first_error.ok() && next < count && in_flight < window) {
      ++in_flight;
      const std::size_t i = next++;
      lock.unlock();
      launch(i);
      lock.lock();
    }
    if (in_flight == 0 && done.empty()) break;  // only after an error
    done_cv.wait(lock, [&] { return !done.empty(); });
    const std::size_t i = done.front();
    done.pop_front();
    ++finished;
    if (!status[i].ok()) {
      if (first_error.ok()) {
        const std::uint64_t first = i * range, last = std::min(size, first + range) - 1;
        first_error = absl::Status(
            status[i].code(),
            absl::StrCat("read ", url, ": range ", first, "-", last, ": ", status[i].message()));
      }
      continue;
    }
    if (!first_error.ok()) continue;
    lock.unlock();  // checksum while other ranges download
    const std::uint64_t offset = i * range;
    crcs[i] =
        crc32c_extend(0, buffer + offset, static_cast<std::size_t>(std::min(range, size - offset)));
    lock.lock();
  }
  // Every callback has run (in_flight reached 0) before the buffer may be released.
  done_cv.wait(lock, [&] { return in_flight == 0; });
  result.requests = requests;
  lock.unlock();
  if (!first_error.ok()) return first_error;

  const std::uint32_t crc = crc32c_of_ranges(crcs, range, size);
  result.bytes = size;
  if (metadata->crc32c) {
    if (*metadata->crc32c != crc) {
      return absl::DataLossError(absl::StrCat(
          "read ", url, ": integrity check failed: the ", size, " bytes read have CRC32C ",
          crc32c_to_base64(crc), " but the object (generation ", metadata->generation,
          ") has CRC32C ", crc32c_to_base64(*metadata->crc32c)));
    }
    result.crc32c_verified = true;
  }
  return result;
}

}  // namespace dataflux::internal
