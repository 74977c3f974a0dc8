#include "engine/thread_io_backend.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/io_thread.h"
#include "engine/transfer_limits.h"
#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/detail/transfer.h"

namespace sluice::detail {
namespace {

// Bodies run on an I/O worker; named structs rather than lambdas in the coroutines (GCC 12).
struct TransferBody {
  bool write;
  int fd;
  IoVecCursor* cursor;
  uint64_t offset;
  int error = 0;
  bool zero_write = false;

  void operator()() {
    int retries = 0;
    while (!cursor->finished()) {
      const off_t at = static_cast<off_t>(offset + cursor->done());
      ssize_t n;
      if (cursor->count() == 1) {
        const size_t len = std::min(cursor->data()->iov_len, kMaxTransferChunk);
        n = write ? ::pwrite(fd, cursor->data()->iov_base, len, at) : ::pread(fd, cursor->data()->iov_base, len, at);
      } else {
        n = write ? ::pwritev(fd, cursor->data(), cursor->count(), at) : ::preadv(fd, cursor->data(), cursor->count(), at);
      }
      if (n < 0) {
        if ((errno == EINTR || errno == EAGAIN) && ++retries <= kMaxTransferRetries) continue;
        error = errno;
        return;
      }
      retries = 0;
      if (n == 0) {
        zero_write = write;
        return;  // end of file for a read
      }
      cursor->Advance(static_cast<size_t>(n));
    }
  }
};

struct OpenBody {
  const std::string* path;
  int flags;
  mode_t mode;
  int result = -1;
  int error = 0;
  void operator()() {
    result = ::open(path->c_str(), flags, mode);
    if (result < 0) error = errno;
  }
};

struct CloseBody {
  int fd;
  int error = 0;
  void operator()() {
    // No retry on EINTR: Linux has released the descriptor either way.
    if (::close(fd) != 0) error = errno;
  }
};

struct StatBody {
  int dirfd;
  const std::string* path;
  int flags;
  struct statx st {};
  int error = 0;
  void operator()() {
    std::memset(&st, 0, sizeof(st));
    if (::statx(dirfd, path->c_str(), flags, STATX_BASIC_STATS, &st) != 0) error = errno;
  }
};

}  // namespace

// Runs `*body` on an I/O worker and resumes the awaiter there. `co_await op` is false when stop was
// requested before a worker started it (then the body never ran).
template <class F>
class BlockingOp final : public ThreadIoBackend::Job {
 public:
  BlockingOp(ThreadIoBackend* backend, F* body) noexcept : backend_(backend), body_(body) {}
  BlockingOp(const BlockingOp&) = delete;
  BlockingOp& operator=(const BlockingOp&) = delete;

  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> awaiting) {
    waiter_ = awaiting;
    if constexpr (SluicePromise<Promise>) {
      token_ = awaiting.promise().stop_token();
      if (token_.stop_requested()) return false;
    }
    backend_->outstanding_.fetch_add(1, std::memory_order_relaxed);
    backend_->Push({this, nullptr});
    return true;
  }
  bool await_resume() const noexcept { return ran_; }

  void Run() override {
    ran_ = !token_.stop_requested();
    if (ran_) (*body_)();
    backend_->outstanding_.fetch_sub(1, std::memory_order_release);
    Resume(waiter_);
  }

 private:
  ThreadIoBackend* const backend_;
  F* const body_;
  std::coroutine_handle<> waiter_;
  std::stop_token token_;
  bool ran_ = false;
};

