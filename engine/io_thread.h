// Which threads complete I/O: the io_uring loop and the threads backend's workers and timer resume the
// coroutines waiting on their operations inline, so pipeline code runs there too (Reactor::IsAnyIoThread).
#ifndef SLUICE_ENGINE_IO_THREAD_H_
#define SLUICE_ENGINE_IO_THREAD_H_

namespace sluice::detail {

// Called by a backend's thread as it starts (true) and ends (false) its loop.
void SetIoThread(bool on) noexcept;

}  // namespace sluice::detail

#endif  // SLUICE_ENGINE_IO_THREAD_H_
