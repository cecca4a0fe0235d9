#include "core/thread_pool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <mutex>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>

#include "gtest/gtest.h"

namespace dataflux::internal {
namespace {

// Occupies every thread of `pool` until the returned promise is set.
std::promise<void> occupy(ThreadPool& pool, std::size_t threads) {
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<std::size_t> started{0};
  std::promise<void> all_started;
  for (std::size_t i = 0; i < threads; ++i) {
    pool.run([released, &started, &all_started, threads] {
      if (++started == threads) all_started.set_value();
      released.wait();
    });
  }
  all_started.get_future().wait();
  return release;
}

TEST(TaskGroupTest, WaitRunsQueuedTasksWhenEveryPoolThreadIsBusy) {
  ThreadPool pool(1);
  std::promise<void> release = occupy(pool, 1);
  std::set<std::thread::id> ran_on;
  std::mutex mu;
  int ran = 0;
  {
    TaskGroup group(pool, 2);
    for (int i = 0; i < 3; ++i) {
      group.run([&] {
        std::lock_guard<std::mutex> lock(mu);
        ++ran;
        ran_on.insert(std::this_thread::get_id());
      });
    }
    group.wait();  // the pool's only thread is blocked: this thread must run all three
  }
  EXPECT_EQ(ran, 3);
  EXPECT_EQ(ran_on, std::set<std::thread::id>{std::this_thread::get_id()});
  release.set_value();
}

TEST(TaskGroupTest, RunOneIfStalledLeavesWorkToARunningPoolThread) {
  ThreadPool pool(2);
  TaskGroup group(pool, 1);
  std::promise<void> started, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  group.run([&, released] {
    started.set_value();
    released.wait();
    ++ran;
  });
  started.get_future().wait();
  group.run([&] { ++ran; });                 // queued behind the first, for the same pool thread
  EXPECT_FALSE(group.run_one_if_stalled());  // a pool thread works for the group: no stealing
  EXPECT_EQ(ran.load(), 0);
  release.set_value();
  group.wait();
  EXPECT_EQ(ran.load(), 2);

  ThreadPool busy(1);
  std::promise<void> unblock = occupy(busy, 1);
  TaskGroup starved(busy, 1);
  starved.run([&] { ++ran; });
  EXPECT_TRUE(starved.run_one_if_stalled());  // no pool thread will come: run it here
  EXPECT_EQ(ran.load(), 3);
  unblock.set_value();
}

TEST(TaskGroupTest, NestedGroupsOnASmallPoolFinish) {
  ThreadPool pool(2);
  std::atomic<int> leaves{0};
  absl::Status s = parallel_for(pool, 4, 4, [&](int) {
    // Each outer task waits for an inner group on the same pool, which is already full.
    return parallel_for(pool, 4, 4, [&](int) {
      ++leaves;
      return absl::OkStatus();
    });
  });
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(leaves.load(), 16);
}

TEST(TaskGroupTest, AtMostMaxParallelTasksRunAtOnce) {
  ThreadPool pool(8);
  std::atomic<int> active{0}, peak{0};
  {
    TaskGroup group(pool, 2);
    for (int i = 0; i < 200; ++i) {
      group.run([&] {
        const int now = ++active;
        for (int seen = peak.load(); now > seen && !peak.compare_exchange_weak(seen, now);) {
        }
        --active;
      });
    }
    group.wait();
  }
  // Two on pool threads, plus the waiting thread helping.
  EXPECT_LE(peak.load(), 3);
  EXPECT_GE(peak.load(), 1);
  EXPECT_LE(pool.threads_started(), 3u);  // threads start only for work no idle thread takes
}

TEST(TaskGroupTest, WaitRethrowsTheFirstExceptionAfterEveryTaskRan) {
  ThreadPool pool(2);
  std::atomic<int> ran{0};
  TaskGroup group(pool, 2);
  group.run([&] {
    ++ran;
    throw std::runtime_error("task failed");
  });
  for (int i = 0; i < 5; ++i) group.run([&] { ++ran; });
  EXPECT_THROW(group.wait(), std::runtime_error);
  EXPECT_EQ(ran.load(), 6);
  group.wait();  // reported once
}

TEST(TaskGroupTest, ZeroParallelRunsEverythingOnTheWaitingThread) {
  ThreadPool pool(4);
  std::set<std::thread::id> ran_on;
  TaskGroup group(pool, 0);
  for (int i = 0; i < 4; ++i) group.run([&] { ran_on.insert(std::this_thread::get_id()); });
  group.wait();
  EXPECT_EQ(ran_on, std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(pool.threads_started(), 0u);
}

TEST(ParallelForTest, ReturnsTheFirstFailureByIndexAndRunsEveryIndex) {
  std::atomic<int> ran{0};
  absl::Status s = parallel_for(ThreadPool::blocking(), 10, 4, [&](int i) {
    ++ran;
    if (i == 7) return absl::InternalError("seven");
    if (i == 3) return absl::NotFoundError("three");
    return absl::OkStatus();
  });
  EXPECT_EQ(ran.load(), 10);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "three");
}

TEST(ThreadPoolTest, StartsThreadsOnlyAsWorkArrivesUpToItsMaximum) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.threads_started(), 0u);
  std::promise<void> release = occupy(pool, 3);
  std::atomic<int> ran{0};
  std::promise<void> done;
  pool.run([&] {
    if (++ran == 1) done.set_value();
  });
  EXPECT_EQ(pool.threads_started(), 3u);  // queued, not a fourth thread
  release.set_value();
  done.get_future().wait();
  EXPECT_EQ(ran.load(), 1);
}

