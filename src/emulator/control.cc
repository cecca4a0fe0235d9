#include "emulator/control.h"

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace dataflux::emulator::internal {
namespace {

std::optional<double> number(const rapidjson::Value& doc, const char* key) {
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd() || !it->value.IsNumber()) return std::nullopt;
  double value = it->value.GetDouble();
  if (!std::isfinite(value) || value < 0) return std::nullopt;
  return value;
}

absl::StatusOr<rapidjson::Document> parse_object(const std::string& body) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return absl::InvalidArgumentError("Body must be a JSON object");
  }
  return doc;
}

}  // namespace

void Control::inject(const std::string& operation, Fault fault) {
  std::lock_guard<std::mutex> lock(mu_);
  faults_[operation].push_back(fault);
}

std::optional<Fault> Control::take(const std::string& operation) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = faults_.find(operation);
  if (it != faults_.end() && !it->second.empty()) {
    Fault fault = it->second.front();
    it->second.pop_front();
    return fault;
  }
  if (chaos_.probability <= 0 ||
      std::uniform_real_distribution<double>(0, 1)(chaos_rng_) >= chaos_.probability) {
    return std::nullopt;
  }
  // The kinds, the last three for media reads only.
  using Make = Fault (*)(std::uint64_t after, absl::Duration stall);
  static const std::pair<const char*, Make> kKinds[] = {
      {"status 429", [](std::uint64_t, absl::Duration) { return Fault::status(429); }},
      {"status 503", [](std::uint64_t, absl::Duration) { return Fault::status(503); }},
      {"reset", [](std::uint64_t, absl::Duration) { return Fault::reset(); }},
      {"break after K bytes",
       [](std::uint64_t k, absl::Duration) { return Fault::break_after(k); }},
      {"stall", [](std::uint64_t k, absl::Duration d) { return Fault::stall(d, k); }},
      {"lost reply", [](std::uint64_t, absl::Duration) { return Fault::lost_reply(); }},
      {"200 to a ranged GET", [](std::uint64_t, absl::Duration) { return Fault::ignore_range(); }},
      {"shifted 206",
       [](std::uint64_t k, absl::Duration) { return Fault::shift_range(1 + k % 4096); }},
      {"overlong 206",
       [](std::uint64_t k, absl::Duration) { return Fault::long_range(1 + k % 4096); }},
  };
  const bool media = operation == "objects.media" || operation == "s3.get";
  const int pick = std::uniform_int_distribution<int>(0, media ? 8 : 5)(chaos_rng_);
  const std::uint64_t after =
      std::uniform_int_distribution<std::uint64_t>(0, chaos_.max_after_bytes)(chaos_rng_);
  const std::string kind = kKinds[pick].first;
  const Fault fault = kKinds[pick].second(after, chaos_.stall);
  ++chaos_counts_[kind];
  return fault;
}

void Control::set_chaos(ChaosOptions chaos) {
  std::lock_guard<std::mutex> lock(mu_);
  chaos_ = chaos;
  chaos_rng_.seed(chaos.seed);
  if (chaos.probability > 0) chaos_counts_.clear();  // a new run; turning it off keeps them
}

std::map<std::string, std::uint64_t> Control::chaos_counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return chaos_counts_;
}

std::size_t Control::pending(const std::string& operation) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = faults_.find(operation);
  return it == faults_.end() ? 0 : it->second.size();
}

void Control::clear_faults() {
  std::lock_guard<std::mutex> lock(mu_);
  faults_.clear();
}

void Control::after_next(const std::string& operation, std::function<void()> action) {
  std::lock_guard<std::mutex> lock(mu_);
  after_[operation].push_back(std::move(action));
}

void Control::run_after(const std::string& operation) {
  std::function<void()> action;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = after_.find(operation);
    if (it == after_.end() || it->second.empty()) return;
    action = std::move(it->second.front());
    it->second.pop_front();
  }
  action();  // outside the lock: it may call back into the emulator
}

void Control::count(const std::string& operation) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_[operation];
}

std::uint64_t Control::count_of(const std::string& operation) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = counters_.find(operation);
  return it == counters_.end() ? 0 : it->second;
}

void Control::reset_counters() {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.clear();
}

std::string Control::counters_json() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [operation, count] : counters_) {
      w.Key(operation.data(), static_cast<rapidjson::SizeType>(operation.size()));
      w.Uint64(count);
    }
  }
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

