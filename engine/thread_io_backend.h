// ThreadIoBackend: the Reactor for machines where io_uring is refused (see include/sluice/engine/reactor.h).
//
// A small pool of I/O workers runs each operation as blocking syscalls (pread/preadv/pwrite, openat,
// close, statx), looping over short transfers, and resumes the awaiting coroutine on that worker. A
// blocking call cannot be interrupted: an op whose stop was requested before a worker picked it up
// completes with CancelledError, one already running finishes normally. Sleep is served by a timer
// thread and is cancelled promptly: the stop callback and the timer race under timer_mu_, and whichever
// removes the entry first hands the waiter to a worker (never resuming it inside the callback, whose
// destructor runs in the resumed frame).
#ifndef SLUICE_ENGINE_THREAD_IO_BACKEND_H_
#define SLUICE_ENGINE_THREAD_IO_BACKEND_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "sluice/engine/reactor.h"

namespace sluice::detail {

class ThreadIoBackend final : public Reactor {
 public:
  explicit ThreadIoBackend(int io_threads);
  ~ThreadIoBackend() override;

  void Execute(std::coroutine_handle<> handle) override;
  IoBackend backend() const noexcept override { return IoBackend::kThreads; }
  std::string_view backend_name() const noexcept override { return "threads"; }

  Task<absl::StatusOr<int>> Open(std::string path, int flags, mode_t mode) override;
  Task<absl::StatusOr<size_t>> Read(int fd, std::span<std::byte> buf, uint64_t offset) override;
  Task<absl::StatusOr<size_t>> Readv(int fd, std::vector<iovec> iov, uint64_t offset) override;
  Task<absl::StatusOr<size_t>> Write(int fd, std::span<const std::byte> buf, uint64_t offset) override;
  Task<absl::Status> Close(int fd) override;
  Task<absl::StatusOr<FileStat>> Stat(std::string path) override;
  Task<absl::StatusOr<FileStat>> Stat(int fd) override;
  Task<absl::Status> Sleep(absl::Duration duration) override;

  // Work for the I/O workers; Run() ends by resuming a coroutine and must not touch `this` after that.
  class Job {
   public:
    virtual void Run() = 0;

   protected:
    ~Job() = default;
  };

 private:
  class SleepOp;
  using Clock = std::chrono::steady_clock;

  struct WorkItem {
    Job* job;  // or, when null, a coroutine to resume
    void* resume;
  };

  void Push(WorkItem item);
  void WorkerLoop();
  void TimerLoop();
  Task<absl::StatusOr<size_t>> Transfer(bool write, int fd, IoVecCursor cursor, uint64_t offset);
  Task<absl::StatusOr<FileStat>> StatImpl(int dirfd, std::string path, int flags, std::string what);

  std::mutex work_mu_;
  std::condition_variable work_cv_;
  std::deque<WorkItem> work_;
  bool work_stop_ = false;
  std::vector<std::thread> workers_;

  // Lock order: timer_mu_ before work_mu_ (a fired or cancelled sleep is pushed while holding it).
  std::mutex timer_mu_;
  std::condition_variable timer_cv_;
  std::multimap<Clock::time_point, SleepOp*> timers_;
  bool timer_stop_ = false;
  std::thread timer_thread_;

  std::atomic<int64_t> outstanding_{0};

  template <class F>
  friend class BlockingOp;
};

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_THREAD_IO_BACKEND_H_
