// The S3 store end to end against the emulator (or, with DATAFLUX_S3_TEST_ENDPOINT, against
// a third-party S3 server such as s3rver).
#include <algorithm>
#include <future>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "dataflux/crc32c.h"
#include "dataflux/fetch.h"
#include "dataflux/list_prefixes.h"
#include "dataflux/open_store.h"
#include "s3/s3_client.h"
#include "s3/s3_multipart.h"
#include "s3/s3_xml.h"
#include "s3_test_env.h"

namespace dataflux::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class S3StoreTest : public S3TestEnv {};

TEST_F(S3StoreTest, PutThenReadHeadAndVerifyChecksums) {
  const std::string data = random_data(300'000, 1);
  auto written = store_->write_object(write("dir/a b+c.bin"), data);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->size, data.size());
  EXPECT_EQ(written->crc32c, crc32c(data));

  auto meta = store_->get_object_metadata(bucket_, "dir/a b+c.bin");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, data.size());
  EXPECT_EQ(meta->md5_hash, written->md5_hash);  // a plain (single-part) ETag is the MD5

  std::string buffer(data.size(), '\0');
  auto read = store_->read_object(read_req("dir/a b+c.bin"), buffer.data(), buffer.size());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->bytes, data.size());
  EXPECT_EQ(read->object_size, data.size());
  EXPECT_EQ(buffer, data);

  // The caller's expected CRC32C is checked against the bytes.
  auto wrong = read_req("dir/a b+c.bin");
  wrong.expected_crc32c = crc32c(data) ^ 1;
  auto mismatch = store_->read_object(wrong, buffer.data(), buffer.size());
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kDataLoss) << mismatch.status();
}

// Keys are sent and signed exactly as named: no dot-segment removal, no slash folding (libcurl
// would otherwise turn "a/../b" into "b" and sign one path while sending another).
TEST_F(S3StoreTest, KeysRoundTripExactlyAsNamed) {
  std::vector<std::string> keys = {"dots/a/../b",  "dots/./c",
                                   "dots/..d",     "slashes//double",
                                   "trail/dot.",   "sp ace",
                                   "pl+us=eq&amp", "pct%2Fkept",
                                   "q?mark#hash",  "uni/d\xc3\xa9j\xc3\xa0-\xe2\x82\xac",
                                   "a/b/../../e"};
  if (external_) {
    // s3rver answers 404 to a path with "//" and resolves "." and ".." segments before it
    // stores a key (S3 and the emulator do neither): those keys are for the emulator only.
    keys.erase(std::remove_if(keys.begin(), keys.end(),
                              [](const std::string& k) {
                                return absl::StrContains(k, "//") || absl::StrContains(k, "/./") ||
                                       absl::StrContains(k, "/../");
                              }),
               keys.end());
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string data = "object " + std::to_string(i) + " " + keys[i];
    auto written = store_->write_object(write(keys[i]), data);
    ASSERT_TRUE(written.ok()) << keys[i] << ": " << written.status();
    EXPECT_EQ(written->name, keys[i]);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string data = "object " + std::to_string(i) + " " + keys[i];
    auto meta = store_->get_object_metadata(bucket_, keys[i]);
    ASSERT_TRUE(meta.ok()) << keys[i] << ": " << meta.status();
    EXPECT_EQ(meta->size, data.size()) << keys[i];
    std::string buffer(data.size(), '\0');
    auto read = store_->read_object(read_req(keys[i]), buffer.data(), buffer.size());
    ASSERT_TRUE(read.ok()) << keys[i] << ": " << read.status();
    EXPECT_EQ(buffer, data) << keys[i];
  }
  // Listed under exactly these names, each once.
  ListObjectsRequest list;
  list.bucket = bucket_;
  std::vector<std::string> listed;
  for (;;) {
    auto page = store_->list_objects(list);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const auto& o : page->objects) listed.push_back(o.name);
    if (page->next_page_token.empty()) break;
    list.page_token = page->next_page_token;
  }
  std::vector<std::string> expected = keys;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(listed, expected);
  // And deleted exactly as named, nothing else with it.
  if (external_) return;
  DeleteObjectRequest remove;
  remove.bucket = bucket_;
  remove.object = "dots/a/../b";
  ASSERT_TRUE(store_->delete_object(remove).ok());
  EXPECT_EQ(store_->get_object_metadata(bucket_, "dots/a/../b").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->get_object_metadata(bucket_, "dots/./c").ok());
}

