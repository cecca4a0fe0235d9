#include "cli/progress.h"

#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace dataflux::cli {
namespace {

constexpr std::chrono::milliseconds kRedraw{250};

std::string seconds_text(double seconds) {
  if (seconds < 60) return absl::StrFormat("%.0fs", seconds);
  if (seconds < 3600) return absl::StrFormat("%.0fm%02.0fs", seconds / 60, std::fmod(seconds, 60));
  return absl::StrFormat("%.0fh%02.0fm", seconds / 3600, std::fmod(seconds / 60, 60));
}

}  // namespace

Progress::Progress(const Io& io, std::string verb, std::uint64_t total_objects,
                   std::uint64_t total_bytes)
    : io_(io),
      verb_(std::move(verb)),
      total_objects_(total_objects),
      total_bytes_(total_bytes),
      start_(std::chrono::steady_clock::now()) {
  if (io_.terminal && !io_.quiet) drawer_ = std::thread([this] { draw_loop(); });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (drawer_.joinable()) drawer_.join();
}

std::string Progress::line() const {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::uint64_t bytes = bytes_.load(std::memory_order_relaxed);
  const std::uint64_t done = objects_.load(std::memory_order_relaxed) +
                             skipped_.load(std::memory_order_relaxed) +
                             failed_.load(std::memory_order_relaxed);
  const std::uint64_t total_objects = total_objects_.load(std::memory_order_relaxed);
  const double rate = elapsed > 0 ? static_cast<double>(bytes) / elapsed : 0;
  std::string text = absl::StrCat("[", done);
  if (total_objects != kUnknown) absl::StrAppend(&text, "/", total_objects);
  absl::StrAppend(&text, " objects] ", human_bytes(bytes));
  if (total_bytes_ != kUnknown) absl::StrAppend(&text, "/", human_bytes(total_bytes_));
  absl::StrAppend(&text, ", ", human_bytes(static_cast<std::uint64_t>(rate)), "/s");
  if (total_bytes_ != kUnknown) {
    if (rate > 0 && total_bytes_ > bytes) {
      absl::StrAppend(&text, ", ETA ",
                      seconds_text(static_cast<double>(total_bytes_ - bytes) / rate));
    }
  } else if (total_objects != kUnknown && done > 0 && total_objects > done) {
    absl::StrAppend(&text, ", ETA ",
                    seconds_text(static_cast<double>(total_objects - done) * elapsed /
                                 static_cast<double>(done)));
  }
  return text;
}

void Progress::draw_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // A redraw timer, not synchronisation: stop_ wakes it at once.
    cv_.wait_for(lock, kRedraw, [this] { return stop_; });
    if (stop_) break;
    std::fprintf(io_.err, "\r\x1b[K%s", line().c_str());
    std::fflush(io_.err);
  }
}

bool Progress::stop_line() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    if (finished_) return false;
    finished_ = true;
  }
  cv_.notify_all();
  if (drawer_.joinable()) drawer_.join();
  if (io_.terminal && !io_.quiet) std::fputs("\r\x1b[K", io_.err);
  return true;
}

void Progress::stop() {
  if (stop_line()) std::fflush(io_.err);
}

void Progress::finish(const std::string& detail) {
  stop_line();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (summarized_) return;
    summarized_ = true;
  }
  if (io_.quiet) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::uint64_t bytes = bytes_.load();
  const std::uint64_t objects = objects_.load();
  std::string text = absl::StrCat(verb_, " ", objects, objects == 1 ? " object" : " objects");
  if (total_bytes_ > 0 || bytes > 0) absl::StrAppend(&text, " (", human_bytes(bytes), ")");
  absl::StrAppend(&text, absl::StrFormat(" in %.1f s", elapsed));
  if (bytes > 0 && elapsed > 0) {
    absl::StrAppend(&text, " (",
                    human_bytes(static_cast<std::uint64_t>(static_cast<double>(bytes) / elapsed)),
                    "/s)");
  }
  if (skipped_.load() > 0) absl::StrAppend(&text, "; ", skipped_.load(), " skipped (existed)");
  if (failed_.load() > 0) absl::StrAppend(&text, "; ", failed_.load(), " failed");
  if (!detail.empty()) absl::StrAppend(&text, "; ", detail);
  std::fprintf(io_.err, "%s\n", text.c_str());
  std::fflush(io_.err);
}

}  // namespace dataflux::cli
