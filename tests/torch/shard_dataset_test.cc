// ShardDataset on every backend: every sample once per epoch, reproducible orders, disjoint
// ranks, exact resume in the middle of a shard with the shuffle buffer full, and clear errors.
#include "dataflux/shard_dataset.h"

#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/data/dataloader.h>
#include <torch/data/samplers/random.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include "shards/shards_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;

std::string as_string(const at::Tensor& bytes) {
  return std::string(static_cast<const char*>(bytes.data_ptr()), bytes.numel());
}

class ShardDatasetTest : public ShardBackendTest {
 protected:
  // `shards` shards of `per_shard` samples "s/NNNN" with fields "bin" (its key repeated) and
  // "cls" (NNNN % 10).
  void write_shards(const std::string& prefix, int shards, int per_shard) {
    ShardWriterOptions o;
    o.store = store();
    o.max_count = static_cast<std::uint64_t>(per_shard);
    auto w = ShardWriter::create(root_ + prefix, o);
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < shards * per_shard; ++i) {
      char key[16];
      std::snprintf(key, sizeof(key), "s/%04d", i);
      std::string bin;
      for (int k = 0; k <= i % 7; ++k) bin += key;
      const std::string cls = std::to_string(i % 10);
      ASSERT_TRUE((*w)->write(key, {{"bin", bin}, {"cls", cls}}).ok());
    }
    auto done = (*w)->close();
    ASSERT_TRUE(done.ok()) << done.status();
    total_ += shards * per_shard;
  }

  ShardDatasetOptions options() const {
    return ShardDatasetOptions().store(store()).fields({"bin", "cls"}).rank(0).world_size(1);
  }

  // Every sample's key (from its bytes), batch by batch, until the epoch ends.
  static std::vector<std::string> drain(ShardDataset& data, std::size_t batch = 5,
                                        std::size_t limit = SIZE_MAX) {
    std::vector<std::string> keys;
    while (keys.size() < limit) {
      auto b = data.get_batch(std::min(batch, limit - keys.size()));
      if (!b) break;
      for (auto& e : *b) {
        const std::string bin = as_string(e.data);
        const std::string key = bin.substr(0, 6);
        EXPECT_EQ(e.target.item<std::int64_t>(), std::stoi(key.substr(2)) % 10) << key;
        keys.push_back(key);
      }
    }
    return keys;
  }

  int total_ = 0;
};

TEST_P(ShardDatasetTest, EveryEpochHandsOutEverySampleOnceInAReproducibleOrder) {
  write_shards("d/train", 5, 8);
  ShardDataset data(root_ + "d/", options().shuffle(true).seed(3).shuffle_buffer(10));
  EXPECT_EQ(data.shards().size(), 5u);
  auto epoch0 = drain(data);
  ASSERT_EQ(epoch0.size(), 40u);
  EXPECT_EQ(std::set<std::string>(epoch0.begin(), epoch0.end()).size(), 40u);
  EXPECT_FALSE(data.get_batch(5).has_value());  // until reset()
  data.reset();
  auto epoch1 = drain(data);
  EXPECT_EQ(std::set<std::string>(epoch1.begin(), epoch1.end()).size(), 40u);
  EXPECT_NE(epoch0, epoch1);
  ShardDataset again(root_ + "d/", options().shuffle(true).seed(3).shuffle_buffer(10));
  EXPECT_EQ(drain(again), epoch0);
  // Mixed across shards: the first 8 samples do not all come from one shard.
  std::set<int> first_shards;
  for (int i = 0; i < 8; ++i) first_shards.insert(std::stoi(epoch0[i].substr(2)) / 8);
  EXPECT_GT(first_shards.size(), 1u);
  // Without shuffle: the shards' own order.
  ShardDataset plain(root_ + "d/", options());
  auto in_order = drain(plain);
  for (int i = 0; i < 40; ++i) {
    char key[16];
    std::snprintf(key, sizeof(key), "s/%04d", i);
    EXPECT_EQ(in_order[i], key);
  }
}