// Replies lost after S3 applied the request: a retried PUT If-None-Match: * meets its own
// object (412), a retried CompleteMultipartUpload meets NoSuchUpload; both are success when
// the live object is exactly ours.
TEST_F(S3StoreTest, WritesWhoseReplyWasLostSucceed) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  const std::string data = random_data(4000, 31);
  emu_->inject_fault("s3.put", emulator::Fault::lost_reply());
  WriteObjectRequest create = write("put-once");
  create.if_generation_match = 0;
  auto written = store_->write_object(create, data);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(emu_->request_count("s3.put"), 2u);
  EXPECT_EQ(read_all("put-once"), data);

  const std::string big = random_data((5u << 20) + 100, 32);
  auto upload = store_->start_multipart_upload(write("complete-once"));
  ASSERT_TRUE(upload.ok()) << upload.status();
  ASSERT_TRUE((*upload)->upload_part(1, std::string_view(big).substr(0, 5u << 20)).ok());
  ASSERT_TRUE((*upload)->upload_part(2, std::string_view(big).substr(5u << 20)).ok());
  emu_->inject_fault("s3.complete_multipart", emulator::Fault::lost_reply());
  auto completed = (*upload)->complete();
  ASSERT_TRUE(completed.ok()) << completed.status();
  EXPECT_EQ(completed->size, big.size());
  EXPECT_EQ(emu_->request_count("s3.complete_multipart"), 2u);
  EXPECT_EQ(read_all("complete-once"), big);
}

// A save that crashed mid-upload leaves an S3 multipart upload: no object, invisible to
// listings, its parts billed until aborted. cleanup() finds and aborts it (not a younger one,
// by default), within its prefix only.
TEST_F(S3StoreTest, CleanupAbortsUnfinishedMultipartUploads) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  auto client = internal::S3Client::create(options()).value();
  auto start = [&](const std::string& key) {
    internal::S3Call call;
    call.method = "POST";
    call.bucket = bucket_;
    call.key = key;
    call.query = {{"uploads", ""}};
    auto r = client->execute(call, internal::Idempotency::kIdempotent, "create");
    ASSERT_TRUE(r.ok()) << r.status();
    internal::S3Call part;
    part.method = "PUT";
    part.bucket = bucket_;
    part.key = key;
    part.query = {{"partNumber", "1"},
                  {"uploadId", internal::parse_xml(r->body)->child_text("UploadId")}};
    part.body = "a part of a save that crashed";
    ASSERT_TRUE(client->execute(part, internal::Idempotency::kIdempotent, "part").ok());
  };
  start("ckpt/epoch-1.pt");
  start("ckpt/epoch-2.pt");
  start("other/x.pt");
  auto pending = store_->list_pending_uploads(bucket_, "ckpt/");
  ASSERT_TRUE(pending.ok()) << pending.status();
  ASSERT_EQ(pending->size(), 2u);
  EXPECT_EQ((*pending)[0].object, "ckpt/epoch-1.pt");

  CleanupOptions options;
  options.prefix = "ckpt/";
  EXPECT_EQ(cleanup(*store_, bucket_, options).value(), 0u);  // young: a save may be running
  options.min_age = std::chrono::seconds(0);
  options.dry_run = true;
  std::vector<std::string> reported;
  options.on_abort = [&](const PendingUpload& u) { reported.push_back(u.object); };
  EXPECT_EQ(cleanup(*store_, bucket_, options).value(), 2u);
  EXPECT_EQ(store_->list_pending_uploads(bucket_, "ckpt/")->size(), 2u);  // a dry run aborts none
  options.dry_run = false;
  EXPECT_EQ(cleanup(*store_, bucket_, options).value(), 2u);
  EXPECT_TRUE(store_->list_pending_uploads(bucket_, "ckpt/")->empty());
  EXPECT_EQ(store_->list_pending_uploads(bucket_, "")->size(), 1u);  // outside the prefix
  EXPECT_EQ(reported, (std::vector<std::string>{"ckpt/epoch-1.pt", "ckpt/epoch-2.pt",
                                                "ckpt/epoch-1.pt", "ckpt/epoch-2.pt"}));
}

