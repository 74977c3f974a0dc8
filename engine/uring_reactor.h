// UringReactor: the io_uring backend of Reactor (see include/sluice/engine/reactor.h for the contract).
//
// One thread owns the ring and is the only one to touch its submission queue. Other threads post work
// (operations to submit, cancellations, coroutines to resume) through a moodycamel MPSC queue and wake
// the reactor through an eventfd on which the ring always keeps one read armed; posts made on the
// reactor thread itself go to a plain local vector. Each loop iteration drains the posts, fills SQEs and
// makes one io_uring_submit_and_wait call, then reaps the completion queue. In-flight SQEs stay below the
// completion queue size (ops within half of it, so that cancels always find room); excess operations
// wait, in order, in a pending queue.
//
// Cancellation of an in-flight op: the stop callback (any thread) sets kCancelRequested on the op and
// posts a cancel entry. The reactor then submits io_uring_prep_cancel for it, but resumes the waiter only
// once both the original completion and the cancel entry were seen, so neither the op (in the awaiting
// frame) nor the caller's buffer is freed while the kernel or the queue still refers to it.
#ifndef SLUICE_ENGINE_URING_REACTOR_H_
#define SLUICE_ENGINE_URING_REACTOR_H_

// Before liburing.h: <linux/fs.h> (pulled in by it) defines a BLOCK_SIZE macro that breaks this header.
#include "concurrentqueue/concurrentqueue.h"
// clang-format off
#include <fcntl.h>
#include <liburing.h>
// clang-format on
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "sluice/engine/detail/promise_base.h"
#include "sluice/engine/reactor.h"

namespace sluice::detail {

class UringReactor;

// One io_uring request, living in the awaiting coroutine's frame; also its own awaiter:
//   UringOp op(this, UringOp::Kind::kClose);  op.fd = fd;  int res = co_await op;
// The result is the raw cqe->res (-errno on failure), or -ECANCELED when cancelled before submission.
class UringOp {
 public:
  enum class Kind : uint8_t { kRead, kReadv, kWrite, kOpen, kClose, kStatx, kTimeout };

  UringOp(UringReactor* reactor, Kind kind) noexcept : reactor_(reactor), kind_(kind) {}
  UringOp(const UringOp&) = delete;
  UringOp& operator=(const UringOp&) = delete;

  // Request fields, filled by the caller before co_await; pointers must stay valid until it resumes.
  int fd = -1;
  void* buf = nullptr;  // read/write buffer
  unsigned len = 0;
  const iovec* iov = nullptr;
  unsigned iov_count = 0;
  uint64_t offset = 0;
  const char* path = nullptr;
  int flags = 0;  // openat flags, or statx flags
  mode_t mode = 0;
  struct statx* statx_buf = nullptr;
  __kernel_timespec timeout{};

  bool await_ready() const noexcept { return false; }
  template <class Promise>
  bool await_suspend(std::coroutine_handle<Promise> awaiting) {
    waiter_ = awaiting;
    if constexpr (SluicePromise<Promise>) {
      const std::stop_token& token = awaiting.promise().stop_token();
      if (token.stop_requested()) {
        res_ = -ECANCELED;
        return false;  // never submitted
      }
      // Registered before posting: once posted the op may complete (and the frame move on) at any time.
      // If stop arrives in between, the callback runs here and its cancel entry is matched on the reactor.
      if (token.stop_possible()) stop_callback_.emplace(token, CancelCallback{this});
    }
    Post();
    return true;
  }
  int await_resume() noexcept {
    // Blocks until a concurrently running callback returned; it no longer touches the op after that.
    stop_callback_.reset();
    return res_;
  }

  // Whether the result means "cancelled" rather than a real failure or success.
  bool cancelled() const noexcept {
    return res_ == -ECANCELED ||
           (res_ == -EINTR && (state_.load(std::memory_order_acquire) & kCancelRequested) != 0);
  }

 private:
  friend class UringReactor;

  static constexpr uint32_t kCancelRequested = 1;
  static constexpr uint32_t kCompleted = 2;
  // Reactor-thread-only: where the op is in its life.
  enum class Where : uint8_t { kPosted, kPending, kInFlight, kCompletedAwaitingCancel };

  struct CancelCallback {
    UringOp* op;
    void operator()() const noexcept;
  };

  void Post();

