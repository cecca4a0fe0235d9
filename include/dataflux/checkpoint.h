// Checkpoints: torch::save / torch::load straight to and from object storage.
//
// Saving streams libtorch's serializer into an Uploader: parts go up concurrently while the
// model is still being serialized, memory stays at (parts in flight x part size), and the
// object appears only once it is complete (compose, multipart complete, or rename). Loading
// stats the object, downloads it with parallel ranged GETs into one buffer, verifies its CRC32C
// and hands the buffer to libtorch. Every backend works: gs://, s3://, file:// and plain paths.
//
//   dataflux::save(model, "gs://my-bucket/ckpt/epoch-3.pt");          // modules, optimizers,
//   dataflux::load(model, "gs://my-bucket/ckpt/epoch-3.pt");          // tensors, archives
//   dataflux::AsyncCheckpointer async;
//   auto done = async.save(model, "gs://my-bucket/ckpt/epoch-4.pt");  // training goes on
//   done.get();                                                        // throws on failure
//
// Errors throw dataflux::Error: NotFound for a missing checkpoint, DataLoss when the stored
// bytes fail their checksum, and the failing part and its cause when an upload fails.
#ifndef DATAFLUX_CHECKPOINT_H_
#define DATAFLUX_CHECKPOINT_H_

#include <torch/serialize.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "dataflux/error.h"
#include "dataflux/object_store.h"
#include "dataflux/open_store.h"
#include "dataflux/upload.h"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace dataflux {

struct CheckpointOptions {
  UploadOptions upload;                 // part size (32 MiB), parts in flight (8), ...
  std::uint64_t range_size = 16 << 20;  // bytes per ranged GET when loading
  int max_requests_in_flight = 16;      // ranged GETs in flight when loading
  // The store to use; nullptr = open_store(url, store_options) for each URL's scheme.
  std::shared_ptr<ObjectStore> store;
  StoreOptions store_options;
  // Loading into a module: the checkpoint must hold exactly the module's parameters and
  // buffers, with the same shapes, or load() throws InvalidArgument naming every difference
  // and changes nothing (PyTorch's load_state_dict(strict=True)). false: libtorch's own rules
  // (a missing entry throws, extra entries are ignored, another shape replaces the tensor's).
  bool strict = true;
};

// The sink for OutputArchive::save_to: bytes go to an Uploader as they come. libtorch calls
// std::terminate when its writer throws or returns short, so write() never does: it latches
// the first error and commit() throws it.
class CheckpointWriter {
 public:
  explicit CheckpointWriter(const std::string& url, const CheckpointOptions& options = {});
  ~CheckpointWriter();  // abandons the upload unless committed: nothing is left behind
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  std::size_t write(const void* data, std::size_t size) noexcept;  // always returns size
  // For save_to / torch::save; valid while this writer lives.
  std::function<std::size_t(const void*, std::size_t)> writer();
  ObjectMetadata commit();  // publishes; throws Error (the latched one, or the upload's)
  void abort() noexcept;
  UploadStats stats() const;

 private:
  std::unique_ptr<Uploader> uploader_;
  absl::Status error_;
  bool committed_ = false;
};

// A whole checkpoint in memory, downloaded in parallel and CRC32C-verified, for
// InputArchive::load_from(read_func(), size_func()).
class CheckpointReader {
 public:
  explicit CheckpointReader(const std::string& url, const CheckpointOptions& options = {});
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  std::size_t size() const { return size_; }
  const char* data() const { return data_; }
  std::size_t read(std::uint64_t pos, void* buffer, std::size_t n) const;
  std::function<std::size_t(std::uint64_t, void*, std::size_t)> read_func() const;
  std::function<std::size_t()> size_func() const;
  const ObjectMetadata& metadata() const { return metadata_; }

 private:
  char* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t mapped_ = 0;  // bytes of data_ mapped with mmap; 0: a heap block
  ObjectMetadata metadata_;
};

void save(torch::serialize::OutputArchive& archive, const std::string& url,
          const CheckpointOptions& options = {});
void load(torch::serialize::InputArchive& archive, const std::string& url,
          const CheckpointOptions& options = {});

