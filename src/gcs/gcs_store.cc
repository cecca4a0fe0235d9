// GcsStore over the GCS JSON API: one object per call, each a request (or a few) on the shared
// transport, with the retry rules of DESIGN.md. Reads live in gcs_read.cc, uploads in
// gcs_upload.cc; this file maps the ObjectStore calls onto them and onto the simple requests.
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/absl_view.h"
#include "core/http_status.h"
#include "core/log.h"
#include "core/read_checks.h"
#include "dataflux/crc32c.h"
#include "dataflux/gcs.h"
#include "dataflux/url.h"
#include "gcs/gcs_client.h"
#include "gcs/gcs_json.h"
#include "gcs/gcs_paths.h"
#include "gcs/gcs_read.h"
#include "gcs/gcs_upload.h"

namespace dataflux {

using dataflux::internal::av;
using dataflux::internal::sv;
namespace {

using internal::crc32c_text;
using internal::GcsClient;
using internal::gs_url;
using internal::HttpRequest;
using internal::Idempotency;
using internal::QueryString;

constexpr int kMaxComposeSources = 32;
constexpr int kMaxListResults = 1000;

Idempotency idempotent_if(bool condition) {
  return condition ? Idempotency::kIdempotent : Idempotency::kNonIdempotent;
}

absl::Status validate(const std::string& bucket, const std::string& object,
                      std::string_view operation) {
  if (auto s = validate_bucket_name(bucket); !s.ok()) {
    return internal::annotate(s, absl::StrCat(av(operation), " ", gs_url(bucket, object)));
  }
  if (auto s = validate_object_name(object); !s.ok()) {
    return internal::annotate(s, absl::StrCat(av(operation), " ", gs_url(bucket, object)));
  }
  return absl::OkStatus();
}

class GcsStoreImpl : public GcsStore {
 public:
  explicit GcsStoreImpl(std::shared_ptr<GcsClient> client) : client_(std::move(client)) {}

  std::string_view backend() const override { return "gcs"; }
  std::string url(std::string_view bucket, std::string_view object) const override {
    return internal::gs_url(bucket, object);
  }

  StoreCapabilities capabilities() const override {
    StoreCapabilities caps;
    caps.compose = true;
    caps.max_compose_sources = kMaxComposeSources;
    caps.resumable_writes = true;
    caps.server_end_offset = true;
    caps.generations = true;
    caps.write_chunk_quantum = 256 << 10;
    return caps;
  }

  const std::string& endpoint() const override { return client_->endpoint(); }

  absl::StatusOr<ListObjectsPage> list_objects(const ListObjectsRequest& request) override {
    std::string context = absl::StrCat("LIST ", gs_url(request.bucket, request.prefix));
    if (auto s = validate_bucket_name(request.bucket); !s.ok()) {
      return internal::annotate(s, context);
    }
    QueryString query;
    query.add_nonempty("prefix", request.prefix);
    query.add_nonempty("delimiter", request.delimiter);
    query.add_nonempty("startOffset", request.start_offset);
    query.add_nonempty("endOffset", request.end_offset);
    query.add_nonempty("pageToken", request.page_token);
    int max_results =
        request.max_results <= 0 ? kMaxListResults : std::min(request.max_results, kMaxListResults);
    query.add("maxResults", static_cast<std::int64_t>(max_results));
    query.add("fields", request.lean ? internal::kLeanListFields : internal::kListFields);
    std::string path = internal::object_path(request.bucket, "") + query.str();
    auto response = client_->execute([&] { return client_->new_request("GET", path); },
                                     Idempotency::kIdempotent, context);
    if (!response.ok()) return response.status();
    return internal::parse_list_page(response->body, request.bucket, context);
  }

  absl::StatusOr<ObjectMetadata> get_object_metadata(const std::string& bucket,
                                                     const std::string& object) override {
    if (auto s = validate(bucket, object, "GET"); !s.ok()) return s;
    std::string context = absl::StrCat("GET ", gs_url(bucket, object), " (metadata)");
    QueryString query;
    query.add("fields", internal::kObjectFields);
    std::string path = internal::object_path(bucket, object) + query.str();
    auto response = client_->execute([&] { return client_->new_request("GET", path); },
                                     Idempotency::kIdempotent, context);
    if (!response.ok()) return response.status();
    return internal::parse_object_resource(response->body, bucket, context);
  }

  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request, char* buffer,
                                               std::size_t capacity) override {
    return wait_for_read(request, internal::ReadTarget::into(buffer, capacity));
  }

  absl::StatusOr<ReadObjectResult> read_object(const ReadObjectRequest& request,
                                               const ByteSink& sink) override {
    if (!sink) return absl::InvalidArgumentError("read_object: empty ByteSink");
    return wait_for_read(request, internal::ReadTarget::to(sink));
  }