class ThreadIoBackend::SleepOp final : public ThreadIoBackend::Job {
 public:
  SleepOp(ThreadIoBackend* backend, Clock::time_point deadline) noexcept
      : backend_(backend), deadline_(deadline) {}
  SleepOp(const SleepOp&) = delete;
  SleepOp& operator=(const SleepOp&) = delete;

  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> awaiting) {
    waiter_ = awaiting;
    if constexpr (SluicePromise<Promise>) {
      const std::stop_token& token = awaiting.promise().stop_token();
      if (token.stop_requested()) {
        cancelled_ = true;
        return false;
      }
      // Registered before the timer is armed: once armed, the frame may be resumed at any moment.
      if (token.stop_possible()) stop_callback_.emplace(token, CancelCallback{this});
    }
    std::lock_guard<std::mutex> lock(backend_->timer_mu_);
    if (cancelled_) return false;  // the callback ran before we armed
    state_ = State::kArmed;
    entry_ = backend_->timers_.emplace(deadline_, this);
    backend_->outstanding_.fetch_add(1, std::memory_order_relaxed);
    backend_->timer_cv_.notify_one();
    return true;
  }
  // True when the full duration elapsed.
  bool await_resume() noexcept {
    stop_callback_.reset();
    return !cancelled_;
  }

  void Run() override {
    backend_->outstanding_.fetch_sub(1, std::memory_order_release);
    Resume(waiter_);
  }

 private:
  friend class ThreadIoBackend;
  enum class State : uint8_t { kNew, kArmed, kDone };

  struct CancelCallback {
    SleepOp* op;
    void operator()() const noexcept {
      ThreadIoBackend* backend = op->backend_;
      std::lock_guard<std::mutex> lock(backend->timer_mu_);
      if (op->state_ == State::kArmed) {
        backend->timers_.erase(op->entry_);
        op->state_ = State::kDone;
        op->cancelled_ = true;
        // Resumed by a worker: the frame destroys this callback on resumption, which must not happen
        // inside the callback itself.
        backend->Push({op, nullptr});
      } else if (op->state_ == State::kNew) {
        op->cancelled_ = true;
      }
    }
  };

  ThreadIoBackend* const backend_;
  const Clock::time_point deadline_;
  std::coroutine_handle<> waiter_;
  // Guarded by backend_->timer_mu_ while the op is registered with the timer.
  State state_ = State::kNew;
  bool cancelled_ = false;
  std::multimap<Clock::time_point, SleepOp*>::iterator entry_;
  std::optional<std::stop_callback<CancelCallback>> stop_callback_;
};

ThreadIoBackend::ThreadIoBackend(int io_threads) {
  const int n = std::max(io_threads, 1);
  workers_.reserve(n);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  timer_thread_ = std::thread([this] { TimerLoop(); });
}

ThreadIoBackend::~ThreadIoBackend() {
  assert(outstanding_.load(std::memory_order_acquire) == 0 && "Reactor destroyed with I/O in flight");
  {
    std::lock_guard<std::mutex> lock(timer_mu_);
    timer_stop_ = true;
  }
  timer_cv_.notify_all();
  timer_thread_.join();
  {
    std::lock_guard<std::mutex> lock(work_mu_);
    work_stop_ = true;
  }
  work_cv_.notify_all();
  // Workers drain the queue before they exit, so posted resumptions still run.
  for (std::thread& worker : workers_) worker.join();
}

void ThreadIoBackend::Execute(std::coroutine_handle<> handle) { Push({nullptr, handle.address()}); }

void ThreadIoBackend::Push(WorkItem item) {
  // Notified under the lock: once the item is queued, a worker may finish it and its owner destroy this
  // backend, and the destructor takes work_mu_ first, so the condition variable outlives this call
  // (TSan saw pthread_cond_destroy race a notify made after the unlock).
  std::lock_guard<std::mutex> lock(work_mu_);
  work_.push_back(item);
  work_cv_.notify_one();
}

void ThreadIoBackend::WorkerLoop() {
  detail::SetIoThread(true);  // the thread ends with the loop
  while (true) {
    WorkItem item;
    {
      std::unique_lock<std::mutex> lock(work_mu_);
      work_cv_.wait(lock, [this] { return work_stop_ || !work_.empty(); });
      if (work_.empty()) return;
      item = work_.front();
      work_.pop_front();
    }
    if (item.job != nullptr) {
      item.job->Run();
    } else {
      Resume(std::coroutine_handle<>::from_address(item.resume));
    }
  }
}

void ThreadIoBackend::TimerLoop() {
  detail::SetIoThread(true);  // the thread ends with the loop
  std::unique_lock<std::mutex> lock(timer_mu_);
  // Armed sleeps still fire (or get cancelled) before the thread exits: none is left unresumed.
  while (!timer_stop_ || !timers_.empty()) {
    if (timers_.empty()) {
      timer_cv_.wait(lock);
      continue;
    }
    auto first = timers_.begin();
    if (first->first <= Clock::now()) {
      SleepOp* op = first->second;
      timers_.erase(first);
      op->state_ = SleepOp::State::kDone;
      Push({op, nullptr});
      continue;
    }
    // A copy: the entry (and its key) may be erased by a cancellation while we wait unlocked.
    const Clock::time_point deadline = first->first;
    timer_cv_.wait_until(lock, deadline);
  }
}

// ---- Operations -------------------------------------------------------------------------------------

