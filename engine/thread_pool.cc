#include "sluice/engine/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/sanitizers.h"
#include "sluice/engine/detail/transfer.h"

// moodycamel's queue synchronises through std::atomic_thread_fence, which ThreadSanitizer neither
// supports (GCC warns, -Werror fails) nor models (it would report the slot hand-off as a race). TSan
// builds therefore swap in a mutex-protected queue behind the same interface: everything else in this
// file (local queues, stealing, the counts and the sleep protocol) is the same code in every build, and
// that is what TSan checks.
#if !defined(SLUICE_POOL_LOCKED_SHARED_QUEUE)
#define SLUICE_POOL_LOCKED_SHARED_QUEUE SLUICE_THREAD_SANITIZER
#endif

#if SLUICE_POOL_LOCKED_SHARED_QUEUE
#include <deque>
#else
#include "concurrentqueue/concurrentqueue.h"
#endif

namespace sluice {
namespace {

#if SLUICE_POOL_LOCKED_SHARED_QUEUE
// Multi-producer multi-consumer FIFO for TSan builds (see above).
class SharedQueue {
 public:
  struct ConsumerToken {
    explicit ConsumerToken(SharedQueue&) {}
  };
  void Push(std::coroutine_handle<> handle) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(handle);
  }
  bool TryPop(ConsumerToken&, std::coroutine_handle<>& handle) {
    std::lock_guard<std::mutex> lock(mu_);
    if (items_.empty()) return false;
    handle = items_.front();
    items_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::deque<std::coroutine_handle<>> items_;
};
#else
// Pushes from outside threads go through moodycamel's lock-free queue (one sub-queue per producer
// thread, so outside producers do not contend with each other).
class SharedQueue {
 public:
  struct ConsumerToken {
    explicit ConsumerToken(SharedQueue& queue) : token(queue.queue_) {}
    moodycamel::ConsumerToken token;
  };
  void Push(std::coroutine_handle<> handle) { queue_.enqueue(handle); }
  bool TryPop(ConsumerToken& consumer, std::coroutine_handle<>& handle) {
    return queue_.try_dequeue(consumer.token, handle);
  }

 private:
  moodycamel::ConcurrentQueue<std::coroutine_handle<>> queue_;
};
#endif

// A worker looks at the shared queue before its own at least this often, so outside work is not starved
// by a worker whose tasks keep refilling its local queue. Prime, so it does not beat with batch sizes.
constexpr std::uint32_t kSharedPollInterval = 61;
constexpr std::size_t kInitialLocalCapacity = 64;
// Idle policy (figures in issue 14's notes). The first worker to run out of work searches for up to
// kSpinBudget: a pause-spin between looks, giving the CPU to any runnable thread every
// kPausesBetweenYields pauses (~0.6 us; so a spinner never holds a core others wait for). Work pushed
// meanwhile starts within about a microsecond and its pusher makes no system call (the spinner counts as
// searching): a replica's Next() pops an element and resumes the parked producer without a futex wake.
// Eigen's pool, which tf.data runs on, keeps one thread spinning in the same way. Other idle workers yield
// kIdleYieldsBeforeSleep times, then sleep. Bounded, so an idle pool is asleep within ~0.1 ms.
constexpr std::chrono::microseconds kSpinBudget(100);
constexpr int kPausesBetweenYields = 32;
constexpr int kIdleYieldsBeforeSleep = 32;

inline void CpuPause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// One worker's FIFO of handles. The owner pushes and pops; idle workers steal from the front too (the
// oldest item, which keeps the pool roughly FIFO). A plain mutex is uncontended on the owner's fast path
// and makes the sleep protocol's reasoning simple (see Impl::Sleep).
class LocalQueue {
 public:
  LocalQueue() : buffer_(kInitialLocalCapacity) {}

  void Push(std::coroutine_handle<> handle) {
    std::lock_guard<std::mutex> lock(mu_);
    if (size_ == buffer_.size()) Grow();
    buffer_[(head_ + size_) & (buffer_.size() - 1)] = handle;
    ++size_;
    size_hint_.store(size_, std::memory_order_relaxed);
  }

