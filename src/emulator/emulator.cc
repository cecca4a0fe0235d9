// The HTTP server: routes each request, applies the cloud model and injected faults, and
// delivers the reply (paced, broken or stalled as asked).
#include "emulator/emulator.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/io_buffer.h"
#include "emulator/auth.h"
#include "emulator/control.h"
#include "emulator/resources.h"
#include "emulator/routes.h"
#include "emulator/s3_routes.h"
#include "emulator/store.h"
#include "emulator/thread_pool.h"
#include "emulator/uploads.h"
#include "emulator/wire.h"

namespace dataflux::emulator {

namespace {

Fault make_fault(Fault::Kind kind, std::uint64_t after_bytes = 0) {
  Fault f;
  f.kind = kind;
  f.after_bytes = after_bytes;
  return f;
}

}  // namespace

Fault Fault::status(int http_status) {
  Fault f = make_fault(Kind::kStatus);
  f.http_status = http_status;
  return f;
}
Fault Fault::reset() { return make_fault(Kind::kReset); }
Fault Fault::break_after(std::uint64_t bytes) { return make_fault(Kind::kBreakAfter, bytes); }
Fault Fault::ignore_range() { return make_fault(Kind::kIgnoreRange); }
Fault Fault::shift_range(std::uint64_t bytes) { return make_fault(Kind::kShiftRange, bytes); }
Fault Fault::long_range(std::uint64_t bytes) { return make_fault(Kind::kLongRange, bytes); }
Fault Fault::lost_reply() { return make_fault(Kind::kLostReply); }
Fault Fault::corrupt_upload() { return make_fault(Kind::kCorruptUpload); }
Fault Fault::hang(absl::Duration duration) {
  Fault f = make_fault(Kind::kHang);
  f.stall_for = duration;
  return f;
}
Fault Fault::stall(absl::Duration duration, std::uint64_t after_bytes) {
  Fault f = make_fault(Kind::kStall, after_bytes);
  f.stall_for = duration;
  return f;
}

namespace {

using internal::Reply;

bool is_loopback(const std::string& host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr addr{};
  return inet_pton(AF_INET, host.c_str(), &addr) == 1 && (ntohl(addr.s_addr) >> 24) == 127;
}

int port_of(const sockaddr_storage& addr) {
  if (addr.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(addr).sin_port);
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(addr).sin6_port);
  }
  return -1;
}

// Shuts down the server side of connections on `local_port` (and from `remote_port`, or any
// when -1). httplib does not hand handlers their socket, so it is found by its two ports.
// SO_LINGER {1, 0} makes httplib's eventual close() send a RST.
void shutdown_connections(int local_port, int remote_port) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    sockaddr_storage local{};
    sockaddr_storage peer{};
    socklen_t local_len = sizeof(local);
    socklen_t peer_len = sizeof(peer);
    const int sock = static_cast<int>(fd);
    if (getsockname(sock, reinterpret_cast<sockaddr*>(&local), &local_len) != 0 ||
        getpeername(sock, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) {
      continue;  // not a connected socket (the listening one has no peer)
    }
    if (port_of(local) != local_port || (remote_port >= 0 && port_of(peer) != remote_port)) {
      continue;
    }
    linger lg{1, 0};
    setsockopt(sock, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    shutdown(sock, SHUT_RDWR);
    if (remote_port >= 0) break;
  }
  closedir(dir);
}

// What a streamed body needs while httplib pulls it slice by slice.
struct BodyStream {
  std::shared_ptr<const internal::Blob> blob;
  std::string text;  // used when blob is null
  std::uint64_t offset = 0;
  std::optional<Fault> fault;
  bool stalled = false;
  double bytes_per_second = 0;
  std::chrono::steady_clock::time_point started;
  std::vector<char> buffer;
};

constexpr std::size_t kSliceBytes = 256 * 1024;
constexpr int kListenBacklog = 4096;  // Linux caps it at net.core.somaxconn

}  // namespace

class Emulator::Impl {
 public:
  explicit Impl(EmulatorOptions options)
      : options_(std::move(options)),
        store_(options_.storage_dir, options_.project),
        uploads_(&store_, options_.max_object_bytes),
        s3_(&store_, options_.max_object_bytes) {}

  ~Impl() {
    control_.stop();
    server_.stop();
    // Idle keep-alive connections and half-sent requests would otherwise hold the worker
    // threads (and this join) until their timeouts.
    if (port_ > 0) shutdown_connections(port_, -1);
    if (thread_.joinable()) thread_.join();
  }