Task<absl::StatusOr<size_t>> ThreadIoBackend::Transfer(bool write, int fd, IoVecCursor cursor, uint64_t offset) {
  const char* op_name = write ? "write" : "read";
  TransferBody body{write, fd, &cursor, offset};
  BlockingOp<TransferBody> op(this, &body);
  const bool ran = co_await op;
  if (!ran) co_return absl::CancelledError(absl::StrCat(op_name, " fd ", fd, " at offset ", offset, " cancelled"));
  if (body.error != 0) co_return IoErrorStatus(body.error, op_name, absl::StrCat("fd ", fd), offset + cursor.done());
  if (body.zero_write) {
    co_return absl::DataLossError(
        absl::StrCat("write fd ", fd, " at offset ", offset + cursor.done(), ": wrote 0 bytes"));
  }
  co_return cursor.done();
}

// The caller keeps `buf` alive until the task completes (Reactor contract).
Task<absl::StatusOr<size_t>> ThreadIoBackend::Read(int fd, std::span<std::byte> buf, uint64_t offset) {
  std::vector<iovec> iov{iovec{buf.data(), buf.size()}};
  return Transfer(false, fd, IoVecCursor(std::move(iov)), offset);
}

Task<absl::StatusOr<size_t>> ThreadIoBackend::Readv(int fd, std::vector<iovec> iov, uint64_t offset) {
  return Transfer(false, fd, IoVecCursor(std::move(iov)), offset);
}

// The caller keeps `buf` alive until the task completes (Reactor contract).
Task<absl::StatusOr<size_t>> ThreadIoBackend::Write(int fd, std::span<const std::byte> buf, uint64_t offset) {
  std::vector<iovec> iov{iovec{const_cast<std::byte*>(buf.data()), buf.size()}};
  return Transfer(true, fd, IoVecCursor(std::move(iov)), offset);
}

Task<absl::StatusOr<int>> ThreadIoBackend::Open(std::string path, int flags, mode_t mode) {
  OpenBody body{&path, flags, mode};
  BlockingOp<OpenBody> op(this, &body);
  const bool ran = co_await op;
  if (!ran) co_return absl::CancelledError(absl::StrCat("open '", path, "' cancelled"));
  if (body.result < 0) co_return IoErrorStatus(body.error, "open", absl::StrCat("'", path, "'"));
  co_return body.result;
}

Task<absl::Status> ThreadIoBackend::Close(int fd) {
  CloseBody body{fd};
  BlockingOp<CloseBody> op(this, &body);
  const bool ran = co_await op;
  if (!ran) co_return absl::CancelledError(absl::StrCat("close fd ", fd, " cancelled"));
  if (body.error != 0) co_return IoErrorStatus(body.error, "close", absl::StrCat("fd ", fd));
  co_return absl::OkStatus();
}

Task<absl::StatusOr<FileStat>> ThreadIoBackend::StatImpl(int dirfd, std::string path, int flags, std::string what) {
  StatBody body{dirfd, &path, flags};
  BlockingOp<StatBody> op(this, &body);
  const bool ran = co_await op;
  if (!ran) co_return absl::CancelledError(absl::StrCat("stat ", what, " cancelled"));
  if (body.error != 0) co_return IoErrorStatus(body.error, "stat", what);
  co_return ToFileStat(body.st);
}

Task<absl::StatusOr<FileStat>> ThreadIoBackend::Stat(std::string path) {
  std::string what = absl::StrCat("'", path, "'");
  return StatImpl(AT_FDCWD, std::move(path), 0, std::move(what));
}

Task<absl::StatusOr<FileStat>> ThreadIoBackend::Stat(int fd) {
  return StatImpl(fd, std::string(), AT_EMPTY_PATH, absl::StrCat("fd ", fd));
}

Task<absl::Status> ThreadIoBackend::Sleep(absl::Duration duration) {
  // Clamped so that now() + duration cannot overflow the clock (InfiniteDuration sleeps ~292 years/2).
  const int64_t ns = std::clamp<int64_t>(absl::ToInt64Nanoseconds(duration), 0, INT64_MAX / 2);
  SleepOp op(this, Clock::now() + std::chrono::nanoseconds(ns));
  const bool elapsed = co_await op;
  if (!elapsed) {
    co_return absl::CancelledError(absl::StrCat("sleep of ", absl::FormatDuration(duration), " cancelled"));
  }
  co_return absl::OkStatus();
}

}  // namespace sluice::detail