TEST_F(S3StoreTest, APutStoredWithOtherBytesLeavesNoObject) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  emu_->inject_fault("s3.put", emulator::Fault::corrupt_upload());
  auto written = store_->write_object(write("damaged"), random_data(3000, 5));
  EXPECT_EQ(written.status().code(), absl::StatusCode::kDataLoss) << written.status();
  EXPECT_THAT(std::string(written.status().message()), HasSubstr("the object was deleted"));
  EXPECT_EQ(store_->get_object_metadata(bucket_, "damaged").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(S3StoreTest, EmulatorReportsTheStoredCrc32cAndReadsVerifyIt) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  const std::string data = random_data(1000, 2);
  ASSERT_TRUE(store_->write_object(write("k"), data).ok());
  std::string buffer(data.size(), '\0');
  auto read = store_->read_object(read_req("k"), buffer.data(), buffer.size());
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->crc32c.has_value());
  EXPECT_EQ(*read->crc32c, crc32c(data));
  EXPECT_TRUE(read->crc32c_verified);
}

// What a HEAD saw is what every range reads: an overwrite in between fails the read naming the
// ETag, instead of stitching bytes of two versions together.
TEST_F(S3StoreTest, ReadsPinnedToAnETagRefuseAnotherVersion) {
  const std::string v1 = random_data(200'000, 11);
  const std::string v2 = random_data(200'000, 12);
  auto written = store_->write_object(write("pinned"), v1);
  ASSERT_TRUE(written.ok()) << written.status();
  auto head = store_->get_object_metadata(bucket_, "pinned");
  ASSERT_TRUE(head.ok()) << head.status();
  ASSERT_FALSE(head->etag.empty());
  // The write reports the ETag a later read pins to (a shard index records it).
  EXPECT_EQ(written->etag, head->etag);
  // Pinned to the live version: read as usual.
  auto req = read_req("pinned");
  req.etag = head->etag;
  req.offset = 1000;
  req.length = 5000;
  std::string buffer(5000, '\0');
  auto r = store_->read_object(req, buffer.data(), buffer.size());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(buffer, v1.substr(1000, 5000));

  ASSERT_TRUE(store_->write_object(write("pinned"), v2).ok());
  r = store_->read_object(req, buffer.data(), buffer.size());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr(head->etag));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("no longer the live one"));

  // The Fetcher's ranges (what a ranged checkpoint load uses) carry the pin too: none of the
  // new version's bytes (same size, so every range would "fit") reach the buffer as the old.
  std::string out(v1.size(), '\0');
  FetchTarget target;
  target.object.name = "pinned";
  target.object.size = v1.size();
  target.buffer = out.data();
  target.etag = head->etag;
  FetchOptions options;
  options.range_size = 32 << 10;
  options.disable_compose = true;
  Fetcher fetcher(store_, bucket_, options);
  absl::Status fetched = fetcher.fetch({target});
  EXPECT_EQ(fetched.code(), absl::StatusCode::kFailedPrecondition) << fetched;
  EXPECT_THAT(std::string(fetched.message()), HasSubstr(head->etag));
}

