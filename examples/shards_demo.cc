// Train from tar shards: pack a dataset into shards, train from them with ShardDataset
// (shards in a seeded random order, samples mixed in a shuffle buffer), stop in the middle of
// an epoch and resume exactly where it stopped.
//
//   dataflux_shards_demo                               # a fresh local directory
//   dataflux_shards_demo gs://bucket/run1/             # any store (STORAGE_EMULATOR_HOST...)
//   dataflux_shards_demo IMAGE_FOLDER_URL DEST_URL     # pack an ImageFolder tree of JPEG/PNG
//                                                      # files and read one decoded epoch
#include <torch/data.h>
#include <torch/nn.h>
#include <torch/optim.h>
#include <torch/serialize.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "dataflux/dataflux.h"

namespace {

constexpr int kSide = 8;

// Synthetic 8x8 images of horizontal (0) or vertical (1) stripes, as a libtorch dataset.
struct Stripes : torch::data::datasets::Dataset<Stripes> {
  torch::data::Example<> get(size_t i) override {
    const std::int64_t label = static_cast<std::int64_t>(i % 2);
    at::Tensor grid = at::arange(kSide).remainder(2).to(at::kFloat);
    at::Tensor image = label == 0 ? grid.unsqueeze(1).expand({kSide, kSide})
                                  : grid.unsqueeze(0).expand({kSide, kSide});
    at::Tensor noise = at::randn({kSide, kSide}, at::TensorOptions().dtype(at::kFloat)) * 0.3;
    return {(image + noise).contiguous(), at::scalar_tensor(label, at::kLong)};
  }
  torch::optional<size_t> size() const override { return 2000; }
};

std::string temp_dir() {
  char tmpl[] = "/tmp/dataflux-shards-demo-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  return std::string("file://") + tmpl + "/";
}

int image_folder(const std::string& source, const std::string& dest) {
  // `dataflux pack SOURCE DEST` does the same from the shell.
  dataflux::PackOptions options;
  options.writer.max_count = 1000;
  auto packed = dataflux::value_or_throw(dataflux::pack_objects(source, dest + "shard", options));
  std::cout << "packed " << packed.samples << " images of " << packed.classes.size()
            << " classes into " << packed.shards.size() << " shards\n";
  dataflux::ShardDataset data(dest, dataflux::ShardDatasetOptions()
                                        .fields({"jpg;jpeg;png", "cls"})
                                        .decode_images(true)
                                        .shuffle(true)
                                        .rank(0)
                                        .world_size(1));
  std::map<std::int64_t, int> per_class;
  while (auto batch = data.get_batch(64)) {
    for (auto& e : *batch) ++per_class[e.target.item<std::int64_t>()];
  }
  for (auto& [label, count] : per_class) {
    std::cout << "class " << label << " (" << packed.classes[static_cast<size_t>(label)]
              << "): " << count << " images\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc == 3) return image_folder(argv[1], argv[2]);
  std::string base = argc > 1 ? argv[1] : temp_dir();
  if (base.back() != '/') base += '/';
  torch::manual_seed(0);

  // 1. Pack: every example becomes a sample of data.pth and target.pth (torch.save format).
  Stripes stripes;
  dataflux::PackDatasetOptions pack;
  pack.writer.max_count = 250;  // 8 shards
  auto packed = dataflux::pack_dataset(stripes, base + "shards/stripes", pack);
  std::cout << "packed " << packed.samples << " samples into " << packed.shards.size()
            << " shards under " << base << "shards/\n";

  // 2. Train from the shards: a new shard order and buffer mix every epoch.
  auto options = dataflux::ShardDatasetOptions()
                     .fields({"data.pth", "target.pth"})
                     .shuffle(true)
                     .shuffle_buffer(500)
                     .seed(7)
                     .rank(0)
                     .world_size(1);
  dataflux::ShardDataset data(base + "shards/", options);
  torch::nn::Linear model(kSide * kSide, 2);
  torch::optim::SGD optimizer(model->parameters(), 0.1);
  auto step = [&](std::vector<torch::data::Example<>> batch) {
    auto stacked = torch::data::transforms::Stack<>().apply_batch(batch);
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(stacked.data.flatten(1)),
                                                     stacked.target);
    loss.backward();
    optimizer.step();
    return loss.item<double>();
  };
  double loss = 0;
  for (int i = 0; i < 20; ++i) loss = step(*data.get_batch(32));
  std::cout << "epoch 0: 20 batches, loss " << loss << "\n";

  // 3. A job stops mid-epoch and restarts: the dataset's position goes in the checkpoint.
  std::ostringstream saved;
  {
    torch::serialize::OutputArchive archive;
    data.save(archive);
    archive.save_to(saved);
  }
  dataflux::ShardDataset resumed(base + "shards/", options);
  std::istringstream in(saved.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  resumed.load(archive);
  int rest = 0;
  while (auto batch = resumed.get_batch(32)) {
    rest += static_cast<int>(batch->size());
    loss = step(std::move(*batch));
  }
  std::cout << "resumed at sample " << 20 * 32 << ", read the remaining " << rest
            << " of the epoch, loss " << loss << "\n";
  return rest == 2000 - 20 * 32 ? 0 : 1;
} catch (const std::exception& e) {
  std::cerr << "dataflux_shards_demo: " << e.what() << "\n";
  return 1;
}