  absl::Status start() {
    if (!is_loopback(options_.host)) {
      return absl::InvalidArgumentError(
          absl::StrCat("dataflux-emulator binds to loopback only, not '", options_.host, "'"));
    }
    if (options_.threads < 1 || options_.threads > 4096) {
      return absl::InvalidArgumentError("threads must be in [1, 4096]");
    }
    // A client that hangs up mid-body must not kill the process (httplib sends without
    // MSG_NOSIGNAL).
    std::signal(SIGPIPE, SIG_IGN);
    control_.set_model(options_.model);
    store_.set_compute_md5(options_.compute_md5);
    auth_.set_config(options_.auth);
    s3_.set_config(options_.s3);
    const int threads = options_.threads;
    server_.new_task_queue = [threads] {
      return new internal::GrowingThreadPool(static_cast<std::size_t>(threads));
    };
    server_.set_keep_alive_max_count(100000);
    server_.set_keep_alive_timeout(std::max<time_t>(
        1, static_cast<time_t>(absl::ToInt64Seconds(options_.keep_alive_timeout))));
    server_.set_read_timeout(60);
    server_.set_write_timeout(60);
    server_.set_tcp_nodelay(true);
    server_.set_payload_max_length(options_.max_object_bytes + (1 << 20));
    // Requests without a body are routed here, skipping httplib's std::regex routing (slow,
    // and recursive in the path length).
    server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const bool has_body =
          req.has_header("Transfer-Encoding") ||
          (req.has_header("Content-Length") && req.get_header_value("Content-Length") != "0");
      if (req.has_header("Content-Length")) {
        // Refuse an oversized body before httplib reads (and discards) it all.
        auto length = internal::parse_u64(req.get_header_value("Content-Length"));
        if (!length || *length > options_.max_object_bytes + (1 << 20)) {
          deliver(internal::error_reply(413, "Request body too large"), {}, res);
          res.set_header("Connection", "close");
          return httplib::Server::HandlerResponse::Handled;
        }
      }
      if (has_body) return httplib::Server::HandlerResponse::Unhandled;
      handle(req, res);
      return httplib::Server::HandlerResponse::Handled;
    });
    // Requests with a body read it here, slice by slice, so uploads are paced like downloads.
    auto handler = [this](const httplib::Request& req, httplib::Response& res,
                          const httplib::ContentReader& reader) {
      if (!read_body(req, reader)) {
        res.status = 400;
        return;
      }
      handle(req, res);
    };
    const std::string any = R"(/[\s\S]*)";
    server_.Post(any, handler).Put(any, handler).Patch(any, handler).Delete(any, handler);
    // httplib's own errors (413 body too large, malformed requests) get GCS-shaped bodies.
    server_.set_error_handler(
        httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
          if (!res.body.empty() || res.content_provider_) {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          res.set_content(internal::error_json(res.status, absl::StrCat("HTTP ", res.status)),
                          "application/json; charset=UTF-8");
          return httplib::Server::HandlerResponse::Handled;
        }));
    // httplib listens with a backlog of 5: a client opening hundreds of connections at once
    // (our transport, at 256 requests in flight) overflows the accept queue, and the dropped
    // SYNs come back after TCP's 1 s, 3 s, 7 s... retransmit timers, which turns a 30 ms
    // latency model into seconds. Capture the listening socket here (this hook replaces
    // httplib's default, so set SO_REUSEADDR as it did) and listen again with a deep queue.
    int listen_fd = -1;
    server_.set_socket_options([&listen_fd](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      listen_fd = sock;
    });
    port_ = options_.port == 0
                ? server_.bind_to_any_port(options_.host)
                : (server_.bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port_ <= 0) {
      return absl::UnavailableError(
          absl::StrCat("Cannot bind ", options_.host, ":", options_.port));
    }
    if (listen_fd >= 0) ::listen(listen_fd, kListenBacklog);
    const std::string host = options_.host == "::1" ? "[::1]" : options_.host;
    endpoint_ = absl::StrCat("http://", host == "localhost" ? "127.0.0.1" : host, ":", port_);
    service_ = std::make_unique<internal::ObjectService>(&store_, &uploads_, endpoint_,
                                                         options_.max_object_bytes);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // httplib's stop() is a no-op until the accept loop runs, so a stop right after start
    // would leave the loop (and our join) running forever. Wait for it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_.is_running()) {
      if (std::chrono::steady_clock::now() > deadline) {
        return absl::UnavailableError("The HTTP server did not start");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return absl::OkStatus();
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    // We answer Range ourselves; httplib would otherwise slice our (already sliced or error)
    // body a second time. The Request is httplib's non-const local, so this is sound.
    const_cast<httplib::Request&>(req).ranges.clear();
    auto segments = internal::split_path(req.target);
    if (!segments) return deliver(internal::error_reply(400, "Malformed URL escape"), {}, res);
    if (!segments->empty() && (*segments)[0] == "_dataflux") {
      return deliver(control_request(req, *segments), {}, res);
    }
    // The token endpoint and metadata server are open; every storage route wants a token
    // (when auth is required), checked before the rate limit and faults.
    auto auth_route = internal::resolve_auth_route(req, *segments, auth_.metadata_server());
    std::optional<internal::Route> route;
    // S3 (path-style /bucket/key) owns every path that is not GCS's, auth's or control's.
    std::optional<internal::S3Route> s3_route;
    if (!auth_route) s3_route = internal::resolve_s3_route(req, *segments);
    if (!auth_route && !s3_route) {
      route = internal::resolve_route(req, *segments);
      if (!route) {
        // The path only: a query may carry credentials (access_token=...).
        std::fprintf(stderr, "dataflux-emulator: no route for %s %s\n", req.method.c_str(),
                     req.path.c_str());
        control_.count("unknown");
        return deliver(internal::error_reply(
                           404, absl::StrCat("No such route: ", req.method, " ", req.target)),
                       {}, res);
      }
    }
    const std::string& operation = auth_route ? auth_route->operation
                                   : s3_route ? s3_route->operation
                                              : route->operation;
    control_.count(operation);
    if (route && !auth_.authorized(req)) {
      return deliver(internal::Auth::unauthorized_reply(), {}, res);
    }
    if (s3_route) {
      if (auto denied = s3_.authenticate(req)) return deliver(*std::move(denied), {}, res);
    }
    const bool admitted = control_.admit();
    const CloudModel model = control_.model();
    if (!control_.sleep_for(model.first_byte_latency)) return drop(req, res);
    if (!admitted) {
      // S3 says "slow down" with a 503.
      return deliver(s3_route
                         ? internal::s3_error_reply(503, "SlowDown",
                                                    "Please reduce your "
                                                    "request rate.")
                         : internal::error_reply(429, "The rate of requests exceeds the limit"),
                     {}, res);
    }
    std::optional<Fault> fault = control_.take(operation);
    if (fault && fault->kind == Fault::Kind::kStatus) {
      if (s3_route) {
        const int status = fault->http_status;
        const char* code = status == 503   ? "SlowDown"
                           : status >= 500 ? "InternalError"
                           : status == 403 ? "AccessDenied"
                                           : "InvalidRequest";
        return deliver(internal::s3_error_reply(status, code, "Injected fault"), {}, res);
      }
      return deliver(internal::error_reply(fault->http_status, "Injected fault"), {}, res);
    }
    if (fault && fault->kind == Fault::Kind::kReset) return drop(req, res);
    if (fault && fault->kind == Fault::Kind::kHang) {
      (void)control_.sleep_for(fault->stall_for);
      return drop(req, res);
    }
    if (fault && fault->kind == Fault::Kind::kCorruptUpload && !req.body.empty()) {
      // A server (or proxy) that damages the bytes and does not check the caller's checksums.
      auto& damaged = const_cast<httplib::Request&>(req);  // handle()'s own local, as in read_body
      damaged.body.back() = static_cast<char>(damaged.body.back() ^ 0x01);
      for (const char* h : {"x-goog-hash", "Content-MD5", "x-amz-checksum-crc32c"}) {
        damaged.headers.erase(h);
      }
    }
    if (fault && fault->kind == Fault::Kind::kLostReply) {
      // Applied, then the reply is lost: the client cannot tell this from a request that
      // never arrived.
      if (s3_route) {
        (void)s3_.execute(*s3_route, req);
      } else if (!auth_route) {
        (void)service_->execute(*route, req);
      }
      return drop(req, res);
    }
    if (auth_route) {
      return deliver(auth_.execute(*auth_route, req, token_uri(), default_email()), fault, res);
    }
    internal::Reply reply = s3_route ? s3_.execute(*s3_route, req) : service_->execute(*route, req);
    control_.run_after(operation);
    deliver(std::move(reply), fault, res);
  }

  // Reads the request body into req.body at no more than the model's per-stream rate. Sleeping
  // (not spinning) while ahead of schedule leaves the rest in the socket, so TCP flow control
  // slows the client down as a bandwidth-limited link would.
  bool read_body(const httplib::Request& req, const httplib::ContentReader& reader) {
    std::string body;
    if (auto length = internal::parse_u64(req.get_header_value("Content-Length"))) {
      body.reserve(static_cast<std::size_t>(*length));  // bounded by the pre-routing check
      // A GiB-sized upload otherwise spends more CPU on page faults than on copying.
      dataflux::internal::advise_huge_pages(body.data(), body.capacity());
    }
    const double rate = control_.model().stream_bytes_per_second;
    const auto started = std::chrono::steady_clock::now();
    // Sleep only when this far ahead: ~20 sleeps a second, like the download slices.
    const auto slack = std::chrono::milliseconds(50);
    bool ok = reader([&](const char* data, std::size_t n) {
      body.append(data, n);
      if (rate <= 0) return true;
      const auto due = started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                     std::chrono::duration<double>(body.size() / rate));
      if (due - std::chrono::steady_clock::now() < slack) return true;
      return control_.sleep_until(due);
    });
    if (!ok) return false;
    // httplib's Request is its own non-const local (as in handle()), so this is sound.
    const_cast<httplib::Request&>(req).body = std::move(body);
    return true;
  }

  std::string token_uri() const { return endpoint_ + "/token"; }
  // The metadata server's service account.
  std::string default_email() const {
    return absl::StrCat("dataflux-emulator@", options_.project, ".iam.gserviceaccount.com");
  }

  void drop(const httplib::Request& req, httplib::Response& res) {
    shutdown_connections(req.local_port, req.remote_port);
    res.status = 500;
  }

  void deliver(Reply reply, std::optional<Fault> fault, httplib::Response& res) {
    if (fault && internal::apply_range_fault(*fault, &reply)) fault.reset();
    res.status = reply.status;
    for (auto& [key, value] : reply.headers) res.set_header(key, value);
    const double rate = control_.model().stream_bytes_per_second;
    const std::uint64_t length = reply.blob ? reply.length : reply.body.size();
    if (length == 0) {
      // No body to stall in: a server that goes silent holds back the whole reply.
      if (fault && fault->kind == Fault::Kind::kStall) (void)control_.sleep_for(fault->stall_for);
      res.set_content("", reply.content_type);
      return;
    }
    if (!reply.blob && !fault && rate <= 0 && !reply.chunked) {
      res.set_content(std::move(reply.body), reply.content_type);
      return;
    }
    auto stream = std::make_shared<BodyStream>();
    stream->blob = std::move(reply.blob);
    stream->text = std::move(reply.body);
    stream->offset = reply.offset;
    stream->fault = fault;
    stream->bytes_per_second = rate;
    if (reply.chunked) {
      // No Content-Length (a transcoded object, as GCS sends it): chunked transfer coding.
      res.set_chunked_content_provider(
          reply.content_type, [this, stream, length](std::size_t offset, httplib::DataSink& sink) {
            if (offset >= length) {
              sink.done();
              return true;
            }
            return write_slice(*stream, offset, length - offset, sink);
          });
      return;
    }
    res.set_content_provider(
        static_cast<std::size_t>(length), reply.content_type,
        [this, stream](std::size_t offset, std::size_t remaining, httplib::DataSink& sink) {
          return write_slice(*stream, offset, remaining, sink);
        });
  }

  bool write_slice(BodyStream& s, std::size_t offset, std::size_t remaining,
                   httplib::DataSink& sink) {
    if (offset == 0) s.started = std::chrono::steady_clock::now();
    std::size_t n = std::min(remaining, kSliceBytes);
    if (s.bytes_per_second > 0) {
      // ~20 slices a second keeps the pacing smooth without tiny writes.
      n = std::min(n,
                   std::max<std::size_t>(4096, static_cast<std::size_t>(s.bytes_per_second / 20)));
    }
    if (s.fault) {
      if (offset < s.fault->after_bytes) {
        n = std::min<std::size_t>(n, s.fault->after_bytes - offset);
      } else if (s.fault->kind == Fault::Kind::kBreakAfter) {
        return false;  // httplib closes the connection mid-body
      } else if (!s.stalled) {
        s.stalled = true;
        if (!control_.sleep_for(s.fault->stall_for)) return false;
      }
    }
    const char* data = nullptr;
    if (!s.blob) {
      data = s.text.data() + offset;
    } else if (const std::string* memory = s.blob->memory()) {
      data = memory->data() + s.offset + offset;
    } else {
      s.buffer.resize(n);
      if (!s.blob->read(s.offset + offset, n, s.buffer.data())) return false;
      data = s.buffer.data();
    }
    if (!sink.write(data, n)) return false;
    if (s.bytes_per_second > 0) {
      const auto due =
          s.started +
          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
              std::chrono::duration<double>(static_cast<double>(offset + n) / s.bytes_per_second));
      if (!control_.sleep_until(due)) return false;
    }
    return true;
  }

  Reply control_request(const httplib::Request& req, const std::vector<std::string>& segments) {
    const std::string what = segments.size() == 2 ? segments[1] : "";
    if (req.method == "GET" && what == "counters") {
      Reply reply;
      reply.body = control_.counters_json();
      return reply;
    }
    if (req.method == "POST" && (what == "faults" || what == "model" || what == "reset")) {
      absl::Status status;
      if (what == "faults") status = control_.apply_fault_json(req.body);
      if (what == "model") status = control_.apply_model_json(req.body);
      if (what == "reset") {
        control_.clear_faults();
        control_.reset_counters();
      }
      if (!status.ok()) return internal::status_reply(status);
      Reply reply;
      reply.body = "{}";
      return reply;
    }
    return internal::error_reply(404, absl::StrCat("No such control endpoint: ", req.target));
  }

  EmulatorOptions options_;
  internal::Store store_;
  internal::Uploads uploads_;
  internal::Control control_;
  internal::Auth auth_;
  internal::S3Service s3_;
  std::unique_ptr<internal::ObjectService> service_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::string endpoint_;
};