TEST_F(S3StoreTest, RangedReadsAndBounds) {
  const std::string data = random_data(10'000, 3);
  ASSERT_TRUE(store_->write_object(write("r"), data).ok());
  auto req = read_req("r");
  req.offset = 1234;
  req.length = 100;
  std::string buffer(100, '\0');
  auto r = store_->read_object(req, buffer.data(), buffer.size());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(buffer, data.substr(1234, 100));
  EXPECT_EQ(r->object_size, data.size());

  req.offset = 9990;  // to the end, fewer bytes than asked
  req.length.reset();
  std::string tail(64, '\0');
  r = store_->read_object(req, tail.data(), tail.size());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(tail.substr(0, r->bytes), data.substr(9990));

  req.offset = data.size();  // exactly the end: nothing to read, not an error
  r = store_->read_object(req, tail.data(), tail.size());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->bytes, 0u);

  req.offset = data.size() + 1;
  r = store_->read_object(req, tail.data(), tail.size());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kOutOfRange) << r.status();

  auto whole = read_req("r");  // a buffer too small for the object: an error, no overflow
  std::string small(10, '\0');
  r = store_->read_object(whole, small.data(), small.size());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
}

TEST_F(S3StoreTest, MissingObjectsAndBucketsAreNotFoundAndNamed) {
  auto meta = store_->get_object_metadata(bucket_, "nope");
  EXPECT_EQ(meta.status().code(), absl::StatusCode::kNotFound);
  std::string buffer(10, '\0');
  auto r = store_->read_object(read_req("nope"), buffer.data(), buffer.size());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("s3://" + bucket_ + "/nope"));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("NoSuchKey"));
  ListObjectsRequest list;
  list.bucket = "no-such-bucket-" + random_token(8, "abcdefghij");
  auto page = store_->list_objects(list);
  EXPECT_EQ(page.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(page.status().message()), HasSubstr("NoSuchBucket"));
}

TEST_F(S3StoreTest, ListsWithPrefixDelimiterPagesAndOffsets) {
  for (const char* name : {"a/1", "a/2", "a/3", "a/sub/x", "b/1", "c"}) {
    ASSERT_TRUE(store_->write_object(write(name), name).ok());
  }
  ListObjectsRequest list;
  list.bucket = bucket_;
  list.prefix = "a/";
  list.delimiter = "/";
  auto page = store_->list_objects(list);
  ASSERT_TRUE(page.ok()) << page.status();
  std::vector<std::string> names;
  for (const auto& o : page->objects) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a/1", "a/2", "a/3"}));
  EXPECT_EQ(page->prefixes, (std::vector<std::string>{"a/sub/"}));
  EXPECT_EQ(page->objects[0].size, 3u);

  // Pages of two, following continuation tokens.
  ListObjectsRequest paged;
  paged.bucket = bucket_;
  paged.max_results = 2;
  names.clear();
  int pages = 0;
  for (;;) {
    auto p = store_->list_objects(paged);
    ASSERT_TRUE(p.ok()) << p.status();
    ++pages;
    EXPECT_LE(p->objects.size(), 2u);
    for (const auto& o : p->objects) names.push_back(o.name);
    if (p->next_page_token.empty()) break;
    paged.page_token = p->next_page_token;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a/1", "a/2", "a/3", "a/sub/x", "b/1", "c"}));
  EXPECT_EQ(pages, 3);

  // [start_offset, end_offset): inclusive start, exclusive end, filtered for S3.
  ListObjectsRequest range;
  range.bucket = bucket_;
  range.start_offset = "a/2";
  range.end_offset = "b/1";
  auto ranged = store_->list_objects(range);
  ASSERT_TRUE(ranged.ok()) << ranged.status();
  names.clear();
  for (const auto& o : ranged->objects) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a/2", "a/3", "a/sub/x"}));
  EXPECT_TRUE(ranged->next_page_token.empty());
}

TEST_F(S3StoreTest, ListsSeveralPrefixesAtOnce) {
  for (const char* name : {"p/a/1", "p/a/2", "p/b/1", "p/c/1", "q/1"}) {
    ASSERT_TRUE(store_->write_object(write(name), name).ok());
  }
  // "p/a/" is inside "p/" in the second call: each object is listed once.
  auto some = list_prefixes(*store_, bucket_, {"p/c/", "p/a/", "missing/"});
  ASSERT_TRUE(some.ok()) << some.status();
  std::vector<std::string> names;
  for (const auto& o : *some) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"p/a/1", "p/a/2", "p/c/1"}));
  auto nested = list_prefixes(*store_, bucket_, {"p/a/", "p/", "q/"});
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->size(), 5u);
  auto bad = list_prefixes(*store_, "no-such-bucket-" + random_token(6, "abcdef"), {"x/"});
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("listing prefix \"x/\""));
}

