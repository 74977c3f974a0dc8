// StreamMark: where a stream and its inputs stand, held without elements, for compact checkpoints
// (Options::compact_checkpoints, docs/checkpoint.md).
//
// A mark holds the sections the stream's Save would write, each keyed by its node path relative to the
// marked stream ("" for the stream itself, "/0" for its input, "/0/1", ...). A buffering op (Prefetch)
// marks its input after pulling each element and hands the mark on with the element; when the consumer
// saves, the op writes the mark of the last element it returned instead of its buffer, so the state
// holds source positions and counters only. WriteTo turns a mark back into sections under a node path,
// so a restore reads a compact state exactly as it reads a full one.
//
// Contract:
// - A MarkWriter fills one StreamMark (cleared first). Streams call Write for their own section, then
//   EnterInput(i) / the input's Mark / LeaveInput() for each open input, as their Save recurses.
// - Marks of small pipelines (a few counters and a file position per op) live inline; no allocation
//   per element once the writer's scratch has grown.
// - Threading: a mark is a value; a writer is used by one thread at a time.
#ifndef SLUICE_OPS_STREAM_MARK_H_
#define SLUICE_OPS_STREAM_MARK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/element_codec.h"

namespace sluice {

// Buffering ops (Shuffle, Prefetch, a parallel Map) keep their input's mark after every kMarkInterval-th
// element only, and save the newest such mark at or before their position with the count of elements
// after it; a restore re-reads those and drops them. A mark per element cost more than a light element
// itself (the trainer ran at 0.85x with checkpointing on and no save); this costs one mark per
// kMarkInterval elements, and a restore re-reads fewer than kMarkInterval extra elements per such op.
inline constexpr int64_t kMarkInterval = 32;

class StreamMark {
 public:
  StreamMark() = default;
  bool empty() const { return bytes_.empty(); }
  size_t size() const { return bytes_.size(); }
  void Clear() { bytes_.clear(); }
  // The mark as bytes (a nested dataset's mark inside an op's section: an Interleave's slots), and back.
  // FromBytes checks every chunk (the bytes come from a checkpoint): DataLoss when they do not parse.
  std::string_view bytes() const { return {bytes_.data(), bytes_.size()}; }
  static absl::StatusOr<StreamMark> FromBytes(std::string_view bytes) {
    std::string_view in = bytes;
    while (!in.empty()) {
      for (int part = 0; part < 2; ++part) {
        uint64_t n = 0;
        if (!codec_detail::GetVarint(&in, &n) || n > in.size()) {
          return absl::DataLossError("a stream mark is truncated");
        }
        if (part == 0 && n > 0 && in.front() != '/')
          return absl::DataLossError("a stream mark's path is bad");
        in.remove_prefix(static_cast<size_t>(n));
      }
    }
    // Built in one step: GCC 12 warns of a maybe-uninitialized InlinedVector in default-then-assign.
    return StreamMark(bytes);
  }

  // Every section of the mark, under `base` (the node path of the marked stream). `shares_base`: the
  // marked stream is part of the node at `base` (a parallel Batch's grouping), so its own section goes
  // after what that node already wrote there.
  void WriteTo(CheckpointWriter* writer, std::string_view base, bool shares_base = false) const {
    std::string path;
    ForEachSection([&](std::string_view relative, std::string_view section) {
      path.assign(base == "/" && !relative.empty() ? std::string_view() : base);
      path.append(relative);
      if (shares_base && relative.empty()) {
        writer->AppendRaw(path, section);
      } else {
        writer->WriteRaw(path, section);
      }
    });
  }

 private:
  explicit StreamMark(std::string_view bytes) : bytes_(bytes.begin(), bytes.end()) {}
  friend class MarkWriter;
  using Bytes = absl::InlinedVector<char, 120>;

