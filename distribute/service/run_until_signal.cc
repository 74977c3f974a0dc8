#include "distribute/service/run_until_signal.h"

#include <pthread.h>

namespace sluice::service {

TerminationSignals::TerminationSignals() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, &previous_);
}

TerminationSignals::~TerminationSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

int TerminationSignals::Wait() {
  int signal = 0;
  while (sigwait(&set_, &signal) != 0) {
  }
  return signal;
}

}  // namespace sluice::service