TEST_F(S3StoreTest, CopyAndDelete) {
  ASSERT_TRUE(store_->write_object(write("src"), "payload").ok());
  CopyObjectRequest copy;
  copy.source_bucket = bucket_;
  copy.source_object = "src";
  copy.destination_bucket = bucket_;
  copy.destination_object = "dst/copy";
  auto copied = store_->copy_object(copy);
  ASSERT_TRUE(copied.ok()) << copied.status();
  EXPECT_EQ(copied->size, 7u);
  EXPECT_EQ(read_all("dst/copy"), "payload");

  DeleteObjectRequest del;
  del.bucket = bucket_;
  del.object = "src";
  ASSERT_TRUE(store_->delete_object(del).ok());
  EXPECT_EQ(store_->get_object_metadata(bucket_, "src").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_->delete_object(del).ok());  // S3: deleting a missing key succeeds

  std::vector<std::string> many;
  for (int i = 0; i < 5; ++i) {
    many.push_back(absl::StrCat("many/", i));
    ASSERT_TRUE(store_->write_object(write(many.back()), "x").ok());
  }
  many.push_back("many/never-existed");
  ASSERT_TRUE(store_->delete_objects(bucket_, many).ok());
  ListObjectsRequest list;
  list.bucket = bucket_;
  list.prefix = "many/";
  auto page = store_->list_objects(list);
  ASSERT_TRUE(page.ok());
  EXPECT_TRUE(page->objects.empty());
}

TEST_F(S3StoreTest, MultipartUploadFromThreadsInAnyOrder) {
  auto caps = store_->capabilities();
  ASSERT_TRUE(caps.multipart_upload);
  EXPECT_EQ(caps.min_part_size, 5u << 20);
  EXPECT_EQ(caps.max_parts, 10000);
  const std::size_t part = caps.min_part_size;
  const std::string data = random_data(2 * part + 12345, 4);
  auto upload = store_->start_multipart_upload(write("ckpt/model.pt"));
  ASSERT_TRUE(upload.ok()) << upload.status();
  std::vector<std::thread> threads;
  std::vector<absl::Status> results(3);
  for (int n = 3; n >= 1; --n) {
    threads.emplace_back([&, n] {
      std::size_t begin = (n - 1) * part;
      std::size_t size = n == 3 ? data.size() - begin : part;
      results[n - 1] = (*upload)->upload_part(n, std::string_view(data).substr(begin, size));
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& s : results) ASSERT_TRUE(s.ok()) << s;
  // Not visible before complete().
  EXPECT_EQ(store_->get_object_metadata(bucket_, "ckpt/model.pt").status().code(),
            absl::StatusCode::kNotFound);
  auto meta = (*upload)->complete();
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, data.size());
  EXPECT_EQ(read_all("ckpt/model.pt"), data);
  auto live = store_->get_object_metadata(bucket_, "ckpt/model.pt");
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(meta->etag, live->etag);  // what reads of this version pin to
  if (external_) return;              // s3rver keeps no checksums
  // The server's full-object CRC32C (FULL_OBJECT), not our own combination of the parts':
  // complete() reports what the server answered, HEAD reports it, and a read checks it.
  EXPECT_EQ(meta->crc32c, crc32c(data));
  auto head = store_->get_object_metadata(bucket_, "ckpt/model.pt");
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->crc32c, crc32c(data));
  std::string buffer(data.size(), '\0');
  auto read = store_->read_object(read_req("ckpt/model.pt"), buffer.data(), buffer.size());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_TRUE(read->crc32c_verified);
}