TEST_P(ShardDatasetTest, RanksGetDisjointShardsThatTogetherCoverTheEpoch) {
  write_shards("r/train", 5, 4);
  std::set<std::string> all;
  for (int rank = 0; rank < 2; ++rank) {
    ShardDataset data(root_ + "r/", options().shuffle(true).seed(9).rank(rank).world_size(2));
    for (const auto& key : drain(data)) EXPECT_TRUE(all.insert(key).second) << key;
  }
  EXPECT_EQ(all.size(), 20u);
  try {
    ShardDataset too_many(root_ + "r/", options().rank(0).world_size(6));
    ADD_FAILURE() << "6 ranks on 5 shards";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("5 shards cannot feed 6 ranks"));
  }
}

TEST_P(ShardDatasetTest, ResumesExactlyMidShardWithTheBufferFullOnTwoRanks) {
  write_shards("x/train", 6, 9);
  for (int rank = 0; rank < 2; ++rank) {
    auto o = options().shuffle(true).seed(5).shuffle_buffer(12).rank(rank).world_size(2);
    ShardDataset whole(root_ + "x/", o);
    whole.set_epoch(2);
    const auto expected = drain(whole);
    ASSERT_EQ(expected.size(), 27u);
    for (std::size_t stop : {0u, 1u, 7u, 13u, 20u, 27u}) {
      ShardDataset first(root_ + "x/", o);
      first.set_epoch(2);
      auto before = drain(first, 3, stop);
      std::ostringstream bytes;
      {
        torch::serialize::OutputArchive archive;
        first.save(archive);
        archive.save_to(bytes);
      }
      ShardDataset second(root_ + "x/", o);  // a new process would start here
      std::istringstream in(bytes.str());
      torch::serialize::InputArchive archive;
      archive.load_from(in);
      second.load(archive);
      second.reset();  // the DataLoader's reset at the start of the epoch keeps the position
      EXPECT_EQ(second.epoch(), stop == 27 ? 3u : 2u);
      auto after = stop == 27 ? std::vector<std::string>{} : drain(second, 4);
      before.insert(before.end(), after.begin(), after.end());
      EXPECT_EQ(before, expected) << "rank " << rank << " stop " << stop;
    }
  }
}

TEST_P(ShardDatasetTest, ALoadIntoAnotherConfigurationIsRefused) {
  write_shards("c/train", 2, 3);
  ShardDataset a(root_ + "c/", options().shuffle(true).seed(1));
  std::ostringstream bytes;
  torch::serialize::OutputArchive out;
  a.save(out);
  out.save_to(bytes);
  ShardDataset b(root_ + "c/", options().shuffle(true).seed(2));
  std::istringstream in(bytes.str());
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  try {
    b.load(archive);
    ADD_FAILURE() << "loaded another seed's state";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("seed"));
  }
}

TEST_P(ShardDatasetTest, SeveralPrefixesAndAMissingFieldErrorOrSkip) {
  write_shards("p1/a", 1, 3);
  ShardWriterOptions o;
  o.store = store();
  auto w = ShardWriter::create(root_ + "p2/b", o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->write("s/9000", {{"bin", "s/9000"}, {"cls", "0"}}).ok());
  ASSERT_TRUE((*w)->write("s/9001", {{"txt", "no bin here"}}).ok());
  ASSERT_TRUE((*w)->close().ok());
  ShardDataset skip(root_ + "p1/",
                    options().more_urls({root_ + "p2/"}).missing_field(MissingField::kSkip));
  EXPECT_EQ(skip.shards().size(), 2u);
  EXPECT_EQ(drain(skip).size(), 4u);
  ShardDataset strict(root_ + "p1/", options().more_urls({root_ + "p2/"}));
  try {
    drain(strict);
    ADD_FAILURE() << "a sample without \"bin\" passed";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("sample \"s/9001\" has no field \"bin\" (it has txt)"));
    EXPECT_THAT(e.what(), HasSubstr("b-000000.tar"));
  }
}