  std::coroutine_handle<> Pop() {
    std::lock_guard<std::mutex> lock(mu_);
    if (size_ == 0) return nullptr;
    std::coroutine_handle<> handle = buffer_[head_];
    head_ = (head_ + 1) & (buffer_.size() - 1);
    --size_;
    size_hint_.store(size_, std::memory_order_relaxed);
    return handle;
  }

  // The size without the lock, possibly stale: what a spinning worker polls before it takes the lock.
  bool MaybeNonEmpty() const { return size_hint_.load(std::memory_order_relaxed) != 0; }

  bool Empty() {
    std::lock_guard<std::mutex> lock(mu_);
    return size_ == 0;
  }

 private:
  // Capacity stays a power of two so the index wraps with a mask.
  void Grow() {
    std::vector<std::coroutine_handle<>> bigger(buffer_.size() * 2);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = buffer_[(head_ + i) & (buffer_.size() - 1)];
    buffer_ = std::move(bigger);
    head_ = 0;
  }

  std::mutex mu_;
  std::vector<std::coroutine_handle<>> buffer_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
  std::atomic<std::size_t> size_hint_{0};
};

// Which pool (and which of its workers) the calling thread belongs to. Read only inside Enqueue and
// IsCurrentThreadWorker, never held across a co_await.
thread_local const ThreadPool* tls_pool = nullptr;
thread_local int tls_worker_index = -1;

void NameCurrentThread(int index) {
  std::string name = "sluice-pool-" + std::to_string(index);
  name.resize(std::min<std::size_t>(name.size(), 15));  // the kernel limit is 16 bytes with the NUL
  pthread_setname_np(pthread_self(), name.c_str());
}

}  // namespace

struct ThreadPool::Impl {
  // Cache-line aligned so the owner's queue and counters do not false-share with a neighbour's.
  struct alignas(64) Worker {
    explicit Worker(SharedQueue& shared) : consumer(shared) {}
    LocalQueue local;
    SharedQueue::ConsumerToken consumer;
    // Owner-thread only.
    std::uint32_t tick = 0;
    bool poll_shared_first = false;
  };

  Impl(ThreadPool* owner, int n) : pool(owner) {
    workers.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) workers.push_back(std::make_unique<Worker>(shared));
  }

  void Run(int index);
  std::coroutine_handle<> FindWork(Worker& self, int index);
  std::coroutine_handle<> PopShared(Worker& self);
  std::coroutine_handle<> Spin(Worker& self, int index);
  bool WorkHinted() const;
  void Sleep();
  bool AnyLocalWork();
  bool WorkVisible();
  void WakeOne();
  void BeginShutdown();

  ThreadPool* pool;
  // Pushes from threads that are not this pool's workers. Declared before `workers`, whose consumer
  // tokens refer to it, so it is destroyed after them.
  SharedQueue shared;
  // Fixed after construction; worker threads only read it.
  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;

  // Items in `shared`, bumped after an enqueue and dropped after a dequeue, so it can be briefly off by
  // the pushes and pops in flight (even negative); once every push has finished it is exact. It is what
  // the sleep protocol reads, because moodycamel's emptiness checks are only approximate.
  std::atomic<std::int64_t> shared_count{0};

  // Bit 0: closed to outside pushes. Each outside push in flight holds 2 while it touches the queue, so
  // Stop() can wait for those pushes to land before it lets workers conclude that the queue is final.
  std::atomic<std::uint64_t> gate{0};
  // Set once no outside push can arrive any more; workers then exit when they run out of work.
  std::atomic<bool> draining{false};