absl::StatusOr<std::unique_ptr<Emulator>> Emulator::start(EmulatorOptions options) {
  auto impl = std::make_unique<Impl>(std::move(options));
  if (auto s = impl->start(); !s.ok()) return s;
  return std::unique_ptr<Emulator>(new Emulator(std::move(impl)));
}

Emulator::Emulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Emulator::~Emulator() = default;

int Emulator::port() const { return impl_->port_; }
std::string Emulator::endpoint() const { return impl_->endpoint_; }

absl::Status Emulator::create_bucket(const std::string& bucket) {
  return impl_->store_.create_bucket(bucket, "");
}

absl::StatusOr<ObjectInfo> Emulator::put_object(const std::string& bucket, const std::string& name,
                                                std::string data) {
  auto object = impl_->store_.insert(bucket, name, std::move(data), internal::NewObject{}, {});
  if (!object.ok()) return object.status();
  return ObjectInfo{object->name, object->size(), object->generation, object->crc32c};
}

absl::StatusOr<std::string> Emulator::get_object_data(const std::string& bucket,
                                                      const std::string& name) {
  auto object = impl_->store_.get(bucket, name, std::nullopt);
  if (!object.ok()) return object.status();
  std::string data(object->size(), '\0');
  if (!data.empty() && !object->blob->read(0, data.size(), data.data())) {
    return absl::InternalError(absl::StrCat("Reading ", bucket, "/", name, " failed"));
  }
  return data;
}