void Control::set_model(CloudModel model) {
  std::lock_guard<std::mutex> lock(mu_);
  model_ = model;
  tokens_ = std::max(1.0, model.max_requests_per_second);
  refilled_at_ = std::chrono::steady_clock::now();
}

CloudModel Control::model() const {
  std::lock_guard<std::mutex> lock(mu_);
  return model_;
}

bool Control::admit() {
  std::lock_guard<std::mutex> lock(mu_);
  const double rate = model_.max_requests_per_second;
  if (rate <= 0) return true;
  const auto now = std::chrono::steady_clock::now();
  const double elapsed = std::chrono::duration<double>(now - refilled_at_).count();
  refilled_at_ = now;
  tokens_ = std::min(std::max(1.0, rate), tokens_ + elapsed * rate);
  if (tokens_ < 1.0) return false;
  tokens_ -= 1.0;
  return true;
}

bool Control::sleep_for(absl::Duration duration) {
  if (duration <= absl::ZeroDuration()) return !stopping();
  return sleep_until(std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(duration));
}

bool Control::sleep_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return !stop_cv_.wait_until(lock, deadline, [this] { return stopping_; });
}

void Control::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
}

bool Control::stopping() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stopping_;
}

absl::Status Control::apply_fault_json(const std::string& body) {
  auto doc = parse_object(body);
  if (!doc.ok()) return doc.status();
  auto op = doc->FindMember("operation");
  auto kind = doc->FindMember("kind");
  if (op == doc->MemberEnd() || !op->value.IsString() || kind == doc->MemberEnd() ||
      !kind->value.IsString()) {
    return absl::InvalidArgumentError("A fault needs string fields \"operation\" and \"kind\"");
  }
  const std::string k = kind->value.GetString();
  const double after = number(*doc, "after_bytes").value_or(0);
  Fault fault;
  if (k == "status") {
    const double status = number(*doc, "http_status").value_or(503);
    if (status < 100 || status > 599) return absl::InvalidArgumentError("Bad http_status");
    fault = Fault::status(static_cast<int>(status));
  } else if (k == "reset") {
    fault = Fault::reset();
  } else if (k == "break") {
    fault = Fault::break_after(static_cast<std::uint64_t>(after));
  } else if (k == "stall") {
    fault = Fault::stall(absl::Milliseconds(number(*doc, "stall_ms").value_or(0)),
                         static_cast<std::uint64_t>(after));
  } else if (k == "hang") {
    fault = Fault::hang(absl::Milliseconds(number(*doc, "stall_ms").value_or(0)));
  } else if (k == "ignore_range") {
    fault = Fault::ignore_range();
  } else if (k == "shift_range") {
    fault = Fault::shift_range(static_cast<std::uint64_t>(after));
  } else if (k == "long_range") {
    fault = Fault::long_range(static_cast<std::uint64_t>(after));
  } else if (k == "lost_reply") {
    fault = Fault::lost_reply();
  } else if (k == "corrupt_upload") {
    fault = Fault::corrupt_upload();
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "Unknown fault kind \"", k,
        "\" (status, reset, break, stall, hang, ignore_range, shift_range, long_range, lost_reply, "
        "corrupt_upload)"));
  }
  const double count = number(*doc, "count").value_or(1);
  if (count < 1 || count > 100000) return absl::InvalidArgumentError("Bad count");
  for (int i = 0; i < static_cast<int>(count); ++i) inject(op->value.GetString(), fault);
  return absl::OkStatus();
}

absl::Status Control::apply_model_json(const std::string& body) {
  auto doc = parse_object(body);
  if (!doc.ok()) return doc.status();
  CloudModel model = this->model();
  if (doc->HasMember("latency_ms")) {
    auto v = number(*doc, "latency_ms");
    if (!v) return absl::InvalidArgumentError("Bad latency_ms");
    model.first_byte_latency = absl::Milliseconds(*v);
  }
  if (doc->HasMember("stream_mb_per_s")) {
    auto v = number(*doc, "stream_mb_per_s");
    if (!v) return absl::InvalidArgumentError("Bad stream_mb_per_s");
    model.stream_bytes_per_second = *v * 1e6;
  }
  if (doc->HasMember("max_requests_per_s")) {
    auto v = number(*doc, "max_requests_per_s");
    if (!v) return absl::InvalidArgumentError("Bad max_requests_per_s");
    model.max_requests_per_second = *v;
  }
  set_model(model);
  return absl::OkStatus();
}

}  // namespace dataflux::emulator::internal