  // Workers idle but still looking for work (Run's bounded rounds before Sleep()).
  std::atomic<int> num_searching{0};
  // Raised by the one searching worker that spins (see kSpinBudget).
  std::atomic<bool> spinner_active{false};
  // Sleepers registered in Sleep(); read by pushers without the lock on their fast path.
  std::atomic<int> num_sleepers{0};
  std::mutex sleep_mu;
  std::condition_variable wake_cv;
  int pending_wakes = 0;  // guarded by sleep_mu; never exceeds num_sleepers

  std::mutex stop_mu;
  bool joined = false;  // guarded by stop_mu
};

void ThreadPool::Impl::Run(int index) {
  tls_pool = pool;
  tls_worker_index = index;
  NameCurrentThread(index);
  Worker& self = *workers[static_cast<std::size_t>(index)];
  int idle_rounds = 0;
  bool searching = false;  // counted in num_searching
  for (;;) {
    std::coroutine_handle<> handle = FindWork(self, index);
    if (!handle && searching && idle_rounds == 1) handle = Spin(self, index);
    if (handle) {
      if (searching) {
        searching = false;
        // Pushers skipped their wake-up while we searched, counting on us. If we were the last searcher
        // and more work is already visible, hand that promise on to a sleeper. Decrement first, then look:
        // a pusher that still saw us searching pushed before our look (seq_cst order), so we see its item.
        if (num_searching.fetch_sub(1, std::memory_order_seq_cst) == 1 && WorkVisible()) WakeOne();
      }
      idle_rounds = 0;
      detail::Resume(handle);
      continue;
    }
    if (draining.load(std::memory_order_acquire)) {
      // Only this thread pushes to its local queue, and no outside push can arrive once draining is set,
      // so an empty local queue plus an exact count of zero means this worker has nothing left. Work other
      // workers queue locally is theirs to run.
      if (shared_count.load(std::memory_order_acquire) <= 0 && self.local.Empty()) break;
      std::this_thread::yield();  // a pop in flight elsewhere still has to drop the count
      continue;
    }
    // A few more looks before paying for a futex sleep and the pusher's wake-up call: bursts of short
    // tasks often refill the queues within microseconds. The first miss may spin (Spin), later ones yield
    // the CPU. Bounded, so an idle pool still goes to sleep soon. While we search, pushers wake no one.
    if (!searching) {
      searching = true;
      num_searching.fetch_add(1, std::memory_order_seq_cst);
    }
    if (++idle_rounds <= 1 + kIdleYieldsBeforeSleep) {
      if (idle_rounds > 1) std::this_thread::yield();
      continue;
    }
    idle_rounds = 0;
    // Stop searching before registering as a sleeper: Sleep() re-checks every queue after registering, so
    // an item whose pusher saw us searching (and skipped the wake-up) is found there.
    searching = false;
    num_searching.fetch_sub(1, std::memory_order_seq_cst);
    Sleep();
  }
  if (searching) num_searching.fetch_sub(1, std::memory_order_seq_cst);
  tls_pool = nullptr;
  tls_worker_index = -1;
}