TEST(ThreadPoolTest, ATaskNoThreadCanRunIsRefusedNotQueuedForEver) {
  ThreadPool pool(2);
  ThreadPool::fail_thread_starts_for_testing(1);
  bool ran = false;
  EXPECT_THROW(pool.run([&] { ran = true; }), std::system_error);
  EXPECT_EQ(pool.threads_started(), 0u);
  // With a thread running, a failed start of a second one queues the task for the first.
  std::promise<void> started;
  std::promise<void> release;
  pool.run([&] {
    started.set_value();
    release.get_future().wait();
  });
  started.get_future().wait();
  ThreadPool::fail_thread_starts_for_testing(1);
  std::promise<void> second;
  pool.run([&] { second.set_value(); });
  EXPECT_EQ(pool.threads_started(), 1u);
  release.set_value();
  second.get_future().wait();
  EXPECT_FALSE(ran);
  ThreadPool::fail_thread_starts_for_testing(0);
}

TEST(TaskGroupTest, WithNoPoolThreadTheWaiterRunsEveryTask) {
  ThreadPool pool(2);
  ThreadPool::fail_thread_starts_for_testing(1000);
  std::atomic<int> ran{0};
  {
    TaskGroup group(pool, 2);
    for (int i = 0; i < 5; ++i) group.run([&] { ++ran; });
    group.wait();
  }
  ThreadPool::fail_thread_starts_for_testing(0);
  EXPECT_EQ(ran.load(), 5);
  EXPECT_EQ(pool.threads_started(), 0u);
}

TEST(ThreadPoolTest, TheSharedPoolsWorkInAForkedChild) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "fork() of a threaded process under a sanitizer runtime can deadlock in it";
#endif
  // Threads exist in the parent's pools before fork(); the child has none of them.
  ASSERT_TRUE(
      parallel_for(ThreadPool::blocking(), 8, 8, [](int) { return absl::OkStatus(); }).ok());
  std::promise<void> cpu;
  ThreadPool::shared().run([&] { cpu.set_value(); });
  cpu.get_future().wait();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::atomic<int> ran{0};
    absl::Status s = parallel_for(ThreadPool::blocking(), 8, 8, [&](int) {
      ++ran;
      return absl::OkStatus();
    });
    std::promise<void> on_pool;
    auto future = on_pool.get_future();
    ThreadPool::shared().run([&] { on_pool.set_value(); });
    future.wait();
    _exit(s.ok() && ran.load() == 8 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace dataflux::internal
