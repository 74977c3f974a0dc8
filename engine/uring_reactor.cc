#include "engine/uring_reactor.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/io_thread.h"
#include "engine/transfer_limits.h"
#include "sluice/engine/detail/transfer.h"
#include "sluice/engine/log.h"

namespace sluice::detail {
namespace {

// Set on the reactor thread for its whole life: lets posts made there skip the queue and the eventfd.
thread_local const UringReactor* tls_reactor = nullptr;

std::string FdName(int fd) { return absl::StrCat("fd ", fd); }

}  // namespace

void UringOp::CancelCallback::operator()() const noexcept {
  UringReactor* reactor = op->reactor_;
  const uint32_t prev = op->state_.fetch_or(kCancelRequested, std::memory_order_acq_rel);
  // Completed first: the waiter is being resumed and needs nothing from us.
  if (prev & kCompleted) return;
  // The reactor holds the waiter until it has processed this entry, so `op` is still alive here.
  reactor->PostItem({UringReactor::PostKind::kCancel, op});
}

void UringOp::Post() {
  reactor_->outstanding_.fetch_add(1, std::memory_order_relaxed);
  reactor_->PostItem({UringReactor::PostKind::kSubmit, this});
}

int UringReactor::Probe() noexcept {
  io_uring ring;
  const int rc = io_uring_queue_init(2, &ring, 0);
  if (rc < 0) return -rc;
  io_uring_queue_exit(&ring);
  return 0;
}

absl::StatusOr<std::unique_ptr<UringReactor>> UringReactor::Create(unsigned queue_depth, int* init_errno) {
  if (init_errno != nullptr) *init_errno = 0;
  std::unique_ptr<UringReactor> reactor(new UringReactor());
  io_uring_params params;
  std::memset(&params, 0, sizeof(params));
  const int rc = io_uring_queue_init_params(std::max(queue_depth, 4u), &reactor->ring_, &params);
  if (rc < 0) {
    if (init_errno != nullptr) *init_errno = -rc;
    return IoErrorStatus(-rc, "io_uring_queue_init", absl::StrCat("with ", queue_depth, " entries"));
  }
  reactor->ring_ready_ = true;
  reactor->cq_entries_ = params.cq_entries;
  reactor->eventfd_ = eventfd(0, EFD_CLOEXEC);
  if (reactor->eventfd_ < 0) return IoErrorStatus(errno, "eventfd", "for the io_uring reactor");
  UringReactor* raw = reactor.get();
  reactor->thread_ = std::thread([raw] { raw->Loop(); });
  return reactor;
}

UringReactor::~UringReactor() {
  // Destroying a reactor under running operations is a caller bug: their frames would be resumed by
  // a dead thread. Release builds still drain them before joining.
  assert(outstanding_.load(std::memory_order_acquire) == 0 && "Reactor destroyed with I/O in flight");
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_seq_cst);
    const uint64_t one = 1;
    ssize_t ignored = ::write(eventfd_, &one, sizeof(one));
    (void)ignored;
    thread_.join();
  }
  // A poster whose item already ran may still be about to write the eventfd (a few instructions and one
  // syscall away), so it is not closed under it.
  while (posters_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  if (ring_ready_) io_uring_queue_exit(&ring_);
  if (eventfd_ >= 0) ::close(eventfd_);
}

void UringReactor::Execute(std::coroutine_handle<> handle) { PostItem({PostKind::kResume, handle.address()}); }

bool UringReactor::OnReactorThread() const noexcept { return tls_reactor == this; }

void UringReactor::PostItem(Posted item) {
  if (OnReactorThread()) {
    // The loop drains local_ before its next submit, so no wake-up is needed.
    local_.push_back(item);
    return;
  }
  posters_.fetch_add(1, std::memory_order_acq_rel);
  queue_.enqueue(item);
  // Pairs with the fence after the reactor clears wake_pending_: either it sees our item in its next
  // drain, or we see the flag cleared and write the eventfd. Without it both could miss (store-load).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!wake_pending_.exchange(true, std::memory_order_seq_cst)) {
    const uint64_t one = 1;
    ssize_t ignored = ::write(eventfd_, &one, sizeof(one));
    (void)ignored;  // an eventfd write only fails on counter overflow, which still leaves it readable
  }
  posters_.fetch_sub(1, std::memory_order_release);  // the last touch of this reactor
}

void UringReactor::ArmEventfd() {
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return;  // retried next iteration
  }
  io_uring_prep_read(sqe, eventfd_, &eventfd_value_, sizeof(eventfd_value_), 0);
  io_uring_sqe_set_data64(sqe, kEventfdTag);
  ++in_flight_;
  eventfd_armed_ = true;
}

