// ShardDataset: tar shards streamed through the record pipeline (shards/record_stream.h).
#include "dataflux/shard_dataset.h"

#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <condition_variable>
#include <mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/thread_pool.h"
#include "data/byte_tensor.h"
#include "data/record_cursor.h"
#include "dataflux/crc32c.h"
#include "dataflux/image.h"
#include "shards/tar_io.h"

namespace dataflux {

const at::Tensor* ShardSample::field(const std::string& name) const {
  for (const auto& [n, t] : fields) {
    if (n == name) return &t;
  }
  return nullptr;
}

namespace {

std::string where(const ShardSample& sample, const std::string& name) {
  return absl::StrCat(sample.shard, ": sample \"", sample.key, "\" field \"", name, "\"");
}

bool is_label(const std::string& name) {
  return name == "cls" || name == "cls2" || name == "index" || name == "label" || name == "id";
}

}  // namespace

at::Tensor decode_field(const ShardSample& sample, const std::string& name, const at::Tensor& bytes,
                        bool decode_images) {
  const std::size_t dot = name.rfind('.');
  const std::string ext = dot == std::string::npos ? name : name.substr(dot + 1);
  const std::string_view text(static_cast<const char*>(bytes.data_ptr()),
                              static_cast<std::size_t>(bytes.numel()));
  if (is_label(ext)) {
    std::int64_t value = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())),
                          &value)) {
      throw Error(absl::InvalidArgumentError(absl::StrCat(
          where(sample, name), " is not a decimal integer: \"",
          absl::string_view(text.data(), std::min<std::size_t>(text.size(), 40)), "\"")));
    }
    return at::scalar_tensor(value, at::kLong);
  }
  if (ext == "pth") {
    try {
      std::vector<char> data(text.begin(), text.end());
      auto value = torch::jit::pickle_load(data);
      if (!value.isTensor()) {
        throw Error(absl::InvalidArgumentError(
            absl::StrCat(where(sample, name), " holds a ", value.tagKind(), ", not a tensor")));
      }
      return value.toTensor();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error(absl::DataLossError(
          absl::StrCat(where(sample, name), " is not a torch.save'd tensor: ", e.what())));
    }
  }
  if (decode_images && (ext == "jpg" || ext == "jpeg" || ext == "png")) {
    return decode_image(bytes, absl::StrCat(sample.shard, ":", sample.key, ".", name));
  }
  return bytes;
}

namespace internal {

// fields / decode_images / transform: a sample to the Example (both shard datasets).
struct SampleConverter {
  std::vector<std::vector<std::string>> fields;  // to_tuple, alternatives split
  std::vector<std::string> field_specs;          // as given, for messages
  MissingField missing = MissingField::kError;
  bool decode_images = false;
  ShardTransform transform;

  void configure(const std::string& location, const std::vector<std::string>& specs,
                 ShardTransform t, bool images, MissingField m) {
    transform = std::move(t);
    decode_images = images;
    missing = m;
    if (transform) return;
    if (specs.empty() || specs.size() > 2) {
      throw Error(absl::InvalidArgumentError(absl::StrCat(
          location,
          ": give fields (one or two, as to_tuple(\"jpg;png\", \"cls\")) or a transform")));
    }
    for (const auto& spec : specs) {
      std::vector<std::string> alts = absl::StrSplit(spec, ';', absl::SkipEmpty());
      if (alts.empty()) {
        throw Error(
            absl::InvalidArgumentError(absl::StrCat(location, ": empty field \"", spec, "\"")));
      }
      fields.push_back(std::move(alts));
      field_specs.push_back(spec);
    }
  }

  // Whether the sample has every field asked for; throws under MissingField::kError.
  bool complete(const ShardSample& s) const {
    if (transform) return true;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      bool found = false;
      for (const auto& alt : fields[i]) found = found || s.field(alt) != nullptr;
      if (found) continue;
      if (missing == MissingField::kSkip) return false;
      std::vector<std::string> present;
      for (const auto& [name, t] : s.fields) present.push_back(name);
      throw Error(absl::InvalidArgumentError(absl::StrCat(
          s.shard, ": sample \"", s.key, "\" has no field \"", field_specs[i], "\" (it has ",
          absl::StrJoin(present, ", "), "); MissingField::kSkip leaves such samples out")));
    }
    return true;
  }

