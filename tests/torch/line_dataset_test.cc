// LineDataset on every backend: every line once, plain and gzip objects, CRLF, empty lines,
// the line cap, ranks, and exact resume.
#include "dataflux/line_dataset.h"

#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "shards/shards_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;

std::string as_string(const at::Tensor& bytes) {
  return std::string(static_cast<const char*>(bytes.data_ptr()), bytes.numel());
}

std::string gzip(const std::string& text) {
  char tmpl[] = "/tmp/dataflux-gz-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  std::ofstream(dir + "/t", std::ios::binary) << text;
  EXPECT_EQ(std::system(("gzip -n " + dir + "/t").c_str()), 0);
  std::ifstream in(dir + "/t.gz", std::ios::binary);
  std::string out((std::istreambuf_iterator<char>(in)), {});
  std::filesystem::remove_all(dir);
  return out;
}

class LineDatasetTest : public ShardBackendTest {
 protected:
  // 6 objects of 25 lines "oN-lM", one gzip-compressed, one with CRLF and empty lines.
  void write_objects(const std::string& prefix) {
    for (int o = 0; o < 6; ++o) {
      std::string text;
      for (int l = 0; l < 25; ++l) {
        text += "o" + std::to_string(o) + "-l" + std::to_string(l) + (o == 2 ? "\r\n" : "\n");
        if (o == 2 && l % 5 == 0) text += "\n";  // empty lines, left out by default
      }
      if (o == 5) text.pop_back();  // the last line needs no newline
      put(root_ + prefix + "part-" + std::to_string(o) + (o == 3 ? ".txt.gz" : ".txt"),
          o == 3 ? gzip(text) : text);
    }
  }
  LineDatasetOptions options() const {
    return LineDatasetOptions().store(store()).rank(0).world_size(1);
  }
  static std::vector<std::string> drain(LineDataset& data, std::size_t batch = 16,
                                        std::size_t limit = SIZE_MAX) {
    std::vector<std::string> lines;
    while (lines.size() < limit) {
      auto b = data.get_batch(std::min(batch, limit - lines.size()));
      if (!b) break;
      for (auto& e : *b) {
        const std::string line = as_string(e.data);
        // The target is the line's number in its object: "oN-lM" is line M (plus the empty
        // lines before it in object 2: one after lines 0, 5, 10...).
        const int m = std::stoi(line.substr(line.find('l') + 1));
        const int o = std::stoi(line.substr(1, line.find('-') - 1));
        EXPECT_EQ(e.target.item<std::int64_t>(), o == 2 ? m + (m + 4) / 5 : m) << line;
        lines.push_back(line);
      }
    }
    return lines;
  }
};

TEST_P(LineDatasetTest, EveryLineOncePlainGzipAndCrlfInAReproducibleMix) {
  write_objects("t/");
  LineDataset data(root_ + "t/", options().shuffle(true).seed(4).shuffle_buffer(30));
  auto epoch0 = drain(data);
  ASSERT_EQ(epoch0.size(), 150u);
  std::set<std::string> unique(epoch0.begin(), epoch0.end());
  EXPECT_EQ(unique.size(), 150u);
  EXPECT_TRUE(unique.count("o2-l7"));   // "\r" dropped
  EXPECT_TRUE(unique.count("o3-l24"));  // from the gzip object
  EXPECT_TRUE(unique.count("o5-l24"));  // no final newline
  LineDataset again(root_ + "t/", options().shuffle(true).seed(4).shuffle_buffer(30));
  EXPECT_EQ(drain(again), epoch0);
  data.reset();
  EXPECT_NE(drain(data), epoch0);
}

TEST_P(LineDatasetTest, RanksSplitObjectsAndResumeExactly) {
  write_objects("r/");
  std::set<std::string> all;
  for (int rank = 0; rank < 2; ++rank) {
    auto o = options().shuffle(true).seed(8).shuffle_buffer(20).rank(rank).world_size(2);
    LineDataset whole(root_ + "r/", o);
    const auto expected = drain(whole);
    for (const auto& l : expected) EXPECT_TRUE(all.insert(l).second) << l;
    for (std::size_t stop : {3u, 40u, 74u}) {
      LineDataset first(root_ + "r/", o);
      auto got = drain(first, 7, stop);
      std::ostringstream bytes;
      torch::serialize::OutputArchive out;
      first.save(out);
      out.save_to(bytes);
      LineDataset second(root_ + "r/", o);
      std::istringstream in(bytes.str());
      torch::serialize::InputArchive archive;
      archive.load_from(in);
      second.load(archive);
      second.reset();
      auto rest = drain(second, 5);
      got.insert(got.end(), rest.begin(), rest.end());
      EXPECT_EQ(got, expected) << "rank " << rank << " stop " << stop;
    }
  }
  EXPECT_EQ(all.size(), 150u);
}

TEST_P(LineDatasetTest, ALineOverTheCapNamesTheObjectAndOffset) {
  put(root_ + "long/a.txt", "short\n" + std::string(3000, 'x') + "\nend\n");
  LineDataset data(root_ + "long/", options().max_line_bytes(1000));
  try {
    drain(data);
    ADD_FAILURE() << "a 3000-byte line passed a 1000-byte cap";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(e.what(), HasSubstr("long/a.txt: the line at byte 6 is longer than the 1000-byte"));
  }
  put(root_ + "bad/a.txt.gz", gzip("hello\n").substr(0, 12));
  LineDataset truncated(root_ + "bad/", options());
  try {
    drain(truncated);
    ADD_FAILURE() << "a truncated gzip object read through";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kDataLoss) << e.what();
    EXPECT_THAT(e.what(), HasSubstr("bad/a.txt.gz"));
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, LineDatasetTest, ::testing::Values("local", "gcs", "s3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace dataflux::testing
