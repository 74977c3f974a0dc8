// A worker's thread pool divided among its running tasks. Each task's iterator tunes its kAutotune ops
// within its share (IteratorContext::cpu_share), so two tasks on a 4-thread worker get 2 threads each
// instead of each assuming all 4. A task joining or leaving redistributes at once: the threads are split
// as evenly as whole threads allow (the earliest tasks get the remainder), and every task gets at least
// one, so more tasks than threads oversubscribe by what they must. A task waiting for its consumer (its
// buffer full) marks itself idle: it is left out of the split until it runs again, so a task whose
// consumer went away does not keep threads from the others.
//
//   CpuShares shares(4);
//   CpuShares::Share a = shares.Join();   // a: 4
//   CpuShares::Share b = shares.Join();   // a: 2, b: 2
//   context->cpu_share = b.value();       // the tuner of b's iterator reads it every period
#ifndef SLUICE_DISTRIBUTE_SERVICE_CPU_SHARES_H_
#define SLUICE_DISTRIBUTE_SERVICE_CPU_SHARES_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace sluice::service {

class CpuShares {
 public:
  // A task's share, held while the task runs; leaving (destruction) gives it back to the others.
  class Share {
   public:
    Share(Share&& other) noexcept;
    Share& operator=(Share&&) = delete;
    Share(const Share&) = delete;
    ~Share();
    std::shared_ptr<const std::atomic<int>> value() const { return value_; }
    // Idle: not counted when the pool is split (its value stays as it was); back to running: split again.
    void SetIdle(bool idle);

   private:
    friend class CpuShares;
    Share(CpuShares* owner, std::shared_ptr<std::atomic<int>> value)
        : owner_(owner), value_(std::move(value)) {}
    CpuShares* owner_;  // null once moved from
    std::shared_ptr<std::atomic<int>> value_;
  };

  explicit CpuShares(int threads);
  CpuShares(const CpuShares&) = delete;
  CpuShares& operator=(const CpuShares&) = delete;

  // Outlived by this object: every Share must be gone before it.
  Share Join();
  int threads() const { return threads_; }

 private:
  struct Entry {
    std::shared_ptr<std::atomic<int>> value;
    bool idle = false;
  };
  void Leave(const std::atomic<int>* value);
  void SetIdle(const std::atomic<int>* value, bool idle);
  void RedistributeLocked();

  const int threads_;
  std::mutex mu_;
  std::vector<Entry> shares_;  // in joining order
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_CPU_SHARES_H_