  torch::data::Example<> example(ShardSample s) const {
    if (transform) return transform(std::move(s));
    at::Tensor out[2];
    for (std::size_t i = 0; i < fields.size(); ++i) {
      for (const auto& alt : fields[i]) {
        if (const at::Tensor* t = s.field(alt)) {
          out[i] = decode_field(s, alt, *t, decode_images);
          break;
        }
      }
    }
    if (fields.size() == 1) out[1] = at::empty({0}, at::kLong);
    return {std::move(out[0]), std::move(out[1])};
  }
};

struct ShardStreamState {
  RecordCursor<ShardSample> cursor;
  SampleConverter convert;
};

struct ShardMapState {
  std::shared_ptr<ObjectStore> store;
  std::string bucket;
  std::string location;
  std::vector<ObjectEntry> shards;
  std::vector<ShardIndex> indexes;                               // per shard
  std::vector<std::pair<std::uint32_t, std::uint32_t>> samples;  // (shard, entry)
  SampleConverter convert;
};

namespace {

constexpr char kKey[] = "dataflux_shard_dataset";

FetchBuffer tensor_buffer(std::uint64_t size) {
  auto tensor = std::make_shared<at::Tensor>(byte_tensor(size));
  FetchBuffer buffer;
  buffer.data = static_cast<char*>(tensor->data_ptr());
  buffer.owner = std::move(tensor);
  return buffer;
}

absl::Status parse_shard(const std::string& url, const FetchBuffer& bytes, std::uint64_t size,
                         std::vector<ShardSample>* out) {
  // The shard arrived in a tensor (`allocate`): members of a plain tar become views of it.
  const at::Tensor& shard = *std::static_pointer_cast<at::Tensor>(bytes.owner);
  TarSampleReader reader(bytes.data, size, url, tensor_buffer, bytes.owner);
  while (true) {
    auto next = reader.next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) return absl::OkStatus();
    ShardSample sample;
    sample.key = std::move((*next)->key);
    sample.shard = url;
    for (auto& f : (*next)->fields) {
      at::Tensor t = f.view_offset ? shard.narrow(0, static_cast<std::int64_t>(*f.view_offset),
                                                  static_cast<std::int64_t>(f.size))
                                   : *std::static_pointer_cast<at::Tensor>(f.buffer.owner);
      sample.fields.emplace_back(std::move(f.name), std::move(t));
    }
    out->push_back(std::move(sample));
  }
}

}  // namespace
}  // namespace internal

ShardDataset::ShardDataset(const std::string& url, ShardDatasetOptions options)
    : state_(std::make_unique<internal::ShardStreamState>()) {
  internal::RecordSourceOptions o;
  o.kind = "ShardDataset";
  o.unit = "shards";
  o.urls = {url};
  o.urls.insert(o.urls.end(), options.more_urls().begin(), options.more_urls().end());
  o.store = options.store();
  o.store_options = with_retry(options.store_options(), options.retry());
  o.listing_workers = options.listing_workers();
  o.rank = options.rank();
  o.world_size = options.world_size();
  o.seed = options.seed();
  o.shuffle = options.shuffle();
  o.shuffle_buffer = options.shuffle_buffer();
  o.sources_in_flight = options.shards_in_flight();
  o.max_bytes_in_flight = options.max_bytes_in_flight();
  o.range_size = options.range_size();
  o.max_requests_in_flight = options.max_requests_in_flight();
  auto& c = state_->cursor;
  ShardListing listing = c.open(o);
  c.allocate = internal::tensor_buffer;  // shards land in tensors that samples view
  state_->convert.configure(absl::StrCat("ShardDataset ", listing.location), options.fields(),
                            options.transform(), options.decode_images(), options.missing_field());
  auto store = listing.store;
  auto bucket = listing.bucket;
  c.parse = [store, bucket](std::size_t, const ObjectEntry& object, const FetchBuffer& bytes,
                            std::uint64_t size, std::vector<ShardSample>* out) {
    return internal::parse_shard(store->url(bucket, object.name), bytes, size, out);
  };
  c.set_epoch_locked(0);
}

