// Listing: fast parallel listing of a bucket prefix, and the compact manifest it produces.
//
// list_objects_fast() lists every object under a prefix with several list calls in flight:
// it starts with one sequential call (so a small bucket costs exactly what a plain listing
// costs) and, only when the first page is full, starts `workers` workers that split the name
// space between them. A worker lists its range a page at a time; at every page boundary, if
// another worker is idle, it cuts its remaining range at a name midpoint and hands over the
// upper part. The result is every object exactly once, sorted by name (byte order), with size,
// generation and CRC32C, after the filters in ListOptions. It works on every ObjectStore;
// stores without a server-side end offset (S3) are stopped client-side at the range end.
//
// A Listing keeps all names in one arena and the metadata in parallel arrays (about 28 bytes
// per object plus its name), and can be saved to a file or an object and loaded back,
// validated, so a training job can skip re-listing. Manifest format (all integers
// little-endian):
//
//   magic   "DFXLIST1"                       8 bytes
//   u32     version (1)                      u32 flags (bit 0: has CRC32C bitmap; always 1)
//   u32     len, source URL bytes            e.g. "gs://bucket", "s3://bucket", "file:///root"
//   u32     len, prefix bytes
//   u64     count N                          u64 total name bytes M
//   u32[N]  name lengths                     M bytes: names, concatenated, in sorted order
//   u64[N]  sizes                            i64[N] generations
//   u32[N]  CRC32C values                    ceil(N/8) bytes: bit i set = CRC32C i is known
//   u32     CRC32C (Castagnoli) of every byte before it
//
//   dataflux::ListOptions options;
//   options.glob = "**/*.jpg";                       // relative to the prefix
//   auto listing = dataflux::list_objects_fast(*store, "my-bucket", "train/", options).value();
//   for (const auto& object : listing) std::cout << object.name << " " << object.size << "\n";
//   listing.save("/tmp/train.manifest");  // later: Listing::load("/tmp/train.manifest", ...)
#ifndef DATAFLUX_LISTING_H_
#define DATAFLUX_LISTING_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "dataflux/object_store.h"
#include "dataflux/retry.h"

namespace dataflux {

// Counters of one listing, final in ListStats and running in progress callbacks.
struct ListStats {
  std::uint64_t objects = 0;       // objects kept (after filters)
  std::uint64_t objects_seen = 0;  // objects the store returned, filtered ones included
  std::uint64_t pages = 0;         // list pages received
  std::uint64_t requests = 0;      // list calls made, failed ones included
  std::uint64_t splits = 0;        // ranges handed to idle workers
  int workers = 0;                 // workers that ran (1 = the listing stayed sequential)
  std::chrono::nanoseconds elapsed{0};
  double objects_per_s() const;
};

struct ListOptions {
  // List calls in flight at most. 1 = sequential. Workers start only when the first page is
  // full. The calling thread is one worker; the others are tasks on the library's pool for
  // blocking work, each blocked on its store call while the transport carries the request.
  int workers = 32;
  // Objects per list call (GCS caps it at 1000).
  int page_size = 1000;
  // Skip names ending in '/' (the "directory" placeholders consoles create).
  bool skip_directory_placeholders = true;
  // Skip Dataflux's own temporary objects: names that start with one of
  // `temporary_prefixes` or contain it right after a '/' (compose batches of the fetcher), and
  // names that contain one of `temporary_infixes` (checkpoint parts being uploaded,
  // "<object>.dataflux-part-<id>-<n>").
  bool skip_temporary_objects = true;
  std::vector<std::string> temporary_prefixes = {"dataflux-composed-objects/"};
  std::vector<std::string> temporary_infixes = {".dataflux-part-"};
  // Keep only these storage classes ("STANDARD", "NEARLINE", ...); empty = every class.
  // Objects whose store reports no class (the local filesystem) are always kept.
  std::vector<std::string> storage_classes;
  // Keep only names (relative to the prefix) matching this glob; empty = all. Segments are
  // separated by '/': "**" as a whole segment matches any number of segments; within a
  // segment '*', '?' and "[...]" work as in fnmatch(3) and never match '/'.
  std::string glob;
  // Called after every page with the running counters, from a worker thread, never from two
  // threads at once. Keep it cheap.
  std::function<void(const ListStats&)> progress;
};

// What a loaded manifest must match; unset fields are not checked.
struct ManifestExpectation {
  std::optional<std::string> source;  // e.g. "gs://bucket"
  std::optional<std::string> prefix;
};

// A sorted, compact list of objects: one name arena plus parallel arrays.
class Listing {
 public:
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = ObjectEntry;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = ObjectEntry;
    const_iterator() = default;
    ObjectEntry operator*() const { return (*listing_)[index_]; }
    const_iterator& operator++() {
      ++index_;
      return *this;
    }
    const_iterator operator++(int) {
      auto copy = *this;
      ++index_;
      return copy;
    }
    const_iterator& operator--() {
      --index_;
      return *this;
    }
    const_iterator& operator+=(difference_type n) {
      index_ += n;
      return *this;
    }
    const_iterator operator+(difference_type n) const {
      auto c = *this;
      c += n;
      return c;
    }
    difference_type operator-(const const_iterator& o) const {
      return static_cast<difference_type>(index_) - static_cast<difference_type>(o.index_);
    }
    ObjectEntry operator[](difference_type n) const { return *(*this + n); }
    bool operator==(const const_iterator& o) const { return index_ == o.index_; }
    bool operator!=(const const_iterator& o) const { return index_ != o.index_; }
    bool operator<(const const_iterator& o) const { return index_ < o.index_; }

