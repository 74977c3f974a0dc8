// Internal: running a data-service process until SIGTERM or SIGINT (`sluice dispatcher`, `sluice worker`,
// WorkerMain).
//
// Contract: TerminationSignals blocks SIGINT and SIGTERM in the constructing thread, so threads started
// afterwards (the servers') inherit the mask and the signal is taken only by Wait(), which returns the
// signal number. The destructor restores the previous mask. Construct it before starting any server.
#ifndef SLUICE_DISTRIBUTE_SERVICE_RUN_UNTIL_SIGNAL_H_
#define SLUICE_DISTRIBUTE_SERVICE_RUN_UNTIL_SIGNAL_H_

#include <csignal>

namespace sluice::service {

class TerminationSignals {
 public:
  TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;
  ~TerminationSignals();
  int Wait();

 private:
  sigset_t set_;
  sigset_t previous_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_RUN_UNTIL_SIGNAL_H_