  void read_object_async(const ReadObjectRequest& request, char* buffer, std::size_t capacity,
                         AsyncCallback<ReadObjectResult> done) override {
    if (auto s = validate(request.bucket, request.object, "GET"); !s.ok()) {
      // On a transport thread, as promised, not the caller's.
      client_->transport().run_after(absl::ZeroDuration(),
                                     [done = std::move(done), s] { done(s); });
      return;
    }
    internal::ObjectRead::start(read_protocol_, request,
                                internal::ReadTarget::into(buffer, capacity), std::move(done));
  }

  absl::StatusOr<ObjectMetadata> write_object(const WriteObjectRequest& request,
                                              std::string_view data) override {
    if (auto s = validate(request.bucket, request.object, "POST"); !s.ok()) return s;
    std::string context = absl::StrCat("POST ", gs_url(request.bucket, request.object));
    const std::uint32_t crc = request.crc32c ? *request.crc32c : crc32c(data);
    // A media upload: the object name and precondition travel in the query, the checksum in
    // x-goog-hash, so the body is the caller's bytes, sent from their buffer without a copy (a
    // multipart body would need one: a part upload would hold its bytes twice).
    QueryString query;
    query.add("uploadType", "media");
    query.add("name", request.object);
    if (request.if_generation_match) query.add("ifGenerationMatch", *request.if_generation_match);
    query.add("fields", internal::kObjectFields);
    std::string path = absl::StrCat("/upload/storage/v1/b/",
                                    internal::percent_encode(request.bucket), "/o", query.str());
    const std::string hash = absl::StrCat("crc32c=", crc32c_to_base64(crc));
    // Without a precondition a retried upload could overwrite a newer object: only one try.
    auto response = client_->execute(
        [&] {
          HttpRequest r = client_->new_request("POST", path);
          r.headers.emplace_back("Content-Type", request.content_type);
          r.headers.emplace_back("x-goog-hash", hash);
          r.body_view = data;
          r.budget_bytes = data.size();
          return r;
        },
        idempotent_if(request.if_generation_match.has_value()), context);
    if (!response.ok()) {
      if (auto ours = internal::ours_despite_conflict(*this, request.bucket, request.object,
                                                      data.size(), crc, response.status())) {
        return *ours;
      }
      return response.status();
    }
    auto metadata = internal::parse_object_resource(response->body, request.bucket, context);
    if (!metadata.ok()) return metadata.status();
    if (metadata->crc32c && *metadata->crc32c != crc) {
      return internal::discard_stored(
          *client_, *metadata,
          absl::DataLossError(absl::StrCat(context, ": the stored object's CRC32C is ",
                                           crc32c_text(*metadata->crc32c), " but ",
                                           crc32c_text(crc), " was uploaded")));
    }
    return metadata;
  }

  absl::StatusOr<std::unique_ptr<WriteSession>> start_resumable_write(
      const WriteObjectRequest& request) override {
    if (auto s = validate(request.bucket, request.object, "POST"); !s.ok()) return s;
    return internal::GcsWriteSession::start(client_, request);
  }

  absl::StatusOr<std::unique_ptr<WriteSession>> resume_resumable_write(
      const WriteObjectRequest& request, const std::string& session_id) override {
    if (auto s = validate(request.bucket, request.object, "PUT"); !s.ok()) return s;
    return internal::GcsWriteSession::resume(client_, request, session_id);
  }

  absl::StatusOr<ObjectMetadata> compose_object(const ComposeObjectRequest& request) override {
    if (auto s = validate(request.bucket, request.destination, "COMPOSE"); !s.ok()) return s;
    std::string context = absl::StrCat("COMPOSE ", gs_url(request.bucket, request.destination));
    if (request.sources.empty() || request.sources.size() > kMaxComposeSources) {
      return absl::InvalidArgumentError(absl::StrCat(context, ": ", request.sources.size(),
                                                     " sources; GCS composes 1 to ",
                                                     kMaxComposeSources, " objects per request"));
    }
    for (const auto& source : request.sources) {
      if (auto s = validate(request.bucket, source.name, "COMPOSE"); !s.ok()) return s;
    }
    QueryString query;
    if (request.if_generation_match) query.add("ifGenerationMatch", *request.if_generation_match);
    query.add("fields", internal::kObjectFields);
    std::string path = absl::StrCat(internal::object_path(request.bucket, request.destination),
                                    "/compose", query.str());
    std::string body = internal::compose_request_json(request);
    auto response = client_->execute(
        [&] {
          HttpRequest r = client_->new_request("POST", path);
          r.headers.emplace_back("Content-Type", "application/json; charset=UTF-8");
          r.body_view = body;
          return r;
        },
        idempotent_if(request.if_generation_match.has_value()), context);
    if (!response.ok()) return response.status();
    return internal::parse_object_resource(response->body, request.bucket, context);
  }