   private:
    friend class Listing;
    const_iterator(const Listing* listing, std::size_t index) : listing_(listing), index_(index) {}
    const Listing* listing_ = nullptr;
    std::size_t index_ = 0;
  };

  Listing() = default;
  // `source` names the bucket as a URL ("gs://bucket"), `prefix` the listed prefix.
  Listing(std::string source, std::string prefix);

  std::size_t size() const { return sizes_.size(); }
  bool empty() const { return sizes_.empty(); }
  std::string_view name(std::size_t i) const;
  std::uint64_t object_size(std::size_t i) const { return sizes_[i]; }
  std::int64_t generation(std::size_t i) const { return generations_[i]; }
  std::optional<std::uint32_t> crc32c(std::size_t i) const;
  ObjectEntry operator[](std::size_t i) const;  // a copy; name(i) is a view
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  const std::string& source() const { return source_; }
  const std::string& prefix() const { return prefix_; }
  std::uint64_t total_bytes() const;  // sum of object sizes
  std::size_t memory_bytes() const;   // heap bytes this Listing holds
  // The index of `name`, by binary search (the listing is sorted).
  std::optional<std::size_t> find(std::string_view name) const;

  // Appends one object. Names must come in strictly increasing byte order (checked when
  // loading a manifest, not here).
  void add(std::string_view name, std::uint64_t size, std::int64_t generation,
           std::optional<std::uint32_t> crc32c);
  void reserve(std::size_t objects, std::size_t name_bytes);
  // Appends every object of `other` (whose names must all sort after this one's).
  void append(const Listing& other);
  void shrink_to_fit();

  // The manifest (format in the header comment) as bytes, and back. parse() checks the
  // magic, version, lengths, count, checksum, that names are sorted and unique, and
  // `expect`; errors say which check failed.
  std::string serialize() const;
  static absl::StatusOr<Listing> parse(std::string_view bytes,
                                       const ManifestExpectation& expect = {});
  // To and from a local file (written to a temporary file, then renamed into place).
  absl::Status save(const std::string& path) const;
  static absl::StatusOr<Listing> load(const std::string& path,
                                      const ManifestExpectation& expect = {});
  // To and from an object.
  absl::Status save(ObjectStore& store, const std::string& bucket, const std::string& object) const;
  static absl::StatusOr<Listing> load(ObjectStore& store, const std::string& bucket,
                                      const std::string& object,
                                      const ManifestExpectation& expect = {});

 private:
  std::string source_;
  std::string prefix_;
  std::string names_;                     // every name, concatenated
  std::vector<std::uint64_t> name_ends_;  // names_[name_ends_[i-1], name_ends_[i])
  std::vector<std::uint64_t> sizes_;
  std::vector<std::int64_t> generations_;
  std::vector<std::uint32_t> crc32c_;
  std::vector<bool> has_crc32c_;
};

// Lists every object under `prefix` in `bucket` (see the top of this header). Errors name the
// bucket, prefix and the store's message; `stats`, when given, is filled in either way.
absl::StatusOr<Listing> list_objects_fast(ObjectStore& store, const std::string& bucket,
                                          const std::string& prefix,
                                          const ListOptions& options = {},
                                          ListStats* stats = nullptr);

}  // namespace dataflux

#endif  // DATAFLUX_LISTING_H_
