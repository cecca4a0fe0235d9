// dataflux-emulator: a local GCS JSON API server with fault injection and a cloud model.
// Prints its URL as the first line of stdout, then serves until SIGINT or SIGTERM.
#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "emulator/emulator.h"

namespace {

constexpr char kUsage[] =
    "Usage: dataflux-emulator [options]\n"
    "  --host H                 loopback address to bind (default 127.0.0.1)\n"
    "  --port P                 port, 0 = a free one (default 0)\n"
    "  --threads N              connections served at once (a thread each, started as they\n"
    "                           arrive; default 1024)\n"
    "  --latency-ms X           first-byte latency added to every response\n"
    "  --stream-mb-per-s Y      per-response bandwidth in MB/s (0 = unlimited)\n"
    "  --max-requests-per-s Z   request-rate limit over all requests, above it 429\n"
    "  --storage-dir D          keep object bytes in files under D (default: memory)\n"
    "  --bucket NAME            create this bucket at start (repeatable)\n"
    "  --populate BUCKET/PREFIX:COUNT:SIZE\n"
    "                           create COUNT objects of SIZE bytes named PREFIX00000000... in\n"
    "                           BUCKET (created if needed) before serving, without HTTP: a big\n"
    "                           listing for benchmarks in an instant (repeatable)\n"
    "  --project P              project that owns the buckets (default test-project)\n"
    "  --no-md5                 skip MD5 of uploaded objects (no md5Hash, as for composites):\n"
    "                           saves emulator CPU that a benchmark would take from the client\n"
    "  --require-auth           storage routes want \"Authorization: Bearer <token issued here>\"\n"
    "  --service-account-key EMAIL=PEM_FILE\n"
    "                           accept JWT-bearer grants at POST /token signed by this key\n"
    "                           (a public key PEM, or the private key PEM) (repeatable)\n"
    "  --refresh-client CLIENT_ID:CLIENT_SECRET:REFRESH_TOKEN\n"
    "                           accept this refresh_token grant at POST /token (repeatable)\n"
    "  --metadata-server        serve the GCE metadata server's token and email under\n"
    "                           /computeMetadata/v1/instance/service-accounts/default/\n"
    "  --token-lifetime-s N     lifetime of issued access tokens (default 3600)\n"
    "  --s3-keys FILE           S3 access keys, one \"ACCESS_KEY_ID:SECRET\" a line: SigV4\n"
    "                           signatures are verified against them (a file, so secrets stay\n"
    "                           out of the process list)\n"
    "  --s3-require-signature   refuse unsigned S3 requests (default: serve them)\n"
    "  --help                   this text\n"
    "Prints the URL (http://127.0.0.1:PORT) as its first line, then serves until SIGINT or\n"
    "SIGTERM. Control: POST /_dataflux/faults, POST /_dataflux/model, GET /_dataflux/counters,\n"
    "POST /_dataflux/reset. Auth: POST /token (the token_uri is URL/token).\n";

bool read_file(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *out = text.str();
  return static_cast<bool>(in) || in.eof();
}

bool parse_number(const char* text, double* out) {
  char* end = nullptr;
  *out = std::strtod(text, &end);
  return end != text && *end == '\0' && *out >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  using dataflux::emulator::Emulator;
  dataflux::emulator::EmulatorOptions options;
  std::vector<std::string> buckets;
  struct Populate {
    std::string bucket, prefix;
    std::uint64_t count = 0, size = 0;
  };
  std::vector<Populate> populate;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (flag == "--require-auth") {
      options.auth.require_auth = true;
      continue;
    }
    if (flag == "--no-md5") {
      options.compute_md5 = false;
      continue;
    }
    if (flag == "--metadata-server") {
      options.auth.metadata_server = true;
      continue;
    }
    if (flag == "--s3-require-signature") {
      options.s3.allow_anonymous = false;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "dataflux-emulator: unknown flag or missing value: %s\n%s", flag.c_str(),
                   kUsage);
      return 2;
    }
    const char* value = argv[++i];
    double number = 0;
    const bool numeric = parse_number(value, &number);
    if (flag == "--host") {
      options.host = value;
    } else if (flag == "--storage-dir") {
      options.storage_dir = value;
    } else if (flag == "--bucket") {
      buckets.emplace_back(value);
    } else if (flag == "--populate") {
      const std::string spec = value;
      const std::size_t slash = spec.find('/');
      const std::size_t colon = spec.find(':', slash == std::string::npos ? 0 : slash);
      const std::size_t second = colon == std::string::npos ? colon : spec.find(':', colon + 1);
      Populate p;
      char* end = nullptr;
      if (slash != std::string::npos && slash > 0 && second != std::string::npos) {
        p.bucket = spec.substr(0, slash);
        p.prefix = spec.substr(slash + 1, colon - slash - 1);
        p.count = std::strtoull(spec.c_str() + colon + 1, &end, 10);
        const bool count_ok = end == spec.c_str() + second;
        p.size = std::strtoull(spec.c_str() + second + 1, &end, 10);
        if (count_ok && *end == '\0' && second + 1 < spec.size()) {
          populate.push_back(p);
          continue;
        }
      }
      std::fprintf(stderr, "dataflux-emulator: --populate wants BUCKET/PREFIX:COUNT:SIZE: %s\n",
                   value);
      return 2;
    } else if (flag == "--project") {
      options.project = value;
    } else if (flag == "--service-account-key") {
      const std::string spec = value;
      const std::size_t eq = spec.find('=');
      std::string pem;
      if (eq == 0 || eq == std::string::npos || !read_file(spec.substr(eq + 1), &pem)) {
        std::fprintf(stderr,
                     "dataflux-emulator: --service-account-key wants EMAIL=PEM_FILE (a readable "
                     "file): %s\n",
                     value);
        return 2;
      }
      options.auth.service_account_public_keys[spec.substr(0, eq)] = std::move(pem);
    } else if (flag == "--s3-keys") {
      std::string text;
      if (!read_file(value, &text)) {
        std::fprintf(stderr, "dataflux-emulator: --s3-keys wants a readable file: %s\n", value);
        return 2;
      }
      std::size_t start = 0;
      while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        start = end + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] == '#') continue;
        const std::size_t colon = line.find(':');
        if (colon == 0 || colon == std::string::npos || colon + 1 == line.size()) {
          std::fprintf(stderr, "dataflux-emulator: --s3-keys lines are ACCESS_KEY_ID:SECRET\n");
          return 2;
        }
        options.s3.access_keys[line.substr(0, colon)] = line.substr(colon + 1);
      }
    } else if (flag == "--refresh-client") {
      const std::string spec = value;
      const std::size_t first = spec.find(':');
      const std::size_t last = spec.rfind(':');
      if (first == 0 || first == std::string::npos || first == last || last + 1 == spec.size()) {
        std::fprintf(stderr,
                     "dataflux-emulator: --refresh-client wants "
                     "CLIENT_ID:CLIENT_SECRET:REFRESH_TOKEN\n");
        return 2;
      }
      options.auth.refresh_clients.push_back(
          {spec.substr(0, first), spec.substr(first + 1, last - first - 1), spec.substr(last + 1)});
    } else if (!numeric) {
      std::fprintf(stderr, "dataflux-emulator: bad value for %s: %s\n", flag.c_str(), value);
      return 2;
    } else if (flag == "--port" && number <= 65535) {
      options.port = static_cast<int>(number);
    } else if (flag == "--threads" && number >= 1 && number <= 4096) {
      options.threads = static_cast<int>(number);
    } else if (flag == "--token-lifetime-s" && number >= 1) {
      options.auth.token_lifetime = absl::Seconds(number);
    } else if (flag == "--latency-ms") {
      options.model.first_byte_latency = absl::Milliseconds(number);
    } else if (flag == "--stream-mb-per-s") {
      options.model.stream_bytes_per_second = number * 1e6;
    } else if (flag == "--max-requests-per-s") {
      options.model.max_requests_per_second = number;
    } else {
      std::fprintf(stderr, "dataflux-emulator: unknown flag or bad value: %s %s\n%s", flag.c_str(),
                   value, kUsage);
      return 2;
    }
  }

  // Block the stop signals before any thread starts, so only sigwait() below sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  auto emulator = Emulator::start(options);
  if (!emulator.ok()) {
    std::fprintf(stderr, "dataflux-emulator: %s\n", emulator.status().ToString().c_str());
    return 1;
  }
  for (const auto& bucket : buckets) {
    if (auto s = (*emulator)->create_bucket(bucket); !s.ok()) {
      std::fprintf(stderr, "dataflux-emulator: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  for (const auto& p : populate) {
    if (std::find(buckets.begin(), buckets.end(), p.bucket) == buckets.end()) {
      auto s = (*emulator)->create_bucket(p.bucket);  // may exist from an earlier --populate
      if (!s.ok() && !absl::IsAlreadyExists(s)) {
        std::fprintf(stderr, "dataflux-emulator: --populate: %s\n", s.ToString().c_str());
        return 1;
      }
    }
    const std::string bytes(p.size, 'x');
    char name[32];
    for (std::uint64_t i = 0; i < p.count; ++i) {
      std::snprintf(name, sizeof(name), "%08llu", static_cast<unsigned long long>(i));
      if (auto s = (*emulator)->put_object(p.bucket, p.prefix + name, bytes); !s.ok()) {
        std::fprintf(stderr, "dataflux-emulator: --populate: %s\n", s.status().ToString().c_str());
        return 1;
      }
    }
  }
  std::printf("%s\n", (*emulator)->endpoint().c_str());
  std::fflush(stdout);
  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "dataflux-emulator: stopping on signal %d\n", signal_number);
  return 0;
}