TEST_P(ShardDatasetTest, ACorruptShardIsAnErrorNamingItAndTheRetryFailsTheSameWay) {
  write_shards("z/train", 2, 3);
  const std::string url = root_ + "z/train-000001.tar";
  std::string bytes = read(url);
  put(url, bytes.substr(0, bytes.size() / 2));
  ShardDataset data(root_ + "z/", options());
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      drain(data, 2);
      ADD_FAILURE() << "a truncated shard read through";
    } catch (const Error& e) {
      EXPECT_EQ(e.status().code(), absl::StatusCode::kDataLoss) << e.what();
      EXPECT_THAT(e.what(), HasSubstr("train-000001.tar"));
    }
  }
}

TEST_P(ShardDatasetTest, TrainsThroughTheStatefulDataLoader) {
  write_shards("l/train", 3, 10);
  auto loader = torch::data::make_data_loader(ShardDataset(root_ + "l/", options().shuffle(true)),
                                              torch::data::DataLoaderOptions(8).workers(2));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::set<std::string> keys;
    for (auto& batch : *loader) {
      for (auto& e : batch) keys.insert(as_string(e.data).substr(0, 6));
    }
    EXPECT_EQ(keys.size(), 30u) << epoch;
  }
}

TEST_P(ShardDatasetTest, ShardMapDatasetReadsAnySampleWithOneRangedGet) {
  write_shards("m/train", 3, 7);
  ShardMapDataset data(root_ + "m/",
                       ShardMapDatasetOptions().store(store()).fields({"bin", "cls"}));
  ASSERT_EQ(data.size().value(), 21u);
  std::vector<size_t> indices = {20, 0, 13, 7, 7};
  auto batch = data.get_batch(indices);
  ASSERT_EQ(batch.size(), indices.size());
  for (std::size_t k = 0; k < indices.size(); ++k) {
    char key[16];
    std::snprintf(key, sizeof(key), "s/%04zu", indices[k]);
    EXPECT_EQ(as_string(batch[k].data).substr(0, 6), key);
    EXPECT_EQ(batch[k].target.item<std::int64_t>(), static_cast<std::int64_t>(indices[k] % 10));
  }
  EXPECT_EQ(data.locate(13).first, 1u);
  EXPECT_EQ(data.locate(13).second->key, "s/0013");
  // Through the DataLoader with a RandomSampler: every sample once.
  auto loader = torch::data::make_data_loader(data, torch::data::samplers::RandomSampler(21),
                                              torch::data::DataLoaderOptions(4).workers(2));
  std::set<std::string> keys;
  for (auto& b : *loader) {
    for (auto& e : b) keys.insert(as_string(e.data).substr(0, 6));
  }
  EXPECT_EQ(keys.size(), 21u);
  EXPECT_THROW(data.get(21), Error);
}

