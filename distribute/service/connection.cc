#include "distribute/service/connection.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "asio/write.hpp"
#include "distribute/service/messages.h"

namespace sluice::service {
namespace {
constexpr size_t kReadChunkBytes = 64 << 10;
constexpr uint64_t kMaxDrainBytes = 4 << 20;
}  // namespace

FrameConnection::FrameConnection(asio::ip::tcp::socket socket, uint32_t max_payload_bytes)
    : socket_(std::move(socket)), decoder_(max_payload_bytes), read_buffer_(kReadChunkBytes) {
  asio::error_code ignored;
  // Requests and responses are small and latency-bound: do not let Nagle hold them back.
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
}

void FrameConnection::Start(OnFrame on_frame, OnClose on_close) {
  on_frame_ = std::move(on_frame);
  on_close_ = std::move(on_close);
  ReadSome();
}

void FrameConnection::ReadSome() {
  socket_.async_read_some(
      asio::buffer(read_buffer_), [self = shared_from_this()](const asio::error_code& ec, size_t n) {
        if (self->closed_) {
          // Lingering close: discard what the peer still sends until it closes, so that our error frame
          // is not destroyed by the reset a close with unread data would send; bounded in bytes.
          self->drained_bytes_ += n;
          if (!ec && self->draining_ && self->drained_bytes_ < kMaxDrainBytes) {
            self->ReadSome();
          } else {
            self->CloseSocket();
          }
          return;
        }
        if (ec) {
          if (ec == asio::error::eof) {
            const size_t partial = self->decoder_.buffered();
            self->Finish(absl::UnavailableError(
                partial == 0 ? std::string("peer closed the connection")
                             : absl::StrCat("peer closed the connection in the middle of a frame (", partial,
                                            " bytes of it received)")));
          } else {
            self->Finish(absl::UnavailableError(absl::StrCat("read failed: ", ec.message())));
          }
          self->CloseSocket();
          return;
        }
        self->decoder_.Feed(std::string_view(self->read_buffer_.data(), n));
        while (!self->closed_) {
          absl::StatusOr<std::optional<Frame>> frame = self->decoder_.Next();
          if (!frame.ok()) {
            self->Close(frame.status(), /*tell_peer=*/true);
            break;
          }
          if (!frame->has_value()) break;
          // on_frame_ may close the connection; Finish() then leaves the callback for us to drop.
          self->dispatching_ = true;
          self->on_frame_(std::move(**frame));
          self->dispatching_ = false;
        }
        if (self->closed_) self->on_frame_ = nullptr;
        if (!self->closed_ || self->draining_) self->ReadSome();
      });
}

void FrameConnection::Send(std::string encoded_frames) {
  if (closed_) return;
  write_queue_.push_back(std::move(encoded_frames));
  if (!writing_) WriteNext();
}

void FrameConnection::WriteNext() {
  if (write_queue_.empty()) {
    if (close_after_writes_) {
      // The peer reads our error frame, then end of stream; our read side drains until it closes.
      asio::error_code ignored;
      socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    }
    return;
  }
  writing_ = true;
  asio::async_write(socket_, asio::buffer(write_queue_.front()),
                    [self = shared_from_this()](const asio::error_code& ec, size_t) {
                      self->writing_ = false;
                      self->write_queue_.pop_front();
                      if (ec) {
                        self->write_queue_.clear();
                        self->Finish(absl::UnavailableError(absl::StrCat("write failed: ", ec.message())));
                        self->CloseSocket();
                        return;
                      }
                      self->WriteNext();
                    });
}

void FrameConnection::Close(const absl::Status& why, bool tell_peer) {
  if (closed_) return;
  Finish(why);
  if (!tell_peer) {
    CloseSocket();
    return;
  }
  // Only the write in flight (if any) stays queued ahead of the error frame.
  while (write_queue_.size() > (writing_ ? 1u : 0u)) write_queue_.pop_back();
  std::string frame;
  AppendFrame(&frame, FrameKind::kError, /*call_id=*/0, EncodeErrorPayload(why));
  write_queue_.push_back(std::move(frame));
  close_after_writes_ = true;
  draining_ = true;
  if (!writing_) WriteNext();
}

void FrameConnection::Abort(const absl::Status& why) {
  Finish(why);
  draining_ = false;
  CloseSocket();
}

void FrameConnection::CloseSocket() {
  asio::error_code ignored;  // closing twice or after a reset is harmless
  socket_.close(ignored);
}

void FrameConnection::Finish(const absl::Status& why) {
  if (closed_) return;
  closed_ = true;
  // The owner may drop its last reference inside on_close.
  std::shared_ptr<FrameConnection> keep = shared_from_this();
  // Dropped before the call: they may hold the owner, which may in turn hold this connection.
  OnClose on_close = std::move(on_close_);
  on_close_ = nullptr;
  if (!dispatching_) on_frame_ = nullptr;
  if (on_close) on_close(why);
}

}  // namespace sluice::service
