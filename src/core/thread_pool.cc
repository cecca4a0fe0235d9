#include "core/thread_pool.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <system_error>

#include "core/retry_policy.h"

namespace dataflux::internal {

ThreadPool::ThreadPool(std::size_t max_threads)
    : max_threads_(std::max<std::size_t>(1, max_threads)) {
  threads_.reserve(max_threads_);
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  // run() cannot add threads any more: every caller of run() is done by the time we are destroyed.
  for (auto& t : threads_) t.join();
}

namespace {
std::atomic<int> g_failed_thread_starts{0};
}  // namespace

void ThreadPool::fail_thread_starts_for_testing(int count) { g_failed_thread_starts = count; }

void ThreadPool::run(std::function<void()> task) {
  if (const absl::Time until = RetryBudgetScope::current(); until != absl::InfiniteFuture()) {
    task = [until, task = std::move(task)] {
      RetryBudgetScope budget(until);
      task();
    };
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    // A thread per task that no idle thread will take, up to the maximum.
    if (tasks_.size() > idle_ && threads_.size() < max_threads_) {
      try {
        if (g_failed_thread_starts > 0 && g_failed_thread_starts-- > 0) {
          throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                                  "thread start failed (test)");
        }
        threads_.emplace_back([this] { work(); });
        return;
      } catch (const std::system_error&) {
        // A running thread takes the task once it is free. With none at all nobody ever would:
        // the task is taken back and the caller told, never left queued for ever.
        if (threads_.empty()) {
          tasks_.pop_back();
          throw;
        }
      }
    }
  }
  wake_.notify_one();
}

std::size_t ThreadPool::threads_started() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_.size();
}

void ThreadPool::work() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++idle_;
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      --idle_;
      if (tasks_.empty()) return;  // stopping, and nothing left to run
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

ThreadPool& ProcessThreadPool::get() {
  const long pid = static_cast<long>(getpid());
  ThreadPool* current = pool_.load(std::memory_order_acquire);
  if (current != nullptr && owner_.load(std::memory_order_acquire) == pid) return *current;
  std::lock_guard<std::mutex> lock(mu_);
  if (pool_.load() == nullptr || owner_.load() != pid) {
    // In a child, the parent's pool (and its mutex state) is abandoned, not destroyed.
    pool_.store(new ThreadPool(threads_), std::memory_order_release);
    owner_.store(pid, std::memory_order_release);
  }
  return *pool_.load();
}

ThreadPool& ThreadPool::shared() {
  static auto* pool = new ProcessThreadPool(kSharedThreads);
  return pool->get();
}

ThreadPool& ThreadPool::blocking() {
  static auto* pool = new ProcessThreadPool(kBlockingThreads);
  return pool->get();
}

struct TaskGroup::State {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::function<void()>> queue;  // guarded by mu
  int max_parallel = 0;
  int drainers = 0;          // guarded by mu: pool tasks scheduled for this group, started or not
  int started = 0;           // guarded by mu: drainers running on a pool thread
  int running = 0;           // guarded by mu: tasks executing, on any thread
  std::exception_ptr error;  // guarded by mu: the first exception a task threw
};

TaskGroup::TaskGroup(ThreadPool& pool, int max_parallel)
    : pool_(pool), state_(std::make_shared<State>()) {
  state_->max_parallel = std::max(0, max_parallel);
}

TaskGroup::~TaskGroup() {
  try {
    wait();
  } catch (...) {  // wait() was not called: the exception has nobody to go to
  }
}

void TaskGroup::run(std::function<void()> task) {
  if (const absl::Time until = RetryBudgetScope::current(); until != absl::InfiniteFuture()) {
    task = [until, task = std::move(task)] {  // whichever thread runs it
      RetryBudgetScope budget(until);
      task();
    };
  }
  bool schedule = false;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->queue.push_back(std::move(task));
    if (state_->drainers < state_->max_parallel) {
      ++state_->drainers;
      schedule = true;
    }
  }
  if (!schedule) return;
  try {
    pool_.run([state = state_] { drain(state); });
  } catch (const std::system_error&) {  // no pool thread: wait() runs the task on its caller
    std::lock_guard<std::mutex> lock(state_->mu);
    --state_->drainers;
  }
}

// Pops the oldest queued task and runs it, counted as running, with state.mu released around
// it (held on entry and on return). False when nothing is queued.
bool TaskGroup::run_front(State& state) {
  if (state.queue.empty()) return false;
  std::function<void()> task = std::move(state.queue.front());
  state.queue.pop_front();
  ++state.running;
  state.mu.unlock();
  std::exception_ptr error;
  try {
    task();
  } catch (...) {
    error = std::current_exception();
  }
  task = nullptr;  // its captures go before the waiter is woken
  state.mu.lock();
  if (error && !state.error) state.error = error;
  --state.running;
  state.changed.notify_all();
  return true;
}

void TaskGroup::drain(const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> lock(state->mu);
  ++state->started;
  while (run_front(*state)) {
  }
  --state->started;
  --state->drainers;
}

bool TaskGroup::run_one_if_stalled() {
  std::unique_lock<std::mutex> lock(state_->mu);
  // A started drainer takes every queued task in turn; only without one can a task starve.
  return state_->started == 0 && run_front(*state_);
}

void TaskGroup::wait() {
  std::unique_lock<std::mutex> lock(state_->mu);
  for (;;) {
    while (run_front(*state_)) {
    }
    if (state_->running == 0) break;
    // Running tasks wake us when they end; one may queue another task, which we then run.
    state_->changed.wait(lock, [&] { return state_->running == 0 || !state_->queue.empty(); });
  }
  if (state_->error) {
    std::exception_ptr error = std::exchange(state_->error, nullptr);
    std::rethrow_exception(error);
  }
}

absl::Status parallel_for(ThreadPool& pool, int count, int max_parallel,
                          const std::function<absl::Status(int)>& fn) {
  if (count <= 0) return absl::OkStatus();
  std::vector<absl::Status> results(static_cast<std::size_t>(count));
  {
    // The calling thread is one of the max_parallel: it runs tasks in wait().
    TaskGroup group(pool, std::min(count, std::max(1, max_parallel)) - 1);
    for (int i = 0; i < count; ++i) {
      group.run([&results, &fn, i] { results[static_cast<std::size_t>(i)] = fn(i); });
    }
    group.wait();
  }
  for (auto& r : results) {
    if (!r.ok()) return r;
  }
  return absl::OkStatus();
}

}  // namespace dataflux::internal