  static void PutLength(size_t n, Bytes* out) {
    do {
      const auto low = static_cast<uint8_t>(n & 0x7f);
      n >>= 7;
      out->push_back(static_cast<char>(n != 0 ? (low | 0x80) : low));
    } while (n != 0);
  }
  // Chunks were written by PutLength + bytes in this process; the walk trusts them.
  static std::string_view TakeChunk(std::string_view* in) {
    size_t n = 0;
    int shift = 0;
    size_t used = 0;
    for (; used < in->size(); ++used) {
      const auto byte = static_cast<uint8_t>((*in)[used]);
      n |= static_cast<size_t>(byte & 0x7f) << shift;
      shift += 7;
      if ((byte & 0x80) == 0) break;
    }
    const std::string_view chunk = in->substr(used + 1, n);
    in->remove_prefix(used + 1 + n);
    return chunk;
  }
  template <class F>
  void ForEachSection(F&& visit) const {
    std::string_view in(bytes_.data(), bytes_.size());
    while (!in.empty()) {
      const std::string_view relative = TakeChunk(&in);
      const std::string_view section = TakeChunk(&in);
      visit(relative, section);
    }
  }
  void Append(std::string_view relative, std::string_view section) {
    PutLength(relative.size(), &bytes_);
    bytes_.insert(bytes_.end(), relative.begin(), relative.end());
    PutLength(section.size(), &bytes_);
    bytes_.insert(bytes_.end(), section.begin(), section.end());
  }

  Bytes bytes_;
};

class MarkWriter {
 public:
  // Starts a mark of the stream at relative path "".
  void Begin(StreamMark* out) {
    out_ = out;
    out_->Clear();
    relative_.clear();
  }
  // The section of the stream being marked: values with ElementCodecs, as its Save writes them.
  template <class... Ts>
  void Write(const Ts&... values) {
    scratch_.clear();
    (ElementCodec<Ts>::Encode(values, &scratch_), ...);
    out_->Append(relative_, scratch_);
  }
  // The section of the stream being marked, encoded elsewhere.
  void WriteRaw(std::string_view section) { out_->Append(relative_, section); }
  void EnterInput(size_t index) {
    relative_.push_back('/');
    relative_.append(std::to_string(index));
  }
  void LeaveInput() { relative_.resize(relative_.rfind('/')); }
  // Marks `input`, the input `index` of the stream being marked; false when it cannot.
  template <class S>
  bool Input(size_t index, const S& input) {
    EnterInput(index);
    const bool marked = input.Mark(*this);
    LeaveInput();
    return marked;
  }
  // The section of a stream whose input is part of the same node (a parallel Batch's grouping):
  // `values`, then the section of `shared` (that input's mark), whose other sections follow at their
  // paths.
  template <class... Ts>
  void WriteWithShared(const StreamMark& shared, const Ts&... values) {
    scratch_.clear();
    (ElementCodec<Ts>::Encode(values, &scratch_), ...);
    shared.ForEachSection([this](std::string_view relative, std::string_view section) {
      if (relative.empty()) scratch_.append(section);
    });
    out_->Append(relative_, scratch_);
    shared.ForEachSection([this](std::string_view relative, std::string_view section) {
      if (relative.empty()) return;
      scratch_.assign(relative_);
      scratch_.append(relative);
      out_->Append(scratch_, section);
    });
  }
  // The sections of `inner`, a mark of the input `index` of the stream being marked.
  void AppendInputMark(size_t index, const StreamMark& inner) {
    EnterInput(index);
    inner.ForEachSection([this](std::string_view relative, std::string_view section) {
      scratch_.assign(relative_);
      scratch_.append(relative);
      out_->Append(scratch_, section);
    });
    LeaveInput();
  }

 private:
  StreamMark* out_ = nullptr;
  std::string relative_;
  std::string scratch_;
};

// Where `stream` stands, into *out; false where it cannot mark its place (restored from a full state).
template <class S>
bool MarkStream(const S& stream, StreamMark* out) {
  MarkWriter writer;
  writer.Begin(out);
  return stream.Mark(writer);
}

}  // namespace sluice

#endif  // SLUICE_OPS_STREAM_MARK_H_