// The emulator does what S3 does with a FULL_OBJECT checksum: a CompleteMultipartUpload whose
// CRC32C disagrees with the assembled bytes is refused and leaves no object; the default
// (COMPOSITE) type gives a checksum of checksums, "-N", which HEAD reports as such.
TEST_F(S3StoreTest, EmulatorChecksFullObjectChecksumsAsS3Does) {
  DATAFLUX_S3_NEEDS_EMULATOR();
  const std::string part1 = random_data(5u << 20, 41), part2 = "tail";
  auto client = internal::S3Client::create(options()).value();
  auto raw = [&](const std::string& method, const std::string& target,
                 std::vector<std::pair<std::string, std::string>> headers, std::string body) {
    internal::S3Call call;
    call.method = method;
    call.bucket = bucket_;
    call.key = "raw";
    call.headers = std::move(headers);
    call.body = std::move(body);
    for (absl::string_view kv : absl::StrSplit(target, '&', absl::SkipEmpty())) {
      std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
      call.query.push_back(p);
    }
    return client->transport().send(client->new_request(call));
  };
  for (const char* type : {"FULL_OBJECT", "COMPOSITE"}) {
    auto created = raw("POST", "uploads=",
                       {{"x-amz-checksum-algorithm", "CRC32C"}, {"x-amz-checksum-type", type}}, "");
    ASSERT_EQ(created.http_status, 200) << created.body;
    auto doc = internal::parse_xml(created.body);
    ASSERT_TRUE(doc.ok());
    const std::string id = doc->child_text("UploadId");
    std::string etags[2];
    int n = 0;
    for (const std::string* p : {&part1, &part2}) {
      auto put = raw("PUT", absl::StrCat("partNumber=", n + 1, "&uploadId=", id),
                     {{"x-amz-checksum-crc32c", crc32c_to_base64(crc32c(*p))}}, *p);
      ASSERT_EQ(put.http_status, 200) << put.body;
      etags[n++] = put.header("etag").value_or("");
    }
    const std::string body =
        internal::complete_multipart_body({{1, etags[0], crc32c_to_base64(crc32c(part1))},
                                           {2, etags[1], crc32c_to_base64(crc32c(part2))}});
    const std::uint32_t whole = crc32c(part1 + part2);
    if (std::string(type) == "FULL_OBJECT") {
      auto wrong = raw("POST", "uploadId=" + id,
                       {{"x-amz-checksum-crc32c", crc32c_to_base64(whole ^ 1)}}, body);
      EXPECT_EQ(wrong.http_status, 400);
      EXPECT_THAT(wrong.body, HasSubstr("BadDigest"));
      EXPECT_EQ(store_->get_object_metadata(bucket_, "raw").status().code(),
                absl::StatusCode::kNotFound);
      auto right =
          raw("POST", "uploadId=" + id, {{"x-amz-checksum-crc32c", crc32c_to_base64(whole)}}, body);
      ASSERT_EQ(right.http_status, 200) << right.body;
      EXPECT_THAT(right.body, HasSubstr("<ChecksumType>FULL_OBJECT</ChecksumType>"));
      EXPECT_EQ(store_->get_object_metadata(bucket_, "raw")->crc32c, whole);
    } else {
      auto done = raw("POST", "uploadId=" + id, {}, body);
      ASSERT_EQ(done.http_status, 200) << done.body;
      EXPECT_THAT(done.body, HasSubstr("-2</ChecksumCRC32C><ChecksumType>COMPOSITE"));
      auto head = store_->get_object_metadata(bucket_, "raw");
      ASSERT_TRUE(head.ok()) << head.status();
      EXPECT_FALSE(head->crc32c.has_value());  // a checksum of checksums checks nothing here
    }
  }
}

