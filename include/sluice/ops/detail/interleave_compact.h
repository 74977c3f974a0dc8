// The compact section of an Interleave's state, shared by the sequential and the parallel form
// (docs/checkpoint.md, "Compact mode"): the cycle as a full state has it, an empty vector where a full
// state has its slots (cycle_length >= 1 of them, so the two never mix), the input index the input's
// mark stands before, whether that mark follows at /0, and per slot nothing or (input index of the
// element that opened it, its dataset's records, its stream's mark). The parallel form appends the slots
// that hold an error waiting for their turn, as (slot, input index) pairs.
#ifndef SLUICE_OPS_DETAIL_INTERLEAVE_COMPACT_H_
#define SLUICE_OPS_DETAIL_INTERLEAVE_COMPACT_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/stream_mark.h"

namespace sluice::ops::detail_interleave {

using CompactSlot = std::optional<std::tuple<int64_t, std::string, std::string>>;
using ErrorSlots = std::vector<std::pair<int64_t, int64_t>>;  // (slot, input index)

struct CompactSection {
  int64_t input_index = 0;
  int64_t cycle_index = 0;
  int64_t block_index = 0;
  bool input_done = false;
  std::vector<int64_t> marker;  // empty; a full state has its slots here
  int64_t base_index = 0;
  bool has_input = false;
  std::vector<CompactSlot> slots;
};

inline void EncodeCompactHead(const CompactSection& c, std::string* out) {
  out->clear();
  ElementCodec<int64_t>::Encode(c.input_index, out);
  ElementCodec<int64_t>::Encode(c.cycle_index, out);
  ElementCodec<int64_t>::Encode(c.block_index, out);
  ElementCodec<bool>::Encode(c.input_done, out);
  ElementCodec<std::vector<int64_t>>::Encode(c.marker, out);
  ElementCodec<int64_t>::Encode(c.base_index, out);
  ElementCodec<bool>::Encode(c.has_input, out);
}

// The slots of a section, as ElementCodec<std::vector<CompactSlot>> encodes them, written in place (a
// slot's mark is not copied into a CompactSlot first): the count, then per slot one of the two.
inline void AppendSlotCount(size_t n, std::string* out) { codec_detail::PutVarint(n, out); }
inline void AppendEmptySlot(std::string* out) { out->push_back('\0'); }
inline void AppendOpenSlot(int64_t index, std::string_view records, std::string_view mark, std::string* out) {
  out->push_back('\1');
  ElementCodec<int64_t>::Encode(index, out);
  codec_detail::PutString(records, out);
  codec_detail::PutString(mark, out);
}

// DataLoss unless the section describes a cycle this op can rebuild: its shape, every slot's input
// element before the next one, the input's mark before the oldest of them, and the input there exactly
// when something is left to read.
inline absl::Status CheckCompactSection(const CompactSection& c, const ErrorSlots& errors,
                                        int64_t cycle_length, int64_t block_length) {
  if (c.slots.size() != static_cast<size_t>(cycle_length) || c.cycle_index < 0 ||
      c.cycle_index >= cycle_length || c.block_index < 0 || c.block_index >= block_length ||
      c.input_index < 0) {
    return absl::DataLossError(
        absl::StrCat("a cycle of ", c.slots.size(), " at ", c.cycle_index, ", block ", c.block_index));
  }
  int64_t oldest = c.input_index;
  auto take = [&](int64_t index) {
    if (index < 0 || index >= c.input_index) {
      return absl::DataLossError(absl::StrCat("a slot of input element ", index, " of ", c.input_index));
    }
    oldest = std::min(oldest, index);
    return absl::OkStatus();
  };
  for (const CompactSlot& slot : c.slots) {
    if (!slot) continue;
    if (absl::Status s = take(std::get<0>(*slot)); !s.ok()) return s;
  }
  std::vector<char> erred(c.slots.size());
  for (const auto& [slot, index] : errors) {
    if (slot < 0 || slot >= cycle_length || c.slots[static_cast<size_t>(slot)] ||
        erred[static_cast<size_t>(slot)]) {
      return absl::DataLossError(absl::StrCat("an error in cycle slot ", slot));
    }
    erred[static_cast<size_t>(slot)] = 1;
    if (absl::Status s = take(index); !s.ok()) return s;
  }
  const bool needs_input = oldest < c.input_index || !c.input_done;
  if (c.base_index != oldest || needs_input != c.has_input) {
    return absl::DataLossError("the input's mark does not match the open slots");
  }
  return absl::OkStatus();
}

// A compact restore's re-read of input elements [next, end) that reopens the saved slots; meanwhile a
// save writes the restored section again, with the input's mark from the restore.
struct Refill {
  bool active = false;
  int64_t next = 0;
  int64_t end = 0;
  bool input_done = false;
  bool has_input = false;
  bool mark_ok = true;
  std::vector<CompactSlot> slots;
  std::string section;
  StreamMark mark;

  // `trailing`: what the op's section holds after the slots; `mark`/`mark_ok`: the restored input's.
  void Begin(CompactSection c, std::string_view trailing, StreamMark input_mark, bool input_mark_ok) {
    next = c.base_index;
    end = c.input_index;
    input_done = c.input_done;
    has_input = c.has_input;
    mark = std::move(input_mark);
    mark_ok = input_mark_ok;
    EncodeCompactHead(c, &section);
    ElementCodec<std::vector<CompactSlot>>::Encode(c.slots, &section);
    section.append(trailing);
    slots = std::move(c.slots);
    active = true;
  }
  // The section and input mark a save writes meanwhile (null: no input).
  absl::Status SectionNow(const std::string** section_now, const StreamMark** mark_now) const {
    if (!mark_ok) return absl::FailedPreconditionError("its input cannot mark its place");
    *section_now = &section;
    *mark_now = has_input ? &mark : nullptr;
    return absl::OkStatus();
  }
  // The input ended before `end`: the error to yield; the re-read is over.
  absl::Status EndedEarly(const std::string& op) {
    absl::Status error =
        absl::DataLossError(absl::StrCat(op, ": restoring a compact checkpoint, the input ended at ", next,
                                         " of the ", end, " elements it had before the save"));
    next = end;
    input_done = true;
    return error;
  }
  void Finish() {
    active = false;
    slots.clear();
    section.clear();
  }
};

}  // namespace sluice::ops::detail_interleave

#endif  // SLUICE_OPS_DETAIL_INTERLEAVE_COMPACT_H_
