// Emulator: a local Google Cloud Storage (JSON API) server for tests and benchmarks.
//
// Real semantics (generations, preconditions, CRC32C/MD5, GCS-shaped errors), fault injection
// per operation, and a cloud model (first-byte latency, per-stream bandwidth, a request-rate
// limit answering 429), because on loopback nothing is slow. Binds to loopback only. The same
// server runs as the `dataflux-emulator` binary.
//
//   auto emu = dataflux::emulator::Emulator::start({}).value();   // free loopback port
//   emu->create_bucket("test-bucket");
//   emu->inject_fault("objects.media", Fault::break_after(64 << 10)); // next media GET breaks
//   setenv("STORAGE_EMULATOR_HOST", emu->endpoint().c_str(), 1);
//   ... run the client ...; EXPECT_EQ(emu->request_count("objects.media"), 2);
#ifndef DATAFLUX_SRC_EMULATOR_EMULATOR_H_
#define DATAFLUX_SRC_EMULATOR_EMULATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace dataflux::emulator {

// How the emulator imitates a real cloud. All zero (the default) = as fast as loopback.
struct CloudModel {
  absl::Duration first_byte_latency = absl::ZeroDuration();  // added before every response
  // Per stream, both ways: response bodies (downloads) and request bodies (uploads: media,
  // multipart, resumable chunks) move at most this fast; 0 = unlimited.
  double stream_bytes_per_second = 0;
  double max_requests_per_second = 0;  // over all requests; above it → 429; 0 = unlimited
};

// One injected failure, consumed by the next request of its operation (FIFO per operation).
struct Fault {
  enum class Kind {
    kStatus,      // answer `http_status` with a GCS-shaped error body
    kReset,       // close the connection without a response
    kBreakAfter,  // send headers and `after_bytes` of the body, then close the connection
    kStall,       // send headers and `after_bytes` of the body, then stop sending for `stall_for`
    kHang,        // hold the request, not applied, for `stall_for`, then close the connection
    // Media replies that misbehave as some servers and proxies do (GCS and S3 alike):
    kIgnoreRange,  // answer a ranged GET with 200 and the whole object
    kShiftRange,   // answer 206 from `after_bytes` before the first byte asked (after, at 0)
    kLongRange,    // answer 206 running `after_bytes` past the last byte asked (in the object)
    // Writes:
    kLostReply,      // apply the request, then close the connection without the response
    kCorruptUpload,  // store the body with its last byte flipped, ignoring its checksums
  };
  Kind kind = Kind::kStatus;
  int http_status = 503;
  std::uint64_t after_bytes = 0;
  absl::Duration stall_for = absl::ZeroDuration();

  static Fault status(int http_status);
  static Fault reset();
  static Fault break_after(std::uint64_t bytes);
  static Fault stall(absl::Duration duration, std::uint64_t after_bytes = 0);
  // A server that took the request and never acts on it (a stall applies the request first).
  static Fault hang(absl::Duration duration);
  static Fault ignore_range();
  static Fault shift_range(std::uint64_t bytes);
  static Fault long_range(std::uint64_t bytes);
  static Fault lost_reply();
  static Fault corrupt_upload();
};

// Random faults for chaos tests: each storage request (not one with a fault injected for it)
// meets a fault with `probability`, drawn from a generator seeded with `seed` (the same seed
// and the same requests in the same order give the same faults). The kinds: 429, 503, reset,
// break after K bytes, stall of `stall` after K bytes, lost reply (the write applied), and on
// media reads a 200 to a ranged GET, a shifted or an overlong 206.
struct ChaosOptions {
  double probability = 0;  // 0 = off
  std::uint64_t seed = 1;
  absl::Duration stall = absl::Seconds(2);
  std::uint64_t max_after_bytes = 64 << 10;  // K is uniform in [0, this]
};

// Authentication mode: an OAuth2 token endpoint, a fake GCE metadata server, and storage
// routes that want a bearer token this emulator issued. Off by default.
struct AuthConfig {
  // Storage routes (not /token, /computeMetadata, /_dataflux) answer 401 with a GCS-shaped
  // body unless the request has "Authorization: Bearer <a live token issued here>".
  bool require_auth = false;
  // POST /token, grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer: the RS256 JWT
  // `assertion` must be signed by the key registered for its `iss` (client_email), have
  // aud = token_uri(), a `scope`, and iat/exp valid now (exp - iat <= 3600 s). Bad signature
  // or unknown issuer → 400 {"error":"invalid_grant",...}.
  std::map<std::string, std::string> service_account_public_keys;  // client_email → PEM
  // POST /token, grant_type=refresh_token: client_id, client_secret and refresh_token must match.
  struct RefreshClient {
    std::string client_id;
    std::string client_secret;
    std::string refresh_token;
  };
  std::vector<RefreshClient> refresh_clients;
  // GET /computeMetadata/v1/instance/service-accounts/default/token (and .../email) with
  // "Metadata-Flavor: Google" (403 without it) issues tokens.
  bool metadata_server = false;
  absl::Duration token_lifetime = absl::Hours(1);  // expires_in of issued tokens
};