TEST_F(S3StoreTest, MultipartRejectsGapsAndSmallPartsAndAbortLeavesNothing) {
  auto upload = store_->start_multipart_upload(write("m"));
  ASSERT_TRUE(upload.ok()) << upload.status();
  ASSERT_TRUE((*upload)->upload_part(1, "small").ok());
  ASSERT_TRUE((*upload)->upload_part(3, "tail").ok());
  auto gap = (*upload)->complete();
  EXPECT_EQ(gap.status().code(), absl::StatusCode::kFailedPrecondition) << gap.status();
  EXPECT_THAT(std::string(gap.status().message()), HasSubstr("part 2"));
  // Named by its key, never by its upload id (a capability, like a GCS session URL).
  EXPECT_THAT(std::string(gap.status().message()), HasSubstr("/m (multipart upload)"));
  EXPECT_THAT(std::string(gap.status().message()), Not(HasSubstr("uploadId")));
  ASSERT_TRUE((*upload)->upload_part(2, "middle").ok());
  auto small = (*upload)->complete();
  EXPECT_EQ(small.status().code(), absl::StatusCode::kInvalidArgument) << small.status();
  EXPECT_EQ((*upload)->upload_part(0, "x").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*upload)->upload_part(10001, "x").code(), absl::StatusCode::kInvalidArgument);
  absl::Status aborted = (*upload)->abort();
  // s3rver has no AbortMultipartUpload (405 MethodNotAllowed); S3, MinIO and the emulator do.
  if (!(external_ && aborted.code() == absl::StatusCode::kUnimplemented)) {
    ASSERT_TRUE(aborted.ok()) << aborted;
  }
  EXPECT_EQ((*upload)->upload_part(1, "x").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->get_object_metadata(bucket_, "m").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(S3StoreTest, ManyAsyncReadsInFlight) {
  constexpr int kObjects = 48;
  std::vector<std::string> data;
  for (int i = 0; i < kObjects; ++i) {
    data.push_back(random_data(20'000 + i, 100 + i));
    ASSERT_TRUE(store_->write_object(write(absl::StrCat("async/", i)), data.back()).ok());
  }
  std::vector<std::string> buffers(kObjects);
  std::vector<std::promise<absl::StatusOr<ReadObjectResult>>> done(kObjects);
  for (int i = 0; i < kObjects; ++i) {
    buffers[i].assign(data[i].size(), '\0');
    store_->read_object_async(
        read_req(absl::StrCat("async/", i)), buffers[i].data(), buffers[i].size(),
        [&done, i](absl::StatusOr<ReadObjectResult> r) { done[i].set_value(std::move(r)); });
  }
  for (int i = 0; i < kObjects; ++i) {
    auto r = done[i].get_future().get();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(buffers[i], data[i]) << i;
  }
}

TEST_F(S3StoreTest, OpenStoreWithS3OptionsReachesTheSameEndpoint) {
  ASSERT_TRUE(store_->write_object(write("via/open"), "hello").ok());
  StoreOptions options;
  options.s3 = this->options();
  auto store = open_store("s3://" + bucket_ + "/via/open", options);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->backend(), "s3");
  auto meta = (*store)->get_object_metadata(bucket_, "via/open");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, 5u);
}

TEST_F(S3StoreTest, OpenStoreFromTheAwsEnvironment) {
  ASSERT_TRUE(store_->write_object(write("via/env"), "hello!").ok());
  setenv("AWS_ENDPOINT_URL", endpoint_.c_str(), 1);
  setenv("AWS_ACCESS_KEY_ID", access_key_.c_str(), 1);
  setenv("AWS_SECRET_ACCESS_KEY", secret_.c_str(), 1);
  setenv("AWS_REGION", "us-east-1", 1);
  auto store = open_store("s3://" + bucket_ + "/via/env");
  unsetenv("AWS_ENDPOINT_URL");
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("AWS_REGION");
  ASSERT_TRUE(store.ok()) << store.status();
  auto meta = (*store)->get_object_metadata(bucket_, "via/env");
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ(meta->size, 6u);
}

TEST_F(S3StoreTest, WriteIfAbsentRefusesAnExistingObject) {
  DATAFLUX_S3_NEEDS_EMULATOR();  // s3rver ignores If-None-Match
  auto req = write("once");
  req.if_generation_match = 0;
  ASSERT_TRUE(store_->write_object(req, "first").ok());
  auto again = store_->write_object(req, "second");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
  EXPECT_EQ(read_all("once"), "first");
  req.if_generation_match = 7;
  EXPECT_EQ(store_->write_object(req, "x").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace dataflux::testing