// Called by a searching worker only, so pushes meanwhile rely on it (see Sleep). At most one worker spins;
// it polls the lock-free hints and takes locks only when they show work.
std::coroutine_handle<> ThreadPool::Impl::Spin(Worker& self, int index) {
  if (spinner_active.load(std::memory_order_relaxed) ||
      spinner_active.exchange(true, std::memory_order_acquire)) {
    return nullptr;
  }
  const auto deadline = std::chrono::steady_clock::now() + kSpinBudget;
  std::coroutine_handle<> handle = nullptr;
  for (;;) {
    for (int i = 0; i < kPausesBetweenYields && !handle; ++i) {
      if (WorkHinted()) handle = FindWork(self, index);
      if (!handle) CpuPause();
    }
    if (handle || draining.load(std::memory_order_acquire) || std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    std::this_thread::yield();
  }
  spinner_active.store(false, std::memory_order_release);
  return handle;
}

bool ThreadPool::Impl::WorkHinted() const {
  if (shared_count.load(std::memory_order_relaxed) > 0) return true;
  for (const std::unique_ptr<Worker>& worker : workers) {
    if (worker->local.MaybeNonEmpty()) return true;
  }
  return false;
}

std::coroutine_handle<> ThreadPool::Impl::FindWork(Worker& self, int index) {
  if (++self.tick % kSharedPollInterval == 0 || self.poll_shared_first) {
    self.poll_shared_first = false;
    if (std::coroutine_handle<> handle = PopShared(self)) return handle;
  }
  if (std::coroutine_handle<> handle = self.local.Pop()) return handle;
  if (std::coroutine_handle<> handle = PopShared(self)) return handle;
  const int n = static_cast<int>(workers.size());
  for (int k = 1; k < n; ++k) {
    if (std::coroutine_handle<> handle = workers[static_cast<std::size_t>((index + k) % n)]->local.Pop()) {
      return handle;
    }
  }
  return nullptr;
}

std::coroutine_handle<> ThreadPool::Impl::PopShared(Worker& self) {
  // The count is only a cheap filter here (moodycamel's dequeue walks every producer's sub-queue even
  // when empty). Missing an item that is mid-push is fine: its pusher bumps the count and then wakes a
  // sleeper or relies on a searcher, and both Sleep() and a searcher's last look re-read it (seq_cst).
  if (shared_count.load(std::memory_order_relaxed) <= 0) return nullptr;
  std::coroutine_handle<> handle;
  if (!shared.TryPop(self.consumer, handle)) return nullptr;
  shared_count.fetch_sub(1, std::memory_order_acq_rel);
  return handle;
}

bool ThreadPool::Impl::WorkVisible() {
  return shared_count.load(std::memory_order_seq_cst) > 0 || AnyLocalWork();
}

bool ThreadPool::Impl::AnyLocalWork() {
  for (const std::unique_ptr<Worker>& worker : workers) {
    if (!worker->local.Empty()) return true;
  }
  return false;
}

// Lost wake-ups are impossible: the sleeper and a pusher each write, then read the other's variable.
// - Outside push: enqueue; shared_count += 1 (seq_cst); read num_sleepers (seq_cst).
//   Sleeper: num_sleepers += 1 (seq_cst); read shared_count (seq_cst).
//   In the single total order of seq_cst operations one of the two writes comes first, so either the
//   pusher sees the sleeper (and signals it under sleep_mu, which the sleeper holds from registering
//   until it is inside wait(), so the signal cannot fall in between), or the sleeper sees the count.
// - Local push: it happens under the queue's mutex, which the sleeper also takes (AnyLocalWork) after
//   registering. If the sleeper locks it later, it sees the item; if earlier, the pusher's later lock
//   orders the sleeper's registration before the pusher's read of num_sleepers.
// - Searchers: a pusher that sees num_searching > 0 skips the wake-up. Every searcher it saw decrements
//   num_searching later in the seq_cst order, and whoever brings it to zero looks for visible work after
//   its decrement: on the way to sleep (the re-check below) or, having found other work, in Run(). So the
//   item is seen, by the same write-then-read argument, and someone wakes for it or runs it.
// A wake is a token in pending_wakes, capped at the number of sleepers, so one push wakes at most one
// sleeper and a burst of pushes never leaves stale tokens that would make later sleeps spin.
void ThreadPool::Impl::Sleep() {
  std::unique_lock<std::mutex> lock(sleep_mu);
  num_sleepers.fetch_add(1, std::memory_order_seq_cst);
  const bool has_work = WorkVisible();
  if (!has_work && !draining.load(std::memory_order_acquire)) {
    wake_cv.wait(lock, [this] { return pending_wakes > 0 || draining.load(std::memory_order_acquire); });
    if (pending_wakes > 0) --pending_wakes;
  }
  num_sleepers.fetch_sub(1, std::memory_order_relaxed);  // under sleep_mu, which pushers re-read it under
}

void ThreadPool::Impl::WakeOne() {
  // A searching worker will find the item (see Run), so most pushes into a busy-but-not-saturated pool
  // cost no system call.
  if (num_searching.load(std::memory_order_seq_cst) > 0) return;
  if (num_sleepers.load(std::memory_order_seq_cst) == 0) return;
  std::lock_guard<std::mutex> lock(sleep_mu);
  if (pending_wakes < num_sleepers.load(std::memory_order_relaxed)) {
    ++pending_wakes;
    wake_cv.notify_one();
  }
}

void ThreadPool::Impl::BeginShutdown() {
  gate.fetch_or(1, std::memory_order_acq_rel);
  // An outside push that entered before the gate closed is a few instructions from done; once it has
  // left (release on its way out, acquire here) its item is in the queue and counted.
  while (gate.load(std::memory_order_acquire) != 1) std::this_thread::yield();
  draining.store(true, std::memory_order_seq_cst);
  // Under the lock, so a worker between its predicate check and wait() cannot miss it.
  std::lock_guard<std::mutex> lock(sleep_mu);
  wake_cv.notify_all();
}

ThreadPool::ThreadPool(int num_threads)
    : num_threads_(std::max(num_threads, 1)), impl_(std::make_unique<Impl>(this, num_threads_)) {
  impl_->threads.reserve(static_cast<std::size_t>(num_threads_));
  try {
    for (int i = 0; i < num_threads_; ++i) {
      impl_->threads.emplace_back([impl = impl_.get(), i] { impl->Run(i); });
    }
  } catch (...) {
    // Could not start every thread: shut down the ones that did start before the state goes away.
    impl_->BeginShutdown();
    for (std::thread& thread : impl_->threads) thread.join();
    throw;
  }
}

ThreadPool::~ThreadPool() { Stop(); }

bool ThreadPool::Enqueue(std::coroutine_handle<> handle, bool yield) {
  Impl& impl = *impl_;
  if (tls_pool == this) {
    // A worker of this pool is running, so it cannot have exited: its local queue is always accepted,
    // even while draining, and it runs the item itself if nobody steals it.
    Impl::Worker& self = *impl.workers[static_cast<std::size_t>(tls_worker_index)];
    self.local.Push(handle);
    if (yield) self.poll_shared_first = true;
    impl.WakeOne();
    return true;
  }
  // relaxed: only this RMW's place in gate's modification order matters. Before Stop()'s fetch_or, the
  // push is in and Stop() waits for our release below; after it, we see the closed bit and run inline.
  if (impl.gate.fetch_add(2, std::memory_order_relaxed) & 1) {
    impl.gate.fetch_sub(2, std::memory_order_relaxed);
    return false;
  }
  impl.shared.Push(handle);
  impl.shared_count.fetch_add(1, std::memory_order_seq_cst);
  impl.WakeOne();
  // release: Stop() reads gate with acquire and then relies on the item being queued and counted. Until
  // this point the pool cannot be destroyed under us, even if the handle already ran and finished.
  impl.gate.fetch_sub(2, std::memory_order_release);
  return true;
}

void ThreadPool::Execute(std::coroutine_handle<> handle) {
  if (!Enqueue(handle, /*yield=*/false)) detail::Resume(handle);
}

void ThreadPool::Stop() {
  impl_->BeginShutdown();
  // A worker cannot join itself (nor wait for a joiner that waits for it): it only starts the shutdown.
  if (IsCurrentThreadWorker()) return;
  std::lock_guard<std::mutex> lock(impl_->stop_mu);
  if (impl_->joined) return;
  for (std::thread& thread : impl_->threads) thread.join();
  impl_->joined = true;
}

bool ThreadPool::IsCurrentThreadWorker() const noexcept { return tls_pool == this; }

bool ThreadPool::IsAnyWorkerThread() noexcept { return tls_pool != nullptr; }

ThreadPool& ThreadPool::Default() {
  // Leaked on purpose: workers may still be running at exit, and exit() may be called from one of them.
  static ThreadPool* const pool =
      new ThreadPool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return *pool;
}

}  // namespace sluice