ShardDataset::ShardDataset(ShardDataset&&) noexcept = default;
ShardDataset& ShardDataset::operator=(ShardDataset&&) noexcept = default;
ShardDataset::~ShardDataset() = default;

torch::optional<std::vector<torch::data::Example<>>> ShardDataset::get_batch(size_t batch_size) {
  auto& s = *state_;
  std::vector<ShardSample> samples;
  {
    std::lock_guard<std::mutex> lock(s.cursor.mu);
    if (batch_size == 0) return torch::nullopt;
    samples =
        s.cursor.pull(batch_size, [&s](const ShardSample& x) { return s.convert.complete(x); });
  }
  if (samples.empty()) return torch::nullopt;
  // Decoding and transforms run outside the lock, so several DataLoader workers work at once.
  std::vector<torch::data::Example<>> out;
  out.reserve(samples.size());
  for (auto& sample : samples) out.push_back(s.convert.example(std::move(sample)));
  return out;
}

torch::optional<size_t> ShardDataset::size() const { return torch::nullopt; }

void ShardDataset::reset() { state_->cursor.reset_locked(); }
void ShardDataset::set_epoch(std::uint64_t epoch) { state_->cursor.set_epoch_locked(epoch); }
void ShardDataset::save(torch::serialize::OutputArchive& archive) const {
  state_->cursor.save_locked(archive, internal::kKey);
}
void ShardDataset::load(torch::serialize::InputArchive& archive) {
  state_->cursor.load_locked(archive, internal::kKey);
}
std::uint64_t ShardDataset::epoch() const { return state_->cursor.epoch_locked(); }
std::size_t ShardDataset::position() const { return state_->cursor.position_locked(); }
std::vector<std::size_t> ShardDataset::epoch_shards() const {
  return state_->cursor.order_locked();
}
const std::vector<ObjectEntry>& ShardDataset::shards() const { return state_->cursor.sources; }

// ---- ShardMapDataset -------------------------------------------------------------------------

namespace internal {
namespace {

std::shared_ptr<ShardMapState> open_shard_map(const std::string& url,
                                              const ShardMapDatasetOptions& options) {
  std::vector<std::string> urls = {url};
  urls.insert(urls.end(), options.more_urls().begin(), options.more_urls().end());
  auto listing = value_or_throw(list_shards(urls, options.store(),
                                            with_retry(options.store_options(), options.retry()),
                                            options.listing_workers()));
  auto state = std::make_shared<ShardMapState>();
  state->store = listing.store;
  state->bucket = listing.bucket;
  state->location = listing.location;
  state->convert.configure(absl::StrCat("ShardMapDataset ", listing.location), options.fields(),
                           options.transform(), options.decode_images(), MissingField::kError);
  // Every index, concurrently, each checked against the CRC32C its listing gave.
  std::vector<std::string> texts(listing.shards.size());
  std::vector<FetchTarget> targets;
  for (std::size_t i = 0; i < listing.shards.size(); ++i) {
    const ObjectEntry& shard = listing.shards[i];
    if (!listing.indexes[i]) {
      throw Error(absl::FailedPreconditionError(absl::StrCat(
          "ShardMapDataset: ", listing.store->url(listing.bucket, shard.name), " has no index (",
          shard_index_name(shard.name),
          "); ShardMapDataset reads samples of plain .tar shards with an index, as ShardWriter "
          "and `dataflux pack` write them; ShardDataset streams any shard")));
    }
    texts[i].resize(listing.indexes[i]->size);
    targets.push_back({*listing.indexes[i], texts[i].data(), {}});
  }
  Fetcher fetcher(listing.store, listing.bucket);
  throw_if_error(fetcher.fetch(std::move(targets)));
  for (std::size_t i = 0; i < listing.shards.size(); ++i) {
    const ObjectEntry& shard = listing.shards[i];
    const std::string index_url = listing.store->url(listing.bucket, shard_index_name(shard.name));
    ShardIndex index = value_or_throw(shard_index_from_json(texts[i], index_url));
    const bool other_generation =
        index.generation != 0 && shard.generation != 0 && index.generation != shard.generation;
    if (index.size != shard.size || other_generation) {
      throw Error(absl::FailedPreconditionError(absl::StrCat(
          index_url, " describes another version of its shard (", index.size, " bytes, generation ",
          index.generation, "; the shard has ", shard.size, " bytes, generation ", shard.generation,
          "): the shard was rewritten without it")));
    }
    if (index.samples.size() > 0xffffffffu) {
      throw Error(absl::InvalidArgumentError(absl::StrCat(index_url, ": too many samples")));
    }
    for (std::size_t k = 0; k < index.samples.size(); ++k) {
      state->samples.emplace_back(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(k));
    }
    state->indexes.push_back(std::move(index));
  }
  state->shards = std::move(listing.shards);
  if (state->samples.empty()) {
    throw Error(absl::NotFoundError(
        absl::StrCat("ShardMapDataset ", state->location, ": the shards hold no samples")));
  }
  return state;
}

// Waits for a batch of asynchronous reads; every callback runs exactly once.
class BatchLatch {
 public:
  explicit BatchLatch(std::size_t n) : left_(n), statuses_(n) {}
  void done(std::size_t i, absl::Status status) {
    std::lock_guard<std::mutex> lock(mu_);
    statuses_[i] = std::move(status);
    if (--left_ == 0) cv_.notify_all();
  }
  std::vector<absl::Status> wait() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return left_ == 0; });
    return statuses_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::size_t left_;
  std::vector<absl::Status> statuses_;
};

}  // namespace
}  // namespace internal

