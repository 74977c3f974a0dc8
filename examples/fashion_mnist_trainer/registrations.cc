// The trainer's registered functions and element type (trainer.h): with them its pipeline serializes
// and rebuilds in another process. A separate file because registering ImageLabel instantiates every
// standard op over it, which is slow to compile and needs to be built once.
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "model.h"
#include "sluice/ops/registration.h"
#include "trainer.h"

namespace fashion_mnist {
namespace {

using sluice::Dataset;
using sluice::Tensor;

sluice::Compression CompressionOf(std::string_view path) {
  if (absl::EndsWith(absl::string_view(path.data(), path.size()), ".gz")) return sluice::Compression::kGzip;
  if (absl::EndsWith(absl::string_view(path.data(), path.size()), ".zlib")) return sluice::Compression::kZlib;
  return sluice::Compression::kNone;
}

struct OpenShard {
  Dataset<std::string> operator()(std::string path) const {
    sluice::Compression compression = CompressionOf(path);
    return sluice::TFRecord({std::move(path)}, compression);
  }
};

// Parsed (image bytes, label) -> (standardised float pixels, label).
struct DecodeImage {
  absl::StatusOr<ImageLabel> operator()(sluice::ParsedExample example) const {
    const std::string& bytes = example.fixed[0].data<std::string>()[0];
    if (bytes.size() != static_cast<size_t>(kImageSize)) {
      return absl::InvalidArgumentError(
          absl::StrCat("image has ", bytes.size(), " bytes, expected ", kImageSize, " (28 x 28 uint8)"));
    }
    int64_t label = example.fixed[1].data<int64_t>()[0];
    if (label < 0 || label >= kNumClasses) {
      return absl::InvalidArgumentError(absl::StrCat("label ", label, " is outside 0..", kNumClasses - 1));
    }
    Tensor pixels = Tensor::Empty(sluice::DType::kFloat32, sluice::Shape({kImageSize}));
    StandardizeImage(bytes, pixels.data<float>());
    return ImageLabel(std::move(pixels), label);
  }
};

bool Register() {
  sluice::registration_detail::RegisterTypeAtStartup<ImageLabel>();
  sluice::registration_detail::RegisterFunctionAtStartup(kOpenShard, [](const sluice::FunctionArgs&) {
    return OpenShard{};
  });
  sluice::registration_detail::RegisterFunctionAtStartup(kDecodeImage, [](const sluice::FunctionArgs&) {
    return DecodeImage{};
  });
  return true;
}

}  // namespace

// Called, not a static initialiser: this file is a member of the trainer's static library, which the
// linker would drop if nothing referenced it.
void EnsureTrainerRegistrations() {
  static const bool registered = Register();
  (void)registered;
}

}  // namespace fashion_mnist
