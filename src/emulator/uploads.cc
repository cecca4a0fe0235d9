#include "emulator/uploads.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/io_buffer.h"
#include "dataflux/crc32c.h"
#include "emulator/wire.h"

namespace dataflux::emulator::internal {

std::string Uploads::start(UploadTarget target) {
  auto session = std::make_shared<Session>();
  session->target = std::move(target);
  static thread_local std::mt19937_64 random{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu_);
  // Unguessable-looking but unique: a counter keeps ids distinct, the random part keeps a
  // client from resuming another emulator run's session by accident.
  std::string id = absl::StrCat("u", ++next_id_, "x", random() % 1000000007);
  sessions_[id] = std::move(session);
  return id;
}

std::shared_ptr<Uploads::Session> Uploads::find(const std::string& upload_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(upload_id);
  return it == sessions_.end() ? nullptr : it->second;
}

absl::Status Uploads::cancel(const std::string& upload_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (sessions_.erase(upload_id) == 0) {
    return absl::NotFoundError(absl::StrCat("No such upload session: ", upload_id));
  }
  return absl::OkStatus();
}

absl::StatusOr<ChunkOutcome> Uploads::put(const std::string& upload_id,
                                          const std::string& content_range, std::string_view body,
                                          const std::string& goog_hash) {
  auto session = find(upload_id);
  if (!session) return absl::NotFoundError(absl::StrCat("No such upload session: ", upload_id));
  std::lock_guard<std::mutex> lock(session->mu);
  ChunkRange range;
  if (content_range.empty()) {
    // The whole object in one request (or an empty finalize).
    range.total = body.size();
    if (!body.empty()) {
      range.first = 0;
      range.last = body.size() - 1;
    }
  } else {
    auto parsed = parse_content_range(content_range);
    if (!parsed) {
      return absl::InvalidArgumentError(absl::StrCat("Bad Content-Range: ", content_range));
    }
    range = *parsed;
  }
  if (session->result) {
    ChunkOutcome done;
    done.complete = true;
    done.persisted = session->result->size();
    done.object = session->result;
    return done;
  }
  const std::uint64_t persisted = session->data.size();
  if (!range.first) {  // "bytes */T" finalizes, "bytes */*" asks what is persisted
    if (!body.empty()) return absl::InvalidArgumentError("Content-Range */ with a body");
    if (!range.total) return ChunkOutcome{false, persisted, std::nullopt};
    return finish(upload_id, *session, *range.total, goog_hash);
  }
  const std::uint64_t length = *range.last - *range.first + 1;
  if (body.size() != length) {
    return absl::InvalidArgumentError(absl::StrCat("Content-Range ", content_range, " says ",
                                                   length, " bytes, the body has ", body.size()));
  }
  if (*range.first > persisted) {
    return absl::InvalidArgumentError(absl::StrCat("Chunk starts at ", *range.first, " but only ",
                                                   persisted, " bytes are persisted"));
  }
  if (!range.total && length % kChunkQuantum != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Non-final chunk of ", length, " bytes is not a multiple of ", kChunkQuantum));
  }
  if (range.total && *range.last + 1 != *range.total) {
    return absl::InvalidArgumentError(
        absl::StrCat("Final chunk ends at ", *range.last, " but the total is ", *range.total));
  }
  if (*range.last + 1 > max_object_bytes_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("Upload exceeds the maximum object size of ", max_object_bytes_));
  }
  // Bytes already persisted are skipped: that is how a client resumes after a lost reply.
  if (*range.last + 1 > persisted) {
    const std::string_view fresh = body.substr(persisted - *range.first);
    std::string& data = session->data;
    if (data.size() + fresh.size() > data.capacity()) {
      // Grow geometrically into memory advised to use huge pages before anything touches
      // it: a GiB upload otherwise spends most of the emulator's CPU on page faults.
      std::string grown;
      grown.reserve(std::max<std::size_t>(2 * data.capacity(), data.size() + fresh.size()));
      dataflux::internal::advise_huge_pages(grown.data(), grown.capacity());
      grown.append(data);
      data.swap(grown);
    }
    data.append(fresh);
  }
  if (range.total) return finish(upload_id, *session, *range.total, goog_hash);
  return ChunkOutcome{false, session->data.size(), std::nullopt};
}

absl::StatusOr<ChunkOutcome> Uploads::finish(const std::string& upload_id, Session& session,
                                             std::uint64_t total, const std::string& goog_hash) {
  if (session.data.size() != total) {
    return absl::InvalidArgumentError(absl::StrCat("Upload finalized at ", total, " bytes but ",
                                                   session.data.size(), " are persisted"));
  }
  NewObject meta = session.target.meta;
  GoogHash hash = parse_goog_hash(goog_hash);
  if (!hash.crc32c.empty()) {
    auto crc = crc32c_from_base64(hash.crc32c);
    if (!crc) return absl::InvalidArgumentError("Bad crc32c in x-goog-hash");
    meta.expected_crc32c = crc;
  }
  if (!hash.md5.empty()) meta.expected_md5_base64 = hash.md5;
  // The bytes move into the object: on failure the session cannot be retried, as on GCS
  // where a failed finalization ends the session.
  auto object = store_->insert(session.target.bucket, session.target.name, std::move(session.data),
                               meta, session.target.pre);
  session.data.clear();
  if (!object.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    sessions_.erase(upload_id);
    return object.status();
  }
  session.result = *object;
  ChunkOutcome done;
  done.complete = true;
  done.persisted = total;
  done.object = *std::move(object);
  return done;
}

}  // namespace dataflux::emulator::internal