ShardMapDataset::ShardMapDataset(const std::string& url, ShardMapDatasetOptions options)
    : state_(internal::open_shard_map(url, options)) {}

torch::data::Example<> ShardMapDataset::get(size_t index) {
  size_t indices[] = {index};
  return std::move(get_batch(indices).front());
}

std::vector<torch::data::Example<>> ShardMapDataset::get_batch(c10::ArrayRef<size_t> indices) {
  const auto& s = *state_;
  for (size_t index : indices) {
    if (index >= s.samples.size()) {
      throw Error(
          absl::OutOfRangeError(absl::StrCat("index ", index, " is out of range: ", s.location,
                                             " has ", s.samples.size(), " samples")));
    }
  }
  // Every buffer first: an allocation that fails then fails the batch before any read is in
  // flight, instead of leaving reads writing into buffers this frame no longer owns.
  std::vector<at::Tensor> bytes(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const auto [shard, entry] = s.samples[indices[k]];
    bytes[k] = internal::byte_tensor(s.indexes[shard].samples[entry].size);
  }
  auto latch = std::make_shared<internal::BatchLatch>(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const auto [shard, entry] = s.samples[indices[k]];
    const ShardIndex& index = s.indexes[shard];
    const ShardIndexEntry& e = index.samples[entry];
    ReadObjectRequest r;
    r.bucket = s.bucket;
    r.object = s.shards[shard].name;
    r.offset = e.offset;
    r.length = e.size;
    if (index.generation != 0) r.generation = index.generation;
    r.etag = index.etag;  // S3: the version the index describes, or a clear error
    s.store->read_object_async(
        r, static_cast<char*>(bytes[k].data_ptr()), e.size,
        // The callback holds the buffer: it outlives this frame.
        [latch, k, size = e.size, buffer = bytes[k]](absl::StatusOr<ReadObjectResult> got) {
          absl::Status status = got.status();
          if (got.ok() && got->bytes != size) {
            status = absl::DataLossError(
                absl::StrCat("short read: ", got->bytes, " of ", size, " bytes"));
          }
          latch->done(k, std::move(status));
        });
  }
  const auto statuses = latch->wait();
  std::vector<torch::data::Example<>> out;
  out.reserve(indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    const auto [shard, entry] = s.samples[indices[k]];
    const ShardIndexEntry& e = s.indexes[shard].samples[entry];
    const std::string url = s.store->url(s.bucket, s.shards[shard].name);
    if (!statuses[k].ok()) {
      throw Error(absl::Status(statuses[k].code(),
                               absl::StrCat(url, ": sample \"", e.key, "\" (bytes ", e.offset, "-",
                                            e.offset + e.size, "): ", statuses[k].message())));
    }
    const std::uint32_t crc = crc32c(std::string_view(static_cast<const char*>(bytes[k].data_ptr()),
                                                      static_cast<std::size_t>(e.size)));
    if (crc != e.crc32c) {
      throw Error(absl::DataLossError(
          absl::StrCat(url, ": sample \"", e.key, "\" does not match its index's CRC32C (",
                       crc32c_to_base64(crc), " read, ", crc32c_to_base64(e.crc32c), " indexed)")));
    }
    ShardSample sample;
    sample.key = e.key;
    sample.shard = url;
    for (const auto& f : e.fields) {
      sample.fields.emplace_back(f.name,
                                 bytes[k].narrow(0, static_cast<std::int64_t>(f.offset - e.offset),
                                                 static_cast<std::int64_t>(f.size)));
    }
    s.convert.complete(sample);
    out.push_back(s.convert.example(std::move(sample)));
  }
  return out;
}

