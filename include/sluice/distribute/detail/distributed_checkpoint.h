// The saved state of a DistributedIterator (docs/checkpoint.md, "Distributed iterators"): the input
// iterator's own checkpoint, the steps delivered to the replica queues but not yet consumed, and what the
// producer holds of a batch it is still cutting.
//
// Contract:
// - Bytes: "SLDI", a format version, an XXH64 of the body, then the body (ElementCodec values in the order
//   of DistributedCheckpoint's fields). Any truncation or bit flip is DataLoss before anything is decoded;
//   another version is FailedPrecondition; a body that does not decode is DataLoss. Nothing crashes or
//   allocates beyond the input's size on hostile bytes (ElementCodec's guarantee).
// - The element type is saved by name: restoring into a distribution of another batch type fails with
//   FailedPrecondition naming both.
#ifndef SLUICE_DISTRIBUTE_DETAIL_DISTRIBUTED_CHECKPOINT_H_
#define SLUICE_DISTRIBUTE_DETAIL_DISTRIBUTED_CHECKPOINT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/export.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/element_type.h"

namespace sluice::distribute {

// Bumped whenever the layout changes incompatibly.
inline constexpr uint64_t kDistributedCheckpointVersion = 1;

// The distribution a state was saved from; a restore compares it with its own.
struct DistributedTopology {
  int64_t mode = 0;  // detail::DistributeMode
  int64_t num_workers = 1;
  int64_t worker_index = 0;
  int64_t replicas_per_worker = 1;
  int64_t static_batch = -1;   // -1: not static
  int64_t applied_policy = 0;  // AutoShardPolicy
  friend bool operator==(const DistributedTopology&, const DistributedTopology&) = default;
  std::string DebugString() const {
    return absl::StrCat(num_workers, " worker", num_workers == 1 ? "" : "s", " (worker ", worker_index,
                        ") with ", replicas_per_worker, " replica", replicas_per_worker == 1 ? "" : "s",
                        " each");
  }
};

template <class B>
struct DistributedCheckpoint {
  DistributedTopology topology;
  uint64_t first_pass = 0;     // the iterator's epoch (IteratorState's first pass)
  int64_t consumed_steps = 0;  // steps every local replica had taken
  int64_t agreement_step = 0;  // steps made from the input so far: the next one the workers agree on
  bool finished = false;       // the producer had delivered its last step
  std::string input;           // the input iterator's checkpoint (Iterator::Save)
  // Steps delivered but not consumed, oldest first: one piece (or error) per local replica.
  std::vector<std::vector<absl::StatusOr<B>>> steps;
  // Per step of `steps`: how many of its pieces are data (the rest are empty fillers of a last step).
  std::vector<int64_t> real_pieces;
  // A multi-worker input batch the producer is still cutting: the batch and its steps not yet made.
  std::optional<B> batch;
  std::vector<std::pair<absl::Status, std::vector<std::pair<int64_t, int64_t>>>> pending;
};

// The framed bytes of `body`, and the body of framed bytes (DataLoss / FailedPrecondition as above).
SLUICE_EXPORT std::string FrameDistributedCheckpoint(std::string_view body);
SLUICE_EXPORT absl::StatusOr<std::string_view> UnframeDistributedCheckpoint(std::string_view bytes);

template <class B>
std::string EncodeDistributedCheckpointBody(const DistributedCheckpoint<B>& saved) {
  std::string body;
  ElementCodec<std::string>::Encode(std::string(ElementTypeName<B>()), &body);
  const DistributedTopology& t = saved.topology;
  for (int64_t v :
       {t.mode, t.num_workers, t.worker_index, t.replicas_per_worker, t.static_batch, t.applied_policy}) {
    ElementCodec<int64_t>::Encode(v, &body);
  }
  ElementCodec<uint64_t>::Encode(saved.first_pass, &body);
  ElementCodec<int64_t>::Encode(saved.consumed_steps, &body);
  ElementCodec<int64_t>::Encode(saved.agreement_step, &body);
  ElementCodec<bool>::Encode(saved.finished, &body);
  ElementCodec<std::string>::Encode(saved.input, &body);
  ElementCodec<std::vector<std::vector<absl::StatusOr<B>>>>::Encode(saved.steps, &body);
  ElementCodec<std::vector<int64_t>>::Encode(saved.real_pieces, &body);
  ElementCodec<bool>::Encode(saved.batch.has_value(), &body);
  if (saved.batch) ElementCodec<B>::Encode(*saved.batch, &body);
  ElementCodec<int64_t>::Encode(static_cast<int64_t>(saved.pending.size()), &body);
  for (const auto& [error, ranges] : saved.pending) {
    ElementCodec<absl::Status>::Encode(error, &body);
    ElementCodec<std::vector<std::pair<int64_t, int64_t>>>::Encode(ranges, &body);
  }
  return body;
}

template <class B>
std::string EncodeDistributedCheckpoint(const DistributedCheckpoint<B>& saved) {
  return FrameDistributedCheckpoint(EncodeDistributedCheckpointBody(saved));
}

// The body alone (behind the frame's checksum); fuzz/distributed_checkpoint_fuzzer.cc calls it directly.
template <class B>
absl::StatusOr<DistributedCheckpoint<B>> DecodeDistributedCheckpointBody(std::string_view in) {
  auto corrupt = [](const absl::Status& why) {
    return absl::DataLossError(absl::StrCat("distributed checkpoint state does not decode: ", why.message()));
  };
  std::string type;
  if (absl::Status s = ElementCodec<std::string>::Decode(&in, &type); !s.ok()) return corrupt(s);
  if (type != ElementTypeName<B>()) {
    return absl::FailedPreconditionError(absl::StrCat("distributed checkpoint state holds batches of type ",
                                                      type, ", this distribution's batches are ",
                                                      ElementTypeName<B>()));
  }
  DistributedCheckpoint<B> saved;
  DistributedTopology& t = saved.topology;
  for (int64_t* v : {&t.mode, &t.num_workers, &t.worker_index, &t.replicas_per_worker, &t.static_batch,
                     &t.applied_policy}) {
    if (absl::Status s = ElementCodec<int64_t>::Decode(&in, v); !s.ok()) return corrupt(s);
  }
  absl::Status s = ElementCodec<uint64_t>::Decode(&in, &saved.first_pass);
  if (s.ok()) s = ElementCodec<int64_t>::Decode(&in, &saved.consumed_steps);
  if (s.ok()) s = ElementCodec<int64_t>::Decode(&in, &saved.agreement_step);
  if (s.ok()) s = ElementCodec<bool>::Decode(&in, &saved.finished);
  if (s.ok()) s = ElementCodec<std::string>::Decode(&in, &saved.input);
  if (s.ok()) s = ElementCodec<std::vector<std::vector<absl::StatusOr<B>>>>::Decode(&in, &saved.steps);
  if (s.ok()) s = ElementCodec<std::vector<int64_t>>::Decode(&in, &saved.real_pieces);
  bool has_batch = false;
  if (s.ok()) s = ElementCodec<bool>::Decode(&in, &has_batch);
  if (s.ok() && has_batch) s = ElementCodec<B>::Decode(&in, &saved.batch.emplace());
  int64_t pending = 0;
  if (s.ok()) s = ElementCodec<int64_t>::Decode(&in, &pending);
  if (!s.ok()) return corrupt(s);
  // Each pending step takes at least two bytes: a count larger than the rest is corrupt, not an allocation.
  if (pending < 0 || static_cast<uint64_t>(pending) > in.size()) {
    return corrupt(absl::DataLossError("bad count of pending steps"));
  }
  for (int64_t i = 0; i < pending; ++i) {
    auto& [error, ranges] = saved.pending.emplace_back();
    s = ElementCodec<absl::Status>::Decode(&in, &error);
    if (s.ok()) s = ElementCodec<std::vector<std::pair<int64_t, int64_t>>>::Decode(&in, &ranges);
    if (!s.ok()) return corrupt(s);
  }
  if (!in.empty()) return corrupt(absl::DataLossError(absl::StrCat(in.size(), " trailing bytes")));
  if (saved.real_pieces.size() != saved.steps.size()) {
    return corrupt(absl::DataLossError("the steps and their piece counts differ in number"));
  }
  for (size_t i = 0; i < saved.steps.size(); ++i) {
    if (static_cast<int64_t>(saved.steps[i].size()) != t.replicas_per_worker || saved.real_pieces[i] < 0 ||
        saved.real_pieces[i] > t.replicas_per_worker) {
      return corrupt(absl::DataLossError(absl::StrCat("step ", i, " does not have one piece per replica")));
    }
  }
  return saved;
}

template <class B>
absl::StatusOr<DistributedCheckpoint<B>> DecodeDistributedCheckpoint(std::string_view bytes) {
  absl::StatusOr<std::string_view> body = UnframeDistributedCheckpoint(bytes);
  if (!body.ok()) return body.status();
  return DecodeDistributedCheckpointBody<B>(*body);
}

}  // namespace sluice::distribute

#endif  // SLUICE_DISTRIBUTE_DETAIL_DISTRIBUTED_CHECKPOINT_H_