TEST_P(ShardDatasetTest, ShardMapDatasetRefusesStaleOrMissingIndexesAndCatchesDamage) {
  write_shards("n/train", 2, 4);
  const std::string shard = root_ + "n/train-000001.tar";
  const std::string index_url = shard + ".index.json";
  // Damage a byte of sample s/0005's data, then make the index name the new version, as an
  // index that no longer matches its bytes would.
  std::string bytes = read(shard);
  auto index = shard_index_from_json(read(index_url), index_url).value();
  const auto& victim = index.samples[1];
  bytes[victim.fields.front().offset] ^= 0x01;
  put(shard, bytes);
  auto opts = ShardMapDatasetOptions().store(store()).fields({"bin", "cls"});
  try {
    ShardMapDataset stale(root_ + "n/", opts);
    if (GetParam() != "s3") ADD_FAILURE() << "an index of another shard version was accepted";
    // S3 listings carry no version: the reads, pinned to the indexed ETag, refuse instead.
    stale.get(4);
    ADD_FAILURE() << "a read of another shard version was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition) << e.what();
    if (GetParam() != "s3") {
      EXPECT_THAT(e.what(), HasSubstr("describes another version"));
    }
  }
  auto listed = list_shards({root_ + "n/"}, store()).value();
  index.generation = listed.shards[1].generation;
  index.etag.clear();
  put(index_url, shard_index_to_json(index));
  ShardMapDataset data(root_ + "n/", opts);
  EXPECT_NO_THROW(data.get(4));
  try {
    data.get(5);
    ADD_FAILURE() << "damaged bytes were handed out";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kDataLoss) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("sample \"s/0005\" does not match its index's CRC32C"));
    EXPECT_THAT(e.what(), HasSubstr("train-000001.tar"));
  }
  // A shard without an index.
  put(root_ + "n/extra.tar", read(root_ + "n/train-000000.tar"));
  try {
    ShardMapDataset missing(root_ + "n/", opts);
    ADD_FAILURE() << "a shard without an index was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(e.what(), HasSubstr("extra.tar has no index"));
  }
}

TEST_P(ShardDatasetTest, PacksAnImageFolderAndTrainsFromDecodedImages) {
  // Three 6x4 RGB JPEGs per class, encoded here with TurboJPEG.
  tjhandle encoder = tjInitCompress();
  ASSERT_NE(encoder, nullptr);
  for (const char* cls : {"a", "b"}) {
    for (int i = 0; i < 3; ++i) {
      std::vector<unsigned char> rgb(6 * 4 * 3, static_cast<unsigned char>(40 * i + 20));
      unsigned char* jpeg = nullptr;
      unsigned long size = 0;
      ASSERT_EQ(
          tjCompress2(encoder, rgb.data(), 6, 0, 4, TJPF_RGB, &jpeg, &size, TJSAMP_444, 95, 0), 0);
      put(root_ + "img/" + cls + "/" + std::to_string(i) + ".jpg",
          std::string(reinterpret_cast<char*>(jpeg), size));
      tjFree(jpeg);
    }
  }
  tjDestroy(encoder);
  put(root_ + "img/b/broken.jpg", "not a jpeg at all");
  PackOptions pack;
  pack.source_store = store();
  pack.writer.store = store();
  auto packed = pack_objects(root_ + "img/", root_ + "packed/s", pack);
  ASSERT_TRUE(packed.ok()) << packed.status();
  EXPECT_EQ(packed->samples, 7u);
  ShardDataset data(root_ + "packed/",
                    options().fields({"jpg;png", "cls"}).decode_images(true).shuffle(true));
  int images = 0;
  try {
    while (auto batch = data.get_batch(2)) {
      for (auto& e : *batch) {
        EXPECT_EQ(e.data.sizes(), (at::IntArrayRef{4, 6, 3}));
        EXPECT_EQ(e.data.scalar_type(), at::kByte);
        ++images;
      }
    }
    ADD_FAILURE() << "the broken image decoded";
  } catch (const Error& e) {
    // The corrupt image is named: its shard and its key.
    EXPECT_THAT(e.what(), HasSubstr("b/broken.jpg"));
    EXPECT_THAT(e.what(), HasSubstr("packed/s-000000.tar"));
  }
  EXPECT_LE(images, 6);
}

INSTANTIATE_TEST_SUITE_P(Backends, ShardDatasetTest, ::testing::Values("local", "gcs", "s3"),
                         [](const auto& info) { return info.param; });

// A libtorch dataset of Example<> to shards, read back by ShardDataset and by Python's
// torch.load (the independent reader the format promises).
struct Squares : torch::data::datasets::Dataset<Squares> {
  torch::data::Example<> get(size_t i) override {
    return {at::arange(static_cast<std::int64_t>(i % 5 + 1), at::kFloat) * static_cast<float>(i),
            at::scalar_tensor(static_cast<std::int64_t>(i), at::kLong)};
  }
  torch::optional<size_t> size() const override { return 23; }
};