  absl::StatusOr<ObjectMetadata> copy_object(const CopyObjectRequest& request) override {
    if (auto s = validate(request.source_bucket, request.source_object, "COPY"); !s.ok()) return s;
    if (auto s = validate(request.destination_bucket, request.destination_object, "COPY");
        !s.ok()) {
      return s;
    }
    std::string context =
        absl::StrCat("COPY ", gs_url(request.source_bucket, request.source_object), " to ",
                     gs_url(request.destination_bucket, request.destination_object));
    std::string base =
        absl::StrCat(internal::object_path(request.source_bucket, request.source_object),
                     "/rewriteTo/b/", internal::percent_encode(request.destination_bucket), "/o/",
                     internal::percent_encode(request.destination_object));
    std::string token;
    // Large copies take several calls; each carries the token of the previous one.
    for (int step = 0; step < 100000; ++step) {
      QueryString query;
      if (request.source_generation) query.add("sourceGeneration", *request.source_generation);
      if (request.if_generation_match) {
        query.add("ifGenerationMatch", *request.if_generation_match);
      }
      query.add_nonempty("rewriteToken", token);
      std::string path = base + query.str();
      auto response = client_->execute(
          [&] {
            HttpRequest r = client_->new_request("POST", path);
            r.headers.emplace_back("Content-Type", "application/json; charset=UTF-8");
            r.body = "{}";
            return r;
          },
          idempotent_if(request.if_generation_match.has_value()), context);
      if (!response.ok()) return response.status();
      auto progress =
          internal::parse_rewrite_response(response->body, request.destination_bucket, context);
      if (!progress.ok()) return progress.status();
      if (progress->done) return std::move(progress->resource);
      token = std::move(progress->rewrite_token);
    }
    return absl::InternalError(absl::StrCat(context, ": the rewrite never finished"));
  }

  absl::Status delete_object(const DeleteObjectRequest& request) override {
    if (auto s = validate(request.bucket, request.object, "DELETE"); !s.ok()) return s;
    std::string context = absl::StrCat("DELETE ", gs_url(request.bucket, request.object));
    QueryString query;
    if (request.if_generation_match) query.add("ifGenerationMatch", *request.if_generation_match);
    std::string path = internal::object_path(request.bucket, request.object) + query.str();
    return client_
        ->execute([&] { return client_->new_request("DELETE", path); },
                  idempotent_if(request.if_generation_match.has_value()), context)
        .status();
  }

  absl::Status create_bucket(const std::string& bucket) override {
    std::string context = absl::StrCat("CREATE BUCKET gs://", bucket);
    if (auto s = validate_bucket_name(bucket); !s.ok()) return internal::annotate(s, context);
    QueryString query;
    query.add_nonempty("project", client_->options().project);
    std::string path = "/storage/v1/b" + query.str();
    std::string body = internal::bucket_resource_json(bucket);
    return client_
        ->execute(
            [&] {
              HttpRequest r = client_->new_request("POST", path);
              r.headers.emplace_back("Content-Type", "application/json; charset=UTF-8");
              r.body_view = body;
              return r;
            },
            Idempotency::kNonIdempotent, context)
        .status();
  }

  absl::Status delete_bucket(const std::string& bucket) override {
    std::string context = absl::StrCat("DELETE BUCKET gs://", bucket);
    if (auto s = validate_bucket_name(bucket); !s.ok()) return internal::annotate(s, context);
    std::string path = "/storage/v1/b/" + internal::percent_encode(bucket);
    return client_
        ->execute([&] { return client_->new_request("DELETE", path); }, Idempotency::kNonIdempotent,
                  context)
        .status();
  }

 private:
  absl::StatusOr<ReadObjectResult> wait_for_read(const ReadObjectRequest& request,
                                                 internal::ReadTarget target) {
    if (auto s = validate(request.bucket, request.object, "GET"); !s.ok()) return s;
    return internal::ObjectRead::run(read_protocol_, request, std::move(target));
  }

  std::shared_ptr<GcsClient> client_;
  std::shared_ptr<internal::GcsReadProtocol> read_protocol_ =
      std::make_shared<internal::GcsReadProtocol>(client_);
};

}  // namespace

absl::StatusOr<std::shared_ptr<GcsStore>> make_gcs_store(GcsOptions options) {
  auto client = GcsClient::create(std::move(options));
  if (!client.ok()) return client.status();
  return std::shared_ptr<GcsStore>(std::make_shared<GcsStoreImpl>(*std::move(client)));
}

}  // namespace dataflux