std::vector<ObjectInfo> Emulator::list_objects(const std::string& bucket) {
  std::vector<ObjectInfo> out;
  for (const auto& o : impl_->store_.all_objects(bucket)) {
    out.push_back(ObjectInfo{o.name, o.size(), o.generation, o.crc32c});
  }
  return out;
}

void Emulator::after_next(const std::string& operation, std::function<void()> action) {
  impl_->control_.after_next(operation, std::move(action));
}

void Emulator::inject_fault(const std::string& operation, Fault fault) {
  impl_->control_.inject(operation, fault);
}
std::size_t Emulator::pending_faults(const std::string& operation) const {
  return impl_->control_.pending(operation);
}
void Emulator::clear_faults() { impl_->control_.clear_faults(); }
void Emulator::set_chaos(ChaosOptions chaos) { impl_->control_.set_chaos(chaos); }
std::map<std::string, std::uint64_t> Emulator::chaos_counts() const {
  return impl_->control_.chaos_counts();
}
void Emulator::set_cloud_model(CloudModel model) { impl_->control_.set_model(model); }
std::uint64_t Emulator::request_count(const std::string& operation) const {
  return impl_->control_.count_of(operation);
}
void Emulator::reset_counters() { impl_->control_.reset_counters(); }

void Emulator::set_auth(AuthConfig auth) { impl_->auth_.set_config(std::move(auth)); }
void Emulator::set_s3(S3Config s3) { impl_->s3_.set_config(std::move(s3)); }
std::string Emulator::token_uri() const { return impl_->token_uri(); }
void Emulator::expire_tokens() { impl_->auth_.expire_tokens(); }

}  // namespace dataflux::emulator