TEST(PackDataset, ExamplesRoundTripThroughShardDatasetAndPythonTorchLoad) {
  char tmpl[] = "/tmp/dataflux-packds-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  Squares squares;
  PackDatasetOptions o;
  o.writer.max_count = 10;
  o.workers = 3;
  std::uint64_t calls = 0;
  o.progress = [&](std::uint64_t done, std::uint64_t all, std::uint64_t) {
    EXPECT_EQ(done, ++calls);
    EXPECT_EQ(all, 23u);
  };
  auto packed = pack_dataset(squares, dir + "/sq", o);
  EXPECT_EQ(packed.samples, 23u);
  ASSERT_EQ(packed.shards.size(), 3u);
  ShardDataset data("file://" + dir + "/",
                    ShardDatasetOptions().fields({"data.pth", "target.pth"}).rank(0).world_size(1));
  std::size_t seen = 0;
  while (auto batch = data.get_batch(4)) {
    for (auto& e : *batch) {
      const auto i = static_cast<size_t>(e.target.item<std::int64_t>());
      EXPECT_TRUE(at::equal(e.data, squares.get(i).data)) << i;
      ++seen;
    }
  }
  EXPECT_EQ(seen, 23u);
  // Debian's Python, which has Debian's python3-torch (a pyenv python3 on PATH may not).
  const std::string python =
      std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  if (std::system((python + " -c 'import torch' 2>/dev/null").c_str()) != 0) {
    std::filesystem::remove_all(dir);
    GTEST_SKIP() << "Python's torch is not installed (python3-torch)";
  }
  std::ofstream(dir + "/check.py")
      << "import io, sys, tarfile, torch\n"
         "n = 0\n"
         "for shard in sys.argv[1:]:\n"
         "    with tarfile.open(shard) as t:\n"
         "        for m in t:\n"
         "            v = torch.load(io.BytesIO(t.extractfile(m).read()))\n"
         "            if m.name.endswith('.target.pth'):\n"
         "                i = int(v)\n"
         "                assert i == int(m.name.split('.')[0]), m.name\n"
         "            else:\n"
         "                i = int(m.name.split('.')[0])\n"
         "                want = torch.arange(i % 5 + 1, dtype=torch.float32) * i\n"
         "                assert torch.equal(v, want), (m.name, v)\n"
         "            n += 1\n"
         "print(n)\n";
  std::string cmd = python + " " + dir + "/check.py";
  for (const auto& shard : packed.shards)
    cmd += " " + StorageUrl::parse(shard.url)->to_string().substr(7);
  cmd += " > " + dir + "/out";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(dir + "/out");
  std::string count;
  in >> count;
  EXPECT_EQ(count, "46");
  std::filesystem::remove_all(dir);
}

TEST(DecodeField, LabelsPthAndBytes) {
  ShardSample s{"k", "gs://b/s.tar", {}};
  auto bytes = [](const std::string& text) {
    auto t = at::empty({static_cast<std::int64_t>(text.size())}, at::kByte);
    std::memcpy(t.data_ptr(), text.data(), text.size());
    return t;
  };
  EXPECT_EQ(decode_field(s, "cls", bytes(" 42\n"), false).item<std::int64_t>(), 42);
  EXPECT_EQ(as_string(decode_field(s, "txt", bytes("hi"), false)), "hi");
  try {
    decode_field(s, "cls", bytes("cat"), false);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("gs://b/s.tar: sample \"k\" field \"cls\""));
  }
  at::Tensor t = at::arange(6, at::kFloat).reshape({2, 3});
  auto pickled = torch::jit::pickle_save(t);
  auto back = decode_field(s, "pth", bytes(std::string(pickled.begin(), pickled.end())), false);
  EXPECT_TRUE(at::equal(back, t));
}

}  // namespace
}  // namespace dataflux::testing