void UringReactor::Loop() {
  tls_reactor = this;
  detail::SetIoThread(true);
  constexpr unsigned kBatch = 64;
  io_uring_cqe* cqes[kBatch];
  std::pair<uint64_t, int> reaped[kBatch];
  int last_submit_error = 0;
  while (true) {
    const bool drained = DrainPosted();
    FlushPending();
    const bool exiting = stop_.load(std::memory_order_acquire) && drained && live_ops_ == 0 &&
                         local_.empty() && queue_.size_approx() == 0;
    if (exiting) {
      // Only internal SQEs remain. The kernel would write into eventfd_value_ if the armed read
      // completed after io_uring_queue_exit, so complete it now (and any stray cancel) and reap them.
      if (in_flight_ == 0) break;
      if (eventfd_armed_) {
        const uint64_t one = 1;
        ssize_t ignored = ::write(eventfd_, &one, sizeof(one));
        (void)ignored;
      }
    } else if (!eventfd_armed_) {
      ArmEventfd();
    }
    // One syscall per iteration submits the whole batch and, when nothing else is runnable, waits.
    const int rc = drained && local_.empty() ? io_uring_submit_and_wait(&ring_, 1) : io_uring_submit(&ring_);
    if (rc < 0 && rc != -EINTR && rc != -EBUSY && rc != -EAGAIN) {
      // Error level: no Status reaches anyone from here, and I/O may stall. Once per run of the same
      // failure, or a persistent one would log at the rate this loop spins.
      if (rc != last_submit_error && LogEnabled(LogLevel::kError)) {
        Log(LogLevel::kError, absl::StrCat("io_uring_submit failed: ", std::strerror(-rc)));
      }
      last_submit_error = rc;
    } else if (rc >= 0) {
      last_submit_error = 0;
    }
    // Copy the CQEs out and release the ring slots before resuming anyone.
    while (true) {
      const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes, kBatch);
      if (n == 0) break;
      for (unsigned i = 0; i < n; ++i) reaped[i] = {io_uring_cqe_get_data64(cqes[i]), cqes[i]->res};
      io_uring_cq_advance(&ring_, n);
      for (unsigned i = 0; i < n; ++i) OnCompletion(reaped[i].first, reaped[i].second);
    }
  }
  tls_reactor = nullptr;
  detail::SetIoThread(false);
}

bool UringReactor::DrainPosted() {
  // Bounded so that coroutines which keep posting cannot starve the ring.
  constexpr int kMaxRounds = 64;
  constexpr size_t kBulk = 64;
  Posted batch[kBulk];
  for (int round = 0; round < kMaxRounds; ++round) {
    bool any = false;
    if (!local_.empty()) {
      any = true;
      local_swap_.swap(local_);
      for (const Posted& item : local_swap_) Handle(item);
      local_swap_.clear();
    }
    for (int bulk = 0; bulk < 16; ++bulk) {
      const size_t n = queue_.try_dequeue_bulk(batch, kBulk);
      if (n == 0) break;
      any = true;
      for (size_t i = 0; i < n; ++i) Handle(batch[i]);
    }
    if (!any) return true;
  }
  return false;
}

void UringReactor::Handle(Posted item) {
  switch (item.kind) {
    case PostKind::kResume:
      Resume(std::coroutine_handle<>::from_address(item.ptr));
      return;
    case PostKind::kSubmit: {
      auto* op = static_cast<UringOp*>(item.ptr);
      ++live_ops_;
      if (op->cancel_seen_) {
        // Stop arrived (and its entry overtook this one) before the op reached the ring.
        op->res_ = -ECANCELED;
        Finish(op);
        return;
      }
      Submit(op);
      return;
    }
    case PostKind::kCancel: {
      auto* op = static_cast<UringOp*>(item.ptr);
      op->cancel_seen_ = true;
      switch (op->where_) {
        case UringOp::Where::kPosted:
          return;  // its submit entry will see cancel_seen_
        case UringOp::Where::kPending:
          pending_.erase(std::find(pending_.begin(), pending_.end(), op));
          op->res_ = -ECANCELED;
          Finish(op);
          return;
        case UringOp::Where::kInFlight:
          if (!TrySubmitCancel(op)) pending_cancels_.push_back(op);
          return;
        case UringOp::Where::kCompletedAwaitingCancel:
          Finish(op);
          return;
      }
      return;
    }
  }
}

