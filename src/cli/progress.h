// Progress of a command that moves many objects: one live status line on a terminal (objects
// done of total, bytes, rate, ETA), redrawn a few times a second, as gcloud draws it; nothing
// when stderr is not a terminal or with -q; a one-line summary at the end either way (not
// with -q).
#ifndef DATAFLUX_SRC_CLI_PROGRESS_H_
#define DATAFLUX_SRC_CLI_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "cli/common.h"

namespace dataflux::cli {

class Progress {
 public:
  // A total the command does not know when it starts (pack learns its count of objects from
  // the library's first progress call, and never their bytes): the line leaves it out, and the
  // ETA comes from the rate of objects instead of bytes.
  static constexpr std::uint64_t kUnknown = ~std::uint64_t{0};

  // `verb`: "Copied", "Removed", ... for the summary.
  Progress(const Io& io, std::string verb, std::uint64_t total_objects, std::uint64_t total_bytes);
  ~Progress();  // stops the redraw thread (finish() prints the summary)
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Thread-safe counters.
  void add_bytes(std::uint64_t bytes) { bytes_.fetch_add(bytes, std::memory_order_relaxed); }
  void object_done() { objects_.fetch_add(1, std::memory_order_relaxed); }
  void object_skipped() { skipped_.fetch_add(1, std::memory_order_relaxed); }
  void object_failed() { failed_.fetch_add(1, std::memory_order_relaxed); }
  void set_total_objects(std::uint64_t n) { total_objects_.store(n, std::memory_order_relaxed); }

  // Stops the live line and prints the summary once: "Copied 12 objects (3.4 MiB) in 1.2 s
  // (2.8 MiB/s); 1 skipped; 2 failed", then "; " and `detail` when there is one.
  void finish(const std::string& detail = "");
  // Stops and clears the live line without the summary: before printing results on the
  // terminal, or when the command failed as a whole.
  void stop();

  // The live line's text (for tests): "[3/12 objects] 1.0 MiB/4.0 MiB, 2.0 MiB/s, ETA 2s".
  std::string line() const;

 private:
  void draw_loop();
  // Stops the redraw thread and clears the line; false when finish() or stop() already did.
  bool stop_line();

  const Io& io_;
  const std::string verb_;
  std::atomic<std::uint64_t> total_objects_;
  const std::uint64_t total_bytes_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<std::uint64_t> bytes_{0};
  std::atomic<std::uint64_t> objects_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> failed_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;        // guarded by mu_
  bool finished_ = false;    // the line is stopped; guarded by mu_
  bool summarized_ = false;  // guarded by mu_
  std::thread drawer_;
};

}  // namespace dataflux::cli

#endif  // DATAFLUX_SRC_CLI_PROGRESS_H_
