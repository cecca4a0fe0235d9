// Listing: the compact manifest container and its on-disk / in-object format.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/http_status.h"
#include "dataflux/crc32c.h"
#include "dataflux/listing.h"

namespace dataflux {
namespace {

constexpr char kMagic[8] = {'D', 'F', 'X', 'L', 'I', 'S', 'T', '1'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kFlagCrcBitmap = 1;

template <typename T>
void put(std::string* out, T value) {
  char bytes[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    bytes[i] = static_cast<char>((static_cast<std::uint64_t>(value) >> (8 * i)) & 0xff);
  }
  out->append(bytes, sizeof(T));
}

// Reads the manifest front to back; every read is bounds-checked.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  bool get(T* value) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    }
    *value = static_cast<T>(v);
    pos_ += sizeof(T);
    return true;
  }
  bool get_bytes(std::uint64_t n, std::string_view* out) {
    if (bytes_.size() - pos_ < n) return false;
    *out = bytes_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool get_string(std::string* out) {
    std::uint32_t n = 0;
    std::string_view s;
    if (!get(&n) || !get_bytes(n, &s)) return false;
    out->assign(s);
    return true;
  }
  std::size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

absl::Status corrupt(std::string_view what) {
  return absl::DataLossError(absl::StrCat("listing manifest: ", std::string(what)));
}

}  // namespace

Listing::Listing(std::string source, std::string prefix)
    : source_(std::move(source)), prefix_(std::move(prefix)) {}

std::string_view Listing::name(std::size_t i) const {
  const std::uint64_t begin = i == 0 ? 0 : name_ends_[i - 1];
  return std::string_view(names_).substr(begin, name_ends_[i] - begin);
}

std::optional<std::uint32_t> Listing::crc32c(std::size_t i) const {
  if (!has_crc32c_[i]) return std::nullopt;
  return crc32c_[i];
}

ObjectEntry Listing::operator[](std::size_t i) const {
  return ObjectEntry(std::string(name(i)), sizes_[i], generations_[i], crc32c(i));
}

std::uint64_t Listing::total_bytes() const {
  std::uint64_t total = 0;
  for (std::uint64_t s : sizes_) total += s;
  return total;
}

std::size_t Listing::memory_bytes() const {
  return names_.capacity() + name_ends_.capacity() * sizeof(std::uint64_t) +
         sizes_.capacity() * sizeof(std::uint64_t) +
         generations_.capacity() * sizeof(std::int64_t) +
         crc32c_.capacity() * sizeof(std::uint32_t) + has_crc32c_.capacity() / 8 +
         source_.capacity() + prefix_.capacity();
}

std::optional<std::size_t> Listing::find(std::string_view name) const {
  std::size_t lo = 0, hi = size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (this->name(mid) < name) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo < size() && this->name(lo) == name) return lo;
  return std::nullopt;
}

void Listing::add(std::string_view name, std::uint64_t size, std::int64_t generation,
                  std::optional<std::uint32_t> crc32c) {
  names_.append(name.data(), name.size());
  name_ends_.push_back(names_.size());
  sizes_.push_back(size);
  generations_.push_back(generation);
  crc32c_.push_back(crc32c.value_or(0));
  has_crc32c_.push_back(crc32c.has_value());
}

void Listing::reserve(std::size_t objects, std::size_t name_bytes) {
  names_.reserve(name_bytes);
  name_ends_.reserve(objects);
  sizes_.reserve(objects);
  generations_.reserve(objects);
  crc32c_.reserve(objects);
  has_crc32c_.reserve(objects);
}

void Listing::append(const Listing& other) {
  const std::uint64_t base = names_.size();
  names_.append(other.names_);
  for (std::uint64_t end : other.name_ends_) name_ends_.push_back(base + end);
  sizes_.insert(sizes_.end(), other.sizes_.begin(), other.sizes_.end());
  generations_.insert(generations_.end(), other.generations_.begin(), other.generations_.end());
  crc32c_.insert(crc32c_.end(), other.crc32c_.begin(), other.crc32c_.end());
  has_crc32c_.insert(has_crc32c_.end(), other.has_crc32c_.begin(), other.has_crc32c_.end());
}

void Listing::shrink_to_fit() {
  names_.shrink_to_fit();
  name_ends_.shrink_to_fit();
  sizes_.shrink_to_fit();
  generations_.shrink_to_fit();
  crc32c_.shrink_to_fit();
  has_crc32c_.shrink_to_fit();
}

std::string Listing::serialize() const {
  const std::size_t n = size();
  std::string out;
  out.reserve(64 + source_.size() + prefix_.size() + names_.size() + n * 25 + n / 8);
  out.append(kMagic, sizeof(kMagic));
  put<std::uint32_t>(&out, kVersion);
  put<std::uint32_t>(&out, kFlagCrcBitmap);
  put<std::uint32_t>(&out, static_cast<std::uint32_t>(source_.size()));
  out.append(source_);
  put<std::uint32_t>(&out, static_cast<std::uint32_t>(prefix_.size()));
  out.append(prefix_);
  put<std::uint64_t>(&out, n);
  put<std::uint64_t>(&out, names_.size());
  for (std::size_t i = 0; i < n; ++i)
    put<std::uint32_t>(&out, static_cast<std::uint32_t>(name(i).size()));
  out.append(names_);
  for (std::uint64_t s : sizes_) put<std::uint64_t>(&out, s);
  for (std::int64_t g : generations_) put<std::int64_t>(&out, g);
  for (std::uint32_t c : crc32c_) put<std::uint32_t>(&out, c);
  std::string bitmap((n + 7) / 8, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    if (has_crc32c_[i]) bitmap[i / 8] = static_cast<char>(bitmap[i / 8] | (1 << (i % 8)));
  }
  out.append(bitmap);
  put<std::uint32_t>(&out, dataflux::crc32c(out));
  return out;
}

absl::StatusOr<Listing> Listing::parse(std::string_view bytes, const ManifestExpectation& expect) {
  if (bytes.size() < sizeof(kMagic) + 4 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return corrupt("not a Dataflux listing manifest (bad magic)");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 4);
  Reader trailer(bytes.substr(bytes.size() - 4));
  std::uint32_t stored_crc = 0;
  trailer.get(&stored_crc);
  if (dataflux::crc32c(body) != stored_crc)
    return corrupt("checksum mismatch (damaged or truncated)");

  Reader in(body);
  std::string_view magic;
  std::uint32_t version = 0, flags = 0;
  Listing listing;
  std::uint64_t n = 0, name_bytes = 0;
  in.get_bytes(sizeof(kMagic), &magic);
  if (!in.get(&version) || !in.get(&flags)) return corrupt("truncated header");
  if (version != kVersion) {
    return corrupt(
        absl::StrCat("unsupported version ", version, " (this library reads ", kVersion, ")"));
  }
  if (!in.get_string(&listing.source_) || !in.get_string(&listing.prefix_) || !in.get(&n) ||
      !in.get(&name_bytes)) {
    return corrupt("truncated header");
  }
  // Every object takes at least 24 bytes of arrays: a count the rest cannot hold is a lie,
  // and checking it first keeps a bad count from allocating.
  if (n > in.remaining() / 24 || name_bytes > in.remaining()) {
    return corrupt(
        absl::StrCat("count ", n, " and name bytes ", name_bytes, " do not fit in the manifest"));
  }
  const std::uint64_t expected_rest = n * 4 + name_bytes + n * 8 + n * 8 + n * 4 + (n + 7) / 8;
  if (in.remaining() != expected_rest) {
    return corrupt(absl::StrCat("count ", n, " does not match the manifest length"));
  }
  listing.reserve(n, name_bytes);
  std::uint64_t end = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint32_t len = 0;
    in.get(&len);
    end += len;
    listing.name_ends_.push_back(end);
  }
  if (end != name_bytes) return corrupt("name lengths do not add up to the name bytes");
  std::string_view names;
  in.get_bytes(name_bytes, &names);
  listing.names_.assign(names);
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint64_t v = 0;
    in.get(&v);
    listing.sizes_.push_back(v);
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    std::int64_t v = 0;
    in.get(&v);
    listing.generations_.push_back(v);
  }
  for (std::uint64_t i = 0; i < n; ++i) {
    std::uint32_t v = 0;
    in.get(&v);
    listing.crc32c_.push_back(v);
  }
  std::string_view bitmap;
  in.get_bytes((n + 7) / 8, &bitmap);
  for (std::uint64_t i = 0; i < n; ++i) {
    listing.has_crc32c_.push_back((static_cast<unsigned char>(bitmap[i / 8]) >> (i % 8)) & 1);
  }
  for (std::uint64_t i = 1; i < n; ++i) {
    if (!(listing.name(i - 1) < listing.name(i))) {
      return corrupt(absl::StrCat("names are not sorted and unique at entry ", i));
    }
  }
  if (expect.source && *expect.source != listing.source_) {
    return absl::FailedPreconditionError(
        absl::StrCat("listing manifest is for ", listing.source_, ", not ", *expect.source));
  }
  if (expect.prefix && *expect.prefix != listing.prefix_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "listing manifest is for prefix \"", listing.prefix_, "\", not \"", *expect.prefix, "\""));
  }
  return listing;
}