void UringReactor::PrepareSqe(io_uring_sqe* sqe, UringOp* op) {
  switch (op->kind_) {
    case UringOp::Kind::kRead:
      io_uring_prep_read(sqe, op->fd, op->buf, op->len, op->offset);
      break;
    case UringOp::Kind::kReadv:
      io_uring_prep_readv(sqe, op->fd, op->iov, op->iov_count, op->offset);
      break;
    case UringOp::Kind::kWrite:
      io_uring_prep_write(sqe, op->fd, op->buf, op->len, op->offset);
      break;
    case UringOp::Kind::kOpen:
      io_uring_prep_openat(sqe, AT_FDCWD, op->path, op->flags, op->mode);
      break;
    case UringOp::Kind::kClose:
      io_uring_prep_close(sqe, op->fd);
      break;
    case UringOp::Kind::kStatx:
      io_uring_prep_statx(sqe, op->fd, op->path, op->flags, STATX_BASIC_STATS, op->statx_buf);
      break;
    case UringOp::Kind::kTimeout:
      io_uring_prep_timeout(sqe, &op->timeout, 0, 0);
      break;
  }
  io_uring_sqe_set_data64(sqe, reinterpret_cast<uint64_t>(op));
}

// The completion queue can never overflow: ops in flight stay below half of it (one cancel at most per op
// takes the other half), and one slot is kept for the eventfd read. Cancels never wait for ops to drain;
// otherwise a full ring of long timeouts could not be cancelled.
bool UringReactor::TrySubmitOp(UringOp* op) {
  if (ops_in_flight_ + 1 >= cq_entries_ / 2 || in_flight_ + 1 >= cq_entries_) return false;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    // The SQ (smaller than the CQ) filled up within this batch: hand it to the kernel and go on.
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return false;
  }
  PrepareSqe(sqe, op);
  ++in_flight_;
  ++ops_in_flight_;
  op->where_ = UringOp::Where::kInFlight;
  return true;
}

void UringReactor::Submit(UringOp* op) {
  // Behind a non-empty pending queue, to keep submission order.
  if (pending_.empty() && TrySubmitOp(op)) return;
  op->where_ = UringOp::Where::kPending;
  pending_.push_back(op);
}

bool UringReactor::TrySubmitCancel(UringOp* op) {
  if (in_flight_ + 1 >= cq_entries_) return false;
  io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
  if (sqe == nullptr) {
    io_uring_submit(&ring_);
    sqe = io_uring_get_sqe(&ring_);
    if (sqe == nullptr) return false;
  }
  // The kernel only compares this key with user_data; it never dereferences it.
  io_uring_prep_cancel64(sqe, reinterpret_cast<uint64_t>(op), 0);
  io_uring_sqe_set_data64(sqe, kCancelTag);
  ++in_flight_;
  return true;
}

void UringReactor::FlushPending() {
  while (!pending_cancels_.empty()) {
    if (!TrySubmitCancel(pending_cancels_.front())) return;
    pending_cancels_.erase(pending_cancels_.begin());
  }
  while (!pending_.empty() && TrySubmitOp(pending_.front())) pending_.pop_front();
}

