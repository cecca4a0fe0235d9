// Train a small CNN from objects in a store, checkpoint it to the store, restore it.
//
//   dataflux_train_demo                      # a fresh local directory (the embedded default)
//   dataflux_train_demo file:///tmp/demo/    # a local directory of your choice
//   STORAGE_EMULATOR_HOST=http://127.0.0.1:9023 dataflux_train_demo gs://demo-bucket/run1/
//
// The data are synthetic 16x16 images of horizontal or vertical stripes; each object holds one
// sample (a label byte then 256 float32 pixels). Training reads them through
// dataflux::MapDataset and libtorch's DataLoader (each batch fetched concurrently); the
// accuracy pass streams them through dataflux::StreamingDataset.
#include <torch/data.h>
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/serialize.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "dataflux/dataflux.h"

namespace {

constexpr int kSide = 16;
constexpr int kPixels = kSide * kSide;
constexpr int kSamples = 512;

std::string sample_bytes(int index) {
  std::mt19937 rng(index);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  const std::uint8_t label = index % 2;  // 0: horizontal stripes, 1: vertical
  std::string bytes(1 + kPixels * sizeof(float), '\0');
  bytes[0] = static_cast<char>(label);
  auto* pixels = reinterpret_cast<float*>(&bytes[1]);
  for (int y = 0; y < kSide; ++y) {
    for (int x = 0; x < kSide; ++x) {
      int stripe = (label == 0 ? y : x) / 2 % 2;
      pixels[y * kSide + x] = static_cast<float>(stripe) + noise(rng);
    }
  }
  return bytes;
}

// Bytes of one object -> (pixels, label): the dataset's transform.
torch::data::Example<> decode(at::Tensor bytes, const dataflux::ObjectEntry&, size_t) {
  at::Tensor label = bytes.slice(0, 0, 1).to(torch::kLong).squeeze();
  // Pixels start at byte 1, so copy them out aligned before viewing them as floats.
  at::Tensor pixels = bytes.slice(0, 1).clone().view(torch::kFloat).view({1, kSide, kSide});
  return {pixels, label};
}

struct NetImpl : torch::nn::Module {
  NetImpl()
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(1, 8, 3)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 16, 3)))),
        fc(register_module("fc", torch::nn::Linear(16 * 5 * 5, 2))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(conv1(x));                        // 14x14
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);  // 12x12 -> 6x6
    x = torch::adaptive_avg_pool2d(x, {5, 5});
    return fc(x.flatten(1));
  }
  torch::nn::Conv2d conv1, conv2;
  torch::nn::Linear fc;
};
TORCH_MODULE(Net);

// Every eighth sample, streamed in order through a StreamingDataset.
double accuracy(Net& net, const std::string& url, const dataflux::DatasetOptions& options) {
  torch::NoGradGuard no_grad;
  dataflux::StreamingDataset data(url, options);
  int correct = 0, total = 0;
  while (auto batch = data.get_batch(64)) {
    for (const auto& example : *batch) {
      if (total++ % 8 != 0) continue;
      auto predicted = net->forward(example.data.unsqueeze(0)).argmax(1).item<int64_t>();
      correct += predicted == example.target.item<int64_t>();
    }
  }
  return static_cast<double>(correct) / ((total + 7) / 8);
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/dataflux-demo-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  return std::string("file://") + tmpl + "/";
}

}  // namespace

int main(int argc, char** argv) try {
  std::string base = argc > 1 ? argv[1] : make_temp_dir();
  if (base.back() != '/') base += '/';
  dataflux::StorageUrl url = dataflux::value_or_throw(dataflux::StorageUrl::parse(base));
  std::shared_ptr<dataflux::ObjectStore> store =
      dataflux::value_or_throw(dataflux::open_store(url));
  std::cout << "dataflux demo on " << url.to_string() << " (" << store->backend() << " store)\n";

  // 1. Put a synthetic dataset in the store.
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kSamples; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "train/sample-%05d.bin", i);
    dataflux::WriteObjectRequest request;
    request.bucket = url.bucket;
    request.object = url.object + name;
    dataflux::value_or_throw(store->write_object(request, sample_bytes(i)));
  }
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::cout << "wrote " << kSamples << " samples in " << seconds() << " s\n";

  // 2. Train for two epochs: MapDataset lists the prefix once and fetches each batch
  //    concurrently; libtorch's DataLoader shuffles and batches.
  torch::manual_seed(0);
  const std::string train_url = url.to_string() + "train/";
  auto options = dataflux::DatasetOptions().transform(decode);
  dataflux::MapDataset dataset(train_url, options);
  std::cout << "listed " << *dataset.size() << " objects\n";
  auto loader =
      torch::data::make_data_loader(std::move(dataset).map(torch::data::transforms::Stack<>()),
                                    torch::data::DataLoaderOptions().batch_size(32).workers(2));
  Net net;
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-2));
  start = std::chrono::steady_clock::now();
  for (int epoch = 1; epoch <= 2; ++epoch) {
    double loss_sum = 0;
    int batches = 0;
    for (auto& batch : *loader) {
      optimizer.zero_grad();
      auto loss = torch::nn::functional::cross_entropy(net->forward(batch.data), batch.target);
      loss.backward();
      optimizer.step();
      loss_sum += loss.item<double>();
      ++batches;
    }
    std::cout << "epoch " << epoch << ": mean loss " << loss_sum / batches << "\n";
  }
  double trained_accuracy = accuracy(net, train_url, options);
  std::cout << "trained in " << seconds() << " s; accuracy " << trained_accuracy << "\n";

  // 4. Checkpoint model and optimizer to the store (streamed, published atomically), then
  //    restore both into fresh objects with parallel ranged reads.
  const std::string model_url = url.to_string() + "ckpt/model.pt";
  const std::string optimizer_url = url.to_string() + "ckpt/optimizer.pt";
  dataflux::AsyncCheckpointer async;
  auto optimizer_saved = async.save(optimizer, optimizer_url);  // uploads in the background
  auto saved = dataflux::save(net, model_url);
  std::cout << "checkpoint " << model_url << ": " << saved.size << " bytes; optimizer "
            << optimizer_saved.get().size << " bytes (async)\n";

  Net restored;
  dataflux::load(restored, model_url);
  torch::optim::Adam restored_optimizer(restored->parameters(), torch::optim::AdamOptions(1e-2));
  dataflux::load(restored_optimizer, optimizer_url);
  auto a = net->parameters();
  auto b = restored->parameters();
  bool identical = a.size() == b.size();
  for (size_t i = 0; identical && i < a.size(); ++i) identical = torch::equal(a[i], b[i]);
  double restored_accuracy = accuracy(restored, train_url, options);
  std::cout << "restored checkpoint: parameters " << (identical ? "identical" : "DIFFERENT")
            << "; accuracy " << restored_accuracy << "\n";
  if (!identical || restored_accuracy != trained_accuracy || trained_accuracy < 0.9) {
    std::cerr << "demo FAILED\n";
    return 1;
  }
  std::cout << "demo OK\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
