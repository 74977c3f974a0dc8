#include "checkpoint.h"

#include <filesystem>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "sluice/ops/checkpoint_state.h"
#include "sluice/ops/element_codec.h"

namespace fashion_mnist {
namespace {

using sluice::ElementCodec;

constexpr std::string_view kMagic = "FMNISTCK1";

// FNV-1a, 64-bit: enough to tell a torn or altered file from a good one.
uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

void EncodeEpoch(const EpochResult& e, std::string* out) {
  ElementCodec<int64_t>::Encode(e.epoch, out);
  ElementCodec<int64_t>::Encode(e.images, out);
  for (double v : {e.mean_loss, e.test_accuracy, e.test_loss, e.images_per_second}) {
    ElementCodec<double>::Encode(v, out);
  }
}

absl::Status DecodeEpoch(std::string_view* in, EpochResult* e) {
  int64_t epoch = 0;
  absl::Status s = ElementCodec<int64_t>::Decode(in, &epoch);
  e->epoch = static_cast<int>(epoch);
  if (s.ok()) s = ElementCodec<int64_t>::Decode(in, &e->images);
  for (double* v : {&e->mean_loss, &e->test_accuracy, &e->test_loss, &e->images_per_second}) {
    if (s.ok()) s = ElementCodec<double>::Decode(in, v);
  }
  return s;
}

}  // namespace

std::string TrainerSettings(const TrainerConfig& config) {
  return absl::StrCat("model=", config.model, " batch_size=", config.global_batch_size, " seed=", config.seed,
                      " shuffle_buffer=", config.shuffle_buffer, " epochs=", config.epochs,
                      " learning_rate=", config.learning_rate,
                      " max_steps_per_epoch=", config.max_steps_per_epoch);
}

std::string TrainerCheckpointPath(const std::string& checkpoint_dir) {
  return (std::filesystem::path(checkpoint_dir) / "trainer.ckpt").string();
}

absl::Status WriteTrainerCheckpoint(const std::string& path, const TrainerCheckpoint& c) {
  std::string body;
  ElementCodec<std::string>::Encode(c.settings, &body);
  for (int64_t v : {c.epoch, c.epoch_steps, c.epoch_images, c.steps_before_epoch, c.images}) {
    ElementCodec<int64_t>::Encode(v, &body);
  }
  ElementCodec<double>::Encode(c.epoch_loss_sum, &body);
  ElementCodec<double>::Encode(c.train_seconds, &body);
  ElementCodec<int64_t>::Encode(static_cast<int64_t>(c.finished.size()), &body);
  for (const EpochResult& e : c.finished) EncodeEpoch(e, &body);
  ElementCodec<std::vector<float>>::Encode(c.parameters, &body);
  ElementCodec<std::vector<float>>::Encode(c.velocity, &body);
  ElementCodec<std::string>::Encode(c.input, &body);
  std::string file(kMagic);
  ElementCodec<uint64_t>::Encode(Fnv1a(body), &file);
  file += body;
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  return sluice::WriteFileAtomically(path, file);
}

absl::StatusOr<TrainerCheckpoint> ReadTrainerCheckpoint(const std::string& path,
                                                        const TrainerConfig& config) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat("no checkpoint to resume from at ", path));
  }
  absl::StatusOr<std::string> file = sluice::ReadCheckpointFile(path);
  if (!file.ok()) return file.status();
  std::string_view in = *file;
  auto corrupt = [&path](const std::string& why) {
    return absl::DataLossError(absl::StrCat("trainer checkpoint ", path, " is corrupt: ", why));
  };
  if (!in.starts_with(kMagic)) return corrupt("it does not start with \"FMNISTCK1\"");
  in.remove_prefix(kMagic.size());
  uint64_t checksum = 0;
  if (!ElementCodec<uint64_t>::Decode(&in, &checksum).ok()) return corrupt("truncated in its header");
  if (Fnv1a(in) != checksum) return corrupt("its checksum does not match (truncated or altered)");
  TrainerCheckpoint c;
  absl::Status s = ElementCodec<std::string>::Decode(&in, &c.settings);
  for (int64_t* v : {&c.epoch, &c.epoch_steps, &c.epoch_images, &c.steps_before_epoch, &c.images}) {
    if (s.ok()) s = ElementCodec<int64_t>::Decode(&in, v);
  }
  if (s.ok()) s = ElementCodec<double>::Decode(&in, &c.epoch_loss_sum);
  if (s.ok()) s = ElementCodec<double>::Decode(&in, &c.train_seconds);
  int64_t finished = 0;
  if (s.ok()) s = ElementCodec<int64_t>::Decode(&in, &finished);
  if (s.ok() && (finished < 0 || static_cast<uint64_t>(finished) > in.size()))
    return corrupt("bad epoch count");
  for (int64_t i = 0; s.ok() && i < finished; ++i) s = DecodeEpoch(&in, &c.finished.emplace_back());
  if (s.ok()) s = ElementCodec<std::vector<float>>::Decode(&in, &c.parameters);
  if (s.ok()) s = ElementCodec<std::vector<float>>::Decode(&in, &c.velocity);
  if (s.ok()) s = ElementCodec<std::string>::Decode(&in, &c.input);
  if (!s.ok()) return corrupt(std::string(s.message()));
  if (!in.empty()) return corrupt("trailing bytes");
  if (c.settings != TrainerSettings(config)) {
    return absl::FailedPreconditionError(absl::StrCat("the checkpoint at ", path,
                                                      " was written by a run with ", c.settings,
                                                      "; this run has ", TrainerSettings(config)));
  }
  return c;
}

}  // namespace fashion_mnist