void UringReactor::OnCompletion(uint64_t user_data, int res) {
  --in_flight_;
  if (user_data == kCancelTag) return;  // the original op's own completion is what matters
  if (user_data == kEventfdTag) {
    eventfd_armed_ = false;
    wake_pending_.store(false, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;  // the loop drains the queue before it waits again
  }
  auto* op = reinterpret_cast<UringOp*>(user_data);
  --ops_in_flight_;
  op->res_ = res;
  const uint32_t prev = op->state_.fetch_or(UringOp::kCompleted, std::memory_order_acq_rel);
  if ((prev & UringOp::kCancelRequested) && !op->cancel_seen_) {
    // A cancel entry for this op is (or is about to be) queued and refers to it: resume only after it.
    op->where_ = UringOp::Where::kCompletedAwaitingCancel;
    return;
  }
  Finish(op);
}

void UringReactor::Finish(UringOp* op) {
  --live_ops_;
  if (!pending_cancels_.empty()) {
    auto it = std::find(pending_cancels_.begin(), pending_cancels_.end(), op);
    if (it != pending_cancels_.end()) pending_cancels_.erase(it);
  }
  op->state_.fetch_or(UringOp::kCompleted, std::memory_order_acq_rel);
  outstanding_.fetch_sub(1, std::memory_order_release);
  Resume(op->waiter_);
}

// ---- Operations -------------------------------------------------------------------------------------

Task<absl::StatusOr<size_t>> UringReactor::Transfer(bool write, int fd, IoVecCursor cursor,
                                                    uint64_t offset) {
  const char* op_name = write ? "write" : "read";
  int retries = 0;
  while (!cursor.finished()) {
    const bool single = cursor.count() == 1;
    UringOp op(this, write ? UringOp::Kind::kWrite : (single ? UringOp::Kind::kRead : UringOp::Kind::kReadv));
    op.fd = fd;
    op.offset = offset + cursor.done();
    if (single) {
      op.buf = cursor.data()->iov_base;
      op.len = static_cast<unsigned>(std::min(cursor.data()->iov_len, kMaxTransferChunk));
    } else {
      op.iov = cursor.data();
      op.iov_count = static_cast<unsigned>(cursor.count());
    }
    const int res = co_await op;
    if (op.cancelled()) {
      co_return absl::CancelledError(
          absl::StrCat(op_name, " fd ", fd, " at offset ", offset + cursor.done(), " cancelled"));
    }
    if (res == -EINTR || res == -EAGAIN) {
      if (++retries <= kMaxTransferRetries) continue;
    }
    if (res < 0) co_return IoErrorStatus(-res, op_name, FdName(fd), offset + cursor.done());
    retries = 0;
    if (res == 0) {
      if (write) {
        co_return absl::DataLossError(
            absl::StrCat("write fd ", fd, " at offset ", offset + cursor.done(), ": wrote 0 bytes"));
      }
      break;  // end of file
    }
    cursor.Advance(static_cast<size_t>(res));
  }
  co_return cursor.done();
}

// The caller keeps `buf` alive until the task completes (Reactor contract).
Task<absl::StatusOr<size_t>> UringReactor::Read(int fd, std::span<std::byte> buf, uint64_t offset) {
  std::vector<iovec> iov{iovec{buf.data(), buf.size()}};
  return Transfer(false, fd, IoVecCursor(std::move(iov)), offset);
}

Task<absl::StatusOr<size_t>> UringReactor::Readv(int fd, std::vector<iovec> iov, uint64_t offset) {
  return Transfer(false, fd, IoVecCursor(std::move(iov)), offset);
}

// The caller keeps `buf` alive until the task completes (Reactor contract).
Task<absl::StatusOr<size_t>> UringReactor::Write(int fd, std::span<const std::byte> buf, uint64_t offset) {
  // The kernel only reads from it; iovec simply has no const flavour.
  std::vector<iovec> iov{iovec{const_cast<std::byte*>(buf.data()), buf.size()}};
  return Transfer(true, fd, IoVecCursor(std::move(iov)), offset);
}

Task<absl::StatusOr<int>> UringReactor::Open(std::string path, int flags, mode_t mode) {
  UringOp op(this, UringOp::Kind::kOpen);
  op.path = path.c_str();
  op.flags = flags;
  op.mode = mode;
  const int res = co_await op;
  // A successful open wins over a late cancel: returning an error would leak the fd.
  if (res >= 0) co_return res;
  if (op.cancelled()) co_return absl::CancelledError(absl::StrCat("open '", path, "' cancelled"));
  co_return IoErrorStatus(-res, "open", absl::StrCat("'", path, "'"));
}

Task<absl::Status> UringReactor::Close(int fd) {
  UringOp op(this, UringOp::Kind::kClose);
  op.fd = fd;
  const int res = co_await op;
  if (res >= 0) co_return absl::OkStatus();
  if (op.cancelled()) co_return absl::CancelledError(absl::StrCat("close fd ", fd, " cancelled"));
  co_return IoErrorStatus(-res, "close", FdName(fd));
}

Task<absl::StatusOr<FileStat>> UringReactor::StatImpl(int dirfd, std::string path, int flags, std::string what) {
  struct statx st;
  std::memset(&st, 0, sizeof(st));
  UringOp op(this, UringOp::Kind::kStatx);
  op.fd = dirfd;
  op.path = path.c_str();
  op.flags = flags;
  op.statx_buf = &st;
  const int res = co_await op;
  if (res >= 0) co_return ToFileStat(st);
  if (op.cancelled()) co_return absl::CancelledError(absl::StrCat("stat ", what, " cancelled"));
  co_return IoErrorStatus(-res, "stat", what);
}

Task<absl::StatusOr<FileStat>> UringReactor::Stat(std::string path) {
  std::string what = absl::StrCat("'", path, "'");
  return StatImpl(AT_FDCWD, std::move(path), 0, std::move(what));
}

Task<absl::StatusOr<FileStat>> UringReactor::Stat(int fd) {
  return StatImpl(fd, std::string(), AT_EMPTY_PATH, FdName(fd));
}

Task<absl::Status> UringReactor::Sleep(absl::Duration duration) {
  if (duration < absl::ZeroDuration()) duration = absl::ZeroDuration();
  UringOp op(this, UringOp::Kind::kTimeout);
  const int64_t ns = absl::ToInt64Nanoseconds(duration);
  op.timeout.tv_sec = ns / 1000000000;
  op.timeout.tv_nsec = ns % 1000000000;
  const int res = co_await op;
  if (res == -ETIME || res >= 0) co_return absl::OkStatus();
  if (op.cancelled()) {
    co_return absl::CancelledError(absl::StrCat("sleep of ", absl::FormatDuration(duration), " cancelled"));
  }
  co_return IoErrorStatus(-res, "sleep", absl::FormatDuration(duration));
}

}  // namespace sluice::detail
