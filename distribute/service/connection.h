// Internal (includes Asio; only distribute/service/*.cc include it): one TCP connection that reads and
// writes frames on the network thread.
//
// Contract:
// - Every member runs on the thread that runs the connection's io_context (the network thread).
// - Start() begins reading: each whole frame goes to `on_frame`, in arrival order. Send() queues encoded
//   frames and writes them in order, one write in flight at a time.
// - The connection ends once, with a reason, passed to `on_close`: the peer closed it (Unavailable, saying
//   whether a partial frame was pending), a read or write failed (Unavailable with the error), the decoder
//   refused a frame (its status), or Close()/Abort() was called. After that nothing more is delivered,
//   and the callbacks are dropped (they may own the connection's owner).
// - Close(status, tell_peer=true) first writes an error frame with call id 0 carrying `status`, so the
//   peer learns why, then shuts down sending and discards input until the peer closes (at most 4 MiB),
//   so a reset does not destroy the error frame in flight; Abort() closes at once (shutdown).
#ifndef SLUICE_DISTRIBUTE_SERVICE_CONNECTION_H_
#define SLUICE_DISTRIBUTE_SERVICE_CONNECTION_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "asio/ip/tcp.hpp"
#include "distribute/service/frame.h"

namespace sluice::service {

class FrameConnection : public std::enable_shared_from_this<FrameConnection> {
 public:
  using OnFrame = std::function<void(Frame)>;
  using OnClose = std::function<void(const absl::Status&)>;

  FrameConnection(asio::ip::tcp::socket socket, uint32_t max_payload_bytes);

  void Start(OnFrame on_frame, OnClose on_close);
  void Send(std::string encoded_frames);
  void Close(const absl::Status& why, bool tell_peer);
  void Abort(const absl::Status& why);
  bool closed() const { return closed_; }

 private:
  void ReadSome();
  void WriteNext();
  // Marks the connection closed and reports `why`, once.
  void Finish(const absl::Status& why);
  // Cancels pending reads and writes; their handlers still run (with operation_aborted).
  void CloseSocket();

  asio::ip::tcp::socket socket_;
  FrameDecoder decoder_;
  std::vector<char> read_buffer_;
  std::deque<std::string> write_queue_;  // front() is being written while writing_
  bool writing_ = false;
  bool closed_ = false;
  bool close_after_writes_ = false;
  bool dispatching_ = false;  // inside on_frame_
  bool draining_ = false;     // closed with an error frame: reading only to discard, until the peer closes
  uint64_t drained_bytes_ = 0;
  OnFrame on_frame_;
  OnClose on_close_;
};

}  // namespace sluice::service

#endif  // SLUICE_DISTRIBUTE_SERVICE_CONNECTION_H_