absl::Status Listing::save(const std::string& path) const {
  const std::string bytes = serialize();
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("save listing to ", path, ": ", std::strerror(errno)));
  }
  std::size_t done = 0;
  int error = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = errno;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  if (error == 0 && ::fsync(fd) != 0) error = errno;
  if (::close(fd) != 0 && error == 0) error = errno;
  if (error == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) error = errno;
  if (error != 0) {
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("save listing to ", path, ": ", std::strerror(error)));
  }
  return absl::OkStatus();
}

absl::StatusOr<Listing> Listing::load(const std::string& path, const ManifestExpectation& expect) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("load listing from ", path, ": ", std::strerror(errno)));
  }
  std::ostringstream bytes;
  bytes << in.rdbuf();
  auto listing = parse(bytes.str(), expect);
  if (!listing.ok()) return internal::annotate(listing.status(), absl::StrCat("load ", path));
  return listing;
}

absl::Status Listing::save(ObjectStore& store, const std::string& bucket,
                           const std::string& object) const {
  const std::string bytes = serialize();
  WriteObjectRequest request;
  request.bucket = bucket;
  request.object = object;
  request.crc32c = dataflux::crc32c(bytes);
  auto written = store.write_object(request, bytes);
  if (!written.ok()) return internal::annotate(written.status(), "save listing");
  return absl::OkStatus();
}

absl::StatusOr<Listing> Listing::load(ObjectStore& store, const std::string& bucket,
                                      const std::string& object,
                                      const ManifestExpectation& expect) {
  ReadObjectRequest request;
  request.bucket = bucket;
  request.object = object;
  std::string bytes;
  auto read = store.read_object(request, [&](const char* data, std::size_t n) {
    bytes.append(data, n);
    return absl::OkStatus();
  });
  if (!read.ok()) return internal::annotate(read.status(), "load listing");
  auto listing = parse(bytes, expect);
  if (!listing.ok()) {
    return internal::annotate(listing.status(),
                              absl::StrCat("load listing from ", bucket, "/", object));
  }
  return listing;
}

double ListStats::objects_per_s() const {
  const double seconds = std::chrono::duration<double>(elapsed).count();
  return seconds > 0 ? static_cast<double>(objects) / seconds : 0.0;
}

}  // namespace dataflux
