// Stream<T>: the iteration state of one op instance, pulled by its consumer.
//
// Contract:
// - Poll(out) tries to produce the next element without waiting: kReady with *out set (a value or an
//   error element; errors do not end the stream, a consumer may poll on), kEnd when the stream is over
//   (and stays over), or kPending when nothing is available yet. After kPending the consumer awaits
//   WaitReady() and polls again; WaitReady may complete spuriously.
// - Synchronous ops (a map without parallelism, filter, take, batch, ...) poll their input inline and are
//   kPending only when their input is, so a chain of them costs one virtual call per op per element and
//   no coroutine frame: this is how sluice fuses synchronous ops (see docs/dataset-plan.md).
// - Asynchronous ops (prefetch, parallel map, readers) produce on other threads into a bounded buffer;
//   Poll takes from it and WaitReady awaits it.
// - A stream is used by one consumer at a time; it is not thread-safe. Destroying it cancels the work it
//   started. On a plain thread it also joins that work (blocking briefly); on a pool worker an async
//   stream hands the join to the iterator instead of blocking (sluice/ops/detail/async_stream_owner.h),
//   and the iterator waits for it when it is destroyed or closed.
// - position(): sources whose place is plain state (file sources, ListFiles, Range, FromVector) report
//   where they are, so that a checkpoint can rebuild the same place later with
//   PositionedSource::MakeStreamAt. Every other stream reports nullopt.
// - Save(writer, path): writes this stream's state under its node path and its inputs' under theirs
//   (docs/checkpoint.md). Called between Poll calls only, like destruction: never while a Poll or a
//   WaitReady is running. A Task so that an async op can pause its producer without blocking a thread;
//   the default saves position() when there is one and otherwise fails with FailedPrecondition naming
//   the op. Nothing of it runs unless someone saves.
// - Mark(mark): compact checkpoints (Options::compact_checkpoints) only. Writes what Save would, through a
//   MarkWriter (sluice/ops/stream_mark.h), synchronously and without elements; false when this stream
//   cannot (the iterator refuses compact mode for such pipelines before any stream runs). Called by the
//   stream's consumer between Poll calls. The default marks position() when there is one.
#ifndef SLUICE_OPS_STREAM_H_
#define SLUICE_OPS_STREAM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/engine/task.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/stream_mark.h"

namespace sluice {

enum class PollState : uint8_t { kReady, kPending, kEnd };

// Where a source stream is: the place of the element it delivers next (after the last one it delivered;
// errors are elements and count). What the fields mean is the source's:
//   TFRecord, TextLines, FixedLengthRecords: `index` is the file, in the list the stream reads (the node's
//     files, or its auto-shard share), `offset` the byte offset of the next record in that file (in the
//     decompressed stream for GZIP/ZLIB), as Record::offset reports it;
//   ListFiles: `index` is the next name's place in this pass's order, `offset` the pass (which shuffle);
//   Range, FromVector: `index` is the next element's index, `offset` is 0.
// The end of a stream is a position too (e.g. {number of files, 0}).
struct SourcePosition {
  int64_t index = 0;
  uint64_t offset = 0;
  bool operator==(const SourcePosition&) const = default;
};

template <class T>
class Stream {
 public:
  using element_type = T;
  virtual ~Stream() = default;
  virtual PollState Poll(absl::StatusOr<T>* out) = 0;
  // Synchronous streams never return kPending, so the default never waits.
  virtual Task<void> WaitReady() { return ReadyNow(); }
  // The position of the next element this stream delivers, for sources that keep one (see above);
  // nullopt for every other stream. Valid between Poll calls.
  virtual std::optional<SourcePosition> position() const { return std::nullopt; }
  // See the contract above. `writer` collects the sections; `path` is this stream's node path.
  virtual Task<absl::Status> Save(std::shared_ptr<CheckpointWriter> writer, std::string path) {
    if (std::optional<SourcePosition> at = position()) {
      writer->WritePosition(path, *at);
      return SaveResult(absl::OkStatus());
    }
    return SaveResult(writer->Unsupported(path));
  }
  // See the contract above.
  virtual bool Mark(MarkWriter& mark) const {
    std::optional<SourcePosition> at = position();
    if (!at) return false;
    mark.Write(at->index, at->offset);
    return true;
  }

 protected:
  // A Save that finished without awaiting anything.
  static Task<absl::Status> SaveResult(absl::Status status) { co_return status; }

 private:
  static Task<void> ReadyNow() { co_return; }
};

struct IteratorContext;

// A source node whose streams report position() and that can make a stream starting at one: a
// checkpoint finds it in the graph (dynamic_cast from the Node<T>), saves a stream's position() and later
// rebuilds the same place with MakeStreamAt over the same definition and an equivalent context (the same
// auto-shard share). The new stream's first element is the one at `position`; its position() starts
// there. A position the node could not have reported (a file index past the list, a byte offset that is
// not a record boundary, past the end of the data) is an error element naming it, as the source's
// contract says; errors never throw.
template <class T>
class PositionedSource {
 public:
  virtual ~PositionedSource() = default;
  virtual std::unique_ptr<Stream<T>> MakeStreamAt(std::shared_ptr<const IteratorContext> context,
                                                  SourcePosition position) const = 0;
};

}  // namespace sluice

#endif  // SLUICE_OPS_STREAM_H_