torch::optional<size_t> ShardMapDataset::size() const { return state_->samples.size(); }
const std::vector<ObjectEntry>& ShardMapDataset::shards() const { return state_->shards; }
std::pair<std::size_t, const ShardIndexEntry*> ShardMapDataset::locate(size_t index) const {
  const auto [shard, entry] = state_->samples.at(index);
  return {shard, &state_->indexes[shard].samples[entry]};
}

// ---- pack_examples ---------------------------------------------------------------------------

PackResult pack_examples(const std::function<torch::data::Example<>(size_t)>& get, size_t count,
                         const std::string& dest_prefix, PackDatasetOptions options) {
  auto writer = value_or_throw(ShardWriter::create(dest_prefix, options.writer));
  const std::size_t workers = static_cast<std::size_t>(std::max(1, options.workers));
  const std::size_t digits = std::max<std::size_t>(9, std::to_string(count).size());
  struct Serialized {
    std::string key;
    std::vector<char> data, target;
  };
  auto serialize = [&](size_t i) {
    torch::data::Example<> e = get(i);
    Serialized out;
    out.key = std::to_string(i);
    out.key.insert(0, digits - out.key.size(), '0');
    out.data = torch::jit::pickle_save(e.data);
    out.target = torch::jit::pickle_save(e.target);
    return out;
  };
  PackResult result;
  // Windows of samples serialized on the library's blocking pool (at most `workers` at once,
  // the calling thread included), written in index order.
  const std::size_t window = workers * 8;
  std::vector<Serialized> slots(window);
  for (std::size_t begin = 0; begin < count; begin += window) {
    const std::size_t n = std::min(count - begin, window);
    throw_if_error(internal::parallel_for(
        internal::ThreadPool::blocking(), static_cast<int>(n), static_cast<int>(workers),
        [&](int k) -> absl::Status {
          try {
            slots[static_cast<std::size_t>(k)] = serialize(begin + static_cast<std::size_t>(k));
            return absl::OkStatus();
          } catch (const Error& e) {
            return e.status();
          } catch (const std::exception& e) {
            return absl::InternalError(absl::StrCat(
                "pack_dataset: sample ", begin + static_cast<std::size_t>(k), ": ", e.what()));
          }
        }));
    for (std::size_t k = 0; k < n; ++k) {
      Serialized& s = slots[k];
      const std::string_view data(s.data.data(), s.data.size());
      const std::string_view target(s.target.data(), s.target.size());
      throw_if_error(writer->write(s.key, {{"data.pth", data}, {"target.pth", target}}));
      ++result.samples;
      result.bytes += data.size() + target.size();
      if (options.progress) options.progress(result.samples, count, result.bytes);
      s = Serialized();
    }
  }
  result.shards = value_or_throw(writer->close());
  return result;
}

}  // namespace dataflux