// The S3 API, served path-style (/bucket/key) on the same port; see s3_routes.h.
struct S3Config {
  // Access key id → secret. Requests signed with SigV4 must use one of these, with the right
  // secret (else 403 InvalidAccessKeyId / SignatureDoesNotMatch).
  std::map<std::string, std::string> access_keys;
  bool allow_anonymous = true;  // serve unsigned requests (public-bucket access)
};

struct EmulatorOptions {
  std::string host = "127.0.0.1";  // loopback only: anything else is refused
  int port = 0;                    // 0 = a free port
  // Connections served at once: each open connection (keep-alive ones included) holds a
  // worker thread, and threads start as connections arrive, up to this many. Past it a new
  // connection waits for one to close, so the default stays above what clients keep open
  // (the library's transport: 256 per host).
  int threads = 1024;
  absl::Duration keep_alive_timeout = absl::Seconds(5);  // an idle connection is closed after
  CloudModel model;
  std::string storage_dir;  // empty = objects in memory; else files under this directory
  std::string project = "test-project";
  std::uint64_t max_object_bytes = 8ull << 30;  // larger uploads get 413
  // MD5 of every uploaded object (md5Hash, x-goog-hash md5=). Off: md5Hash is absent, as for
  // composed objects (an MD5 the client sends is still checked); saves ~1 CPU second per GiB
  // uploaded, which a benchmark on a small machine would otherwise take from the client it
  // measures.
  bool compute_md5 = true;
  AuthConfig auth;
  S3Config s3;
};

struct ObjectInfo {
  std::string name;
  std::uint64_t size = 0;
  std::int64_t generation = 0;
  std::uint32_t crc32c = 0;
};

// Operation names used for faults and counters:
//   oauth.token (POST /token, any grant) metadata.token (metadata server token requests)
//   metadata.other (the metadata server's email, its /computeMetadata/v1 probe, anything else)
//   buckets.insert buckets.get buckets.list buckets.delete buckets.getStorageLayout
//   buckets.testIamPermissions
//   objects.list objects.get (metadata) objects.media (alt=media) objects.insert (media,
//   multipart, and resumable session start) objects.upload (resumable chunk PUT and status
//   query) objects.compose objects.copy objects.rewrite objects.delete objects.patch
//   S3: s3.list_buckets s3.create_bucket s3.head_bucket s3.delete_bucket s3.list
//   s3.delete_objects s3.get s3.head s3.put s3.copy s3.delete s3.create_multipart
//   s3.upload_part s3.complete_multipart s3.abort_multipart
class Emulator {
 public:
  static absl::StatusOr<std::unique_ptr<Emulator>> start(EmulatorOptions options);
  ~Emulator();  // stops the server and joins its threads
  Emulator(const Emulator&) = delete;
  Emulator& operator=(const Emulator&) = delete;

  int port() const;
  std::string endpoint() const;  // "http://127.0.0.1:PORT"

  // Direct access for tests (no HTTP, no faults, no cloud model).
  absl::Status create_bucket(const std::string& bucket);
  absl::StatusOr<ObjectInfo> put_object(const std::string& bucket, const std::string& name,
                                        std::string data);
  absl::StatusOr<std::string> get_object_data(const std::string& bucket, const std::string& name);
  std::vector<ObjectInfo> list_objects(const std::string& bucket);  // every object, by name

  void inject_fault(const std::string& operation, Fault fault);
  // Runs `action` once, right after the next request of `operation` has been executed and
  // before its reply is sent: a test's way to change the bucket at an exact point of a
  // client's sequence (an object overwritten between a stat and the read that follows it).
  void after_next(const std::string& operation, std::function<void()> action);
  std::size_t pending_faults(const std::string& operation) const;
  void clear_faults();
  void set_chaos(ChaosOptions chaos);
  // The faults chaos injected since set_chaos, by kind ("status 503", "reset", "stall", ...).
  std::map<std::string, std::uint64_t> chaos_counts() const;
  void set_cloud_model(CloudModel model);

  // Authentication mode (see AuthConfig); replaceable while running.
  void set_auth(AuthConfig auth);
  // S3 access keys and anonymous access (see S3Config); replaceable while running.
  void set_s3(S3Config s3);
  std::string token_uri() const;  // endpoint() + "/token"
  // Every token issued so far stops being accepted (as if they all expired now).
  void expire_tokens();

  // Requests seen per operation since start or reset_counters(), faulted ones included.
  std::uint64_t request_count(const std::string& operation) const;
  void reset_counters();

 private:
  class Impl;
  explicit Emulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace dataflux::emulator

#endif  // DATAFLUX_SRC_EMULATOR_EMULATOR_H_