  UringReactor* const reactor_;
  const Kind kind_;
  std::coroutine_handle<> waiter_;
  int res_ = 0;
  std::atomic<uint32_t> state_{0};
  Where where_ = Where::kPosted;
  bool cancel_seen_ = false;  // reactor-thread-only: the cancel entry was processed
  std::optional<std::stop_callback<CancelCallback>> stop_callback_;
};

class UringReactor final : public Reactor {
 public:
  // Fails with the errno status of io_uring_queue_init (EPERM/ENOSYS where io_uring is refused).
  // `init_errno`, when given, receives that errno (0 on success).
  static absl::StatusOr<std::unique_ptr<UringReactor>> Create(unsigned queue_depth, int* init_errno = nullptr);
  // Whether io_uring_queue_init works here: 0, or the positive errno that refused it.
  static int Probe() noexcept;

  ~UringReactor() override;

  void Execute(std::coroutine_handle<> handle) override;
  IoBackend backend() const noexcept override { return IoBackend::kUring; }
  std::string_view backend_name() const noexcept override { return "io_uring"; }

  Task<absl::StatusOr<int>> Open(std::string path, int flags, mode_t mode) override;
  Task<absl::StatusOr<size_t>> Read(int fd, std::span<std::byte> buf, uint64_t offset) override;
  Task<absl::StatusOr<size_t>> Readv(int fd, std::vector<iovec> iov, uint64_t offset) override;
  Task<absl::StatusOr<size_t>> Write(int fd, std::span<const std::byte> buf, uint64_t offset) override;
  Task<absl::Status> Close(int fd) override;
  Task<absl::StatusOr<FileStat>> Stat(std::string path) override;
  Task<absl::StatusOr<FileStat>> Stat(int fd) override;
  Task<absl::Status> Sleep(absl::Duration duration) override;

 private:
  friend class UringOp;

  enum class PostKind : uint8_t { kSubmit, kCancel, kResume };
  struct Posted {
    PostKind kind;
    void* ptr;  // UringOp* for kSubmit/kCancel, a coroutine address for kResume
  };

  // user_data values that are not UringOp pointers.
  static constexpr uint64_t kCancelTag = 0;
  static constexpr uint64_t kEventfdTag = 1;

  UringReactor() = default;

  Task<absl::StatusOr<size_t>> Transfer(bool write, int fd, IoVecCursor cursor, uint64_t offset);
  Task<absl::StatusOr<FileStat>> StatImpl(int dirfd, std::string path, int flags, std::string what);

  void PostItem(Posted item);
  bool OnReactorThread() const noexcept;
  void Loop();
  // Processes everything posted so far; returns false if it stopped early to let I/O progress.
  bool DrainPosted();
  void Handle(Posted item);
  void Submit(UringOp* op);
  bool TrySubmitOp(UringOp* op);
  void FlushPending();
  bool TrySubmitCancel(UringOp* op);
  void PrepareSqe(io_uring_sqe* sqe, UringOp* op);
  void OnCompletion(uint64_t user_data, int res);
  void Finish(UringOp* op);
  void ArmEventfd();

  io_uring ring_{};
  bool ring_ready_ = false;
  unsigned cq_entries_ = 0;
  int eventfd_ = -1;
  std::thread thread_;
  std::thread::id thread_id_;

  moodycamel::ConcurrentQueue<Posted> queue_;
  // Set by a poster that wrote the eventfd; cleared by the reactor before it drains the queue.
  std::atomic<bool> wake_pending_{false};
  // Threads inside PostItem's off-thread path. Once its item is queued, the reactor may run it and its
  // owner destroy the reactor before the poster's eventfd write; the destructor waits for this to be 0.
  std::atomic<int> posters_{0};
  std::atomic<bool> stop_{false};
  // Operations posted and not yet finished; checked by the destructor's assertion.
  std::atomic<int64_t> outstanding_{0};

  // Reactor-thread-only state.
  std::vector<Posted> local_;
  std::vector<Posted> local_swap_;
  std::deque<UringOp*> pending_;
  std::vector<UringOp*> pending_cancels_;
  unsigned in_flight_ = 0;  // SQEs submitted whose CQE has not been reaped (ops, cancels, eventfd read)
  unsigned ops_in_flight_ = 0;  // of which UringOps
  int64_t live_ops_ = 0;  // submit entries received and not yet finished
  bool eventfd_armed_ = false;
  uint64_t eventfd_value_ = 0;
};

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_URING_REACTOR_H_