namespace internal {
// Runs `load` (a libtorch call) and turns its exceptions into Error naming `url`.
void load_checked(const std::string& url, const std::function<void()>& load);
// Loads `reader`'s bytes into `module`, first checking, when `strict`, that they hold exactly
// its parameters and buffers with the same shapes.
void load_module(torch::nn::Module& module, const CheckpointReader& reader, const std::string& url,
                 bool strict);

template <typename T, typename = void>
struct IsModuleHolder : std::false_type {};
template <typename T>
struct IsModuleHolder<T, std::void_t<typename T::ContainedType, decltype(std::declval<T&>().ptr())>>
    : std::true_type {};
template <typename T>
struct IsModulePtr : std::false_type {};
template <typename T>
struct IsModulePtr<std::shared_ptr<T>> : std::is_base_of<torch::nn::Module, T> {};

// The module inside `value` (a ModuleHolder such as torch::nn::Sequential, or a shared_ptr to
// a Module), or nullptr for anything else (optimizers, tensors).
template <typename Value>
torch::nn::Module* module_in(Value& value) {
  if constexpr (IsModuleHolder<Value>::value) {
    return value.ptr().get();
  } else if constexpr (IsModulePtr<Value>::value) {
    return value.get();
  } else {
    return nullptr;
  }
}
}  // namespace internal

// Anything torch::save accepts: modules, optimizers, tensors, std::vector<Tensor>.
template <typename Value>
ObjectMetadata save(const Value& value, const std::string& url,
                    const CheckpointOptions& options = {}) {
  CheckpointWriter writer(url, options);
  torch::save(value, writer.writer());
  return writer.commit();
}

// Anything torch::load accepts. A module is checked against the checkpoint first
// (CheckpointOptions::strict).
template <typename Value>
void load(Value& value, const std::string& url, const CheckpointOptions& options = {}) {
  CheckpointReader reader(url, options);
  if (torch::nn::Module* module = internal::module_in(value)) {
    internal::load_module(*module, reader, url, options.strict);
    return;
  }
  internal::load_checked(url, [&] { torch::load(value, reader.read_func(), reader.size_func()); });
}

// A checkpoint store in the shape of Lightning's CheckpointIO, for URLs on any backend.
class CheckpointIO {
 public:
  explicit CheckpointIO(CheckpointOptions options = {}) : options_(std::move(options)) {}

  template <typename Value>
  ObjectMetadata save(const Value& value, const std::string& url) const {
    return dataflux::save(value, url, options_);
  }
  template <typename Value>
  void load(Value& value, const std::string& url) const {
    dataflux::load(value, url, options_);
  }
  bool remove(const std::string& url) const;  // false when it did not exist
  bool exists(const std::string& url) const;
  // URLs of the checkpoints under a prefix URL ("gs://b/ckpt/"), sorted; temporary parts of
  // uploads in progress are skipped.
  std::vector<std::string> list(const std::string& prefix_url) const;
  const CheckpointOptions& options() const { return options_; }

 private:
  CheckpointOptions options_;
};

// Saves in the background. save() serializes the value into memory at once (a snapshot, so
// training may change the tensors immediately), then uploads on the library's pool for
// blocking work (no thread per save) and returns a future that yields the object's metadata or
// throws the upload's Error. With max_saves_in_flight saves pending, save() first waits for the
// oldest to finish.
class AsyncCheckpointer {
 public:
  explicit AsyncCheckpointer(CheckpointOptions options = {}, int max_saves_in_flight = 1);
  ~AsyncCheckpointer();  // waits for the saves in flight
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  template <typename Value>
  std::future<ObjectMetadata> save(const Value& value, const std::string& url) {
    wait_for_slot();
    auto snapshot = std::make_shared<std::vector<std::string>>();
    try {
      torch::save(value, [&](const void* data, std::size_t size) {
        append_snapshot(*snapshot, data, size);
        return size;
      });
    } catch (...) {
      release_slot();
      throw;
    }
    return upload(std::move(snapshot), url);
  }
  void wait();  // until no save is in flight
  int saves_in_flight() const;

 private:
  static void append_snapshot(std::vector<std::string>& chunks, const void* data, std::size_t size);
  void wait_for_slot();
  void release_slot();
  std::future<ObjectMetadata> upload(std::shared_ptr<std::vector<std::string>> snapshot,
                                     const std::string& url);

  CheckpointOptions options_;
  int max_in_flight_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  int in_flight_ = 0;
};

}  // namespace dataflux

#endif  // DATAFLUX_CHECKPOINT_H_
