#include "model.h"  // the example library has no repo-root include path

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"

namespace fashion_mnist {
namespace {

// The matrix kernel keeps a kRows x kCols block of C in registers while it walks the shared dimension, so
// each loaded element of B feeds kRows multiply-adds. The block is written with GCC/Clang vector extensions
// (eight floats, lowered to two SSE registers on baseline x86-64) because GCC 12 at -O2 only vectorises loops
// with "very cheap" cost and kept a first, array-based version's accumulators in memory. target_clones adds an
// AVX2+FMA build of the kernel chosen at load time (ifunc), so the binary still runs on any x86-64; sanitizer
// builds skip it because ifunc resolvers run before the sanitizer runtime is initialised.
typedef float Vec8 __attribute__((vector_size(32), aligned(4)));
constexpr int kRows = 4;
constexpr int kCols = 16;  // two Vec8 per row

// Unaligned load and store through references: passing or returning a 32-byte vector by value trips -Wpsabi
// (the AVX calling convention) in both GCC and Clang.
inline void Load8(Vec8& dst, const float* src) { std::memcpy(&dst, src, sizeof(Vec8)); }

inline void Store8(float* p, const Vec8& v) { std::memcpy(p, &v, sizeof(v)); }

#if defined(__x86_64__) && !defined(SLUICE_SANITIZED_BUILD)
#define SLUICE_FMNIST_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SLUICE_FMNIST_CLONES
#endif

// out (kRows x kCols) = sum over p < k of A(r, p) * B(p, 0..kCols), with A(r, p) = rows[r][p * a_col] and
// B(p, q) = b[p * ldb + q]. Accumulators are named locals so they stay in registers.
inline void MicroKernel(int k, const float* const rows[kRows], int64_t a_col, const float* b, int64_t ldb,
                        float out[kRows][kCols]) {
  Vec8 c00 = {}, c01 = {}, c10 = {}, c11 = {}, c20 = {}, c21 = {}, c30 = {}, c31 = {};
  const float* a0 = rows[0];
  const float* a1 = rows[1];
  const float* a2 = rows[2];
  const float* a3 = rows[3];
  for (int p = 0; p < k; ++p) {
    Vec8 b0;
    Vec8 b1;
    Load8(b0, b + p * ldb);
    Load8(b1, b + p * ldb + 8);
    const int64_t ap = p * a_col;
    const float x0 = a0[ap], x1 = a1[ap], x2 = a2[ap], x3 = a3[ap];
    c00 += x0 * b0;
    c01 += x0 * b1;
    c10 += x1 * b0;
    c11 += x1 * b1;
    c20 += x2 * b0;
    c21 += x2 * b1;
    c30 += x3 * b0;
    c31 += x3 * b1;
  }
  Store8(out[0], c00);
  Store8(out[0] + 8, c01);
  Store8(out[1], c10);
  Store8(out[1] + 8, c11);
  Store8(out[2], c20);
  Store8(out[2] + 8, c21);
  Store8(out[3], c30);
  Store8(out[3] + 8, c31);
}

// Rows of B packed per strip: a 256 x 16 strip is 16 KiB, which stays in L1 while every row block of A
// streams past it.
constexpr int kDepthBlock = 256;

// C (m x n, row stride ldc) += A (m x k) * B (k x n, row stride ldb), where A(i, p) = a[i * a_row + p * a_col].
// The two strides let one kernel serve both x * W (a_row = lda, a_col = 1) and X^T * dZ (a_row = 1,
// a_col = lda) without materialising a transpose. B is copied strip by strip (kDepthBlock x kCols) into a
// contiguous, zero-padded buffer: walking W1's columns in place strides by a power of two (1 KiB) and thrashes
// a few L1 sets, and the padding lets the n = 10 logits run through the same kernel. A row tail repeats the
// last row and drops the copies. The summation order depends only on (m, n, k), so results are deterministic.
SLUICE_FMNIST_CLONES
void MatMulAdd(int m, int n, int k, const float* a, int64_t a_row, int64_t a_col, const float* b, int64_t ldb,
               float* c, int64_t ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  std::vector<float> packed(static_cast<size_t>(std::min(k, kDepthBlock)) * kCols);
  float out[kRows][kCols];
  for (int p0 = 0; p0 < k; p0 += kDepthBlock) {
    const int depth = std::min(kDepthBlock, k - p0);
    for (int j = 0; j < n; j += kCols) {
      const int cols = std::min(kCols, n - j);
      for (int p = 0; p < depth; ++p) {
        float* dst = &packed[static_cast<size_t>(p) * kCols];
        std::memcpy(dst, b + (p0 + p) * ldb + j, cols * sizeof(float));
        std::fill(dst + cols, dst + kCols, 0.0f);
      }
      for (int i = 0; i < m; i += kRows) {
        const int rows_here = std::min(kRows, m - i);
        const float* rows[kRows];
        for (int r = 0; r < kRows; ++r) rows[r] = a + (i + std::min(r, rows_here - 1)) * a_row + p0 * a_col;
        MicroKernel(depth, rows, a_col, packed.data(), kCols, out);
        for (int r = 0; r < rows_here; ++r) {
          float* c_row = c + (i + r) * ldc + j;
          for (int q = 0; q < cols; ++q) c_row[q] += out[r][q];
        }
      }
    }
  }
}

// Each row of `rows` (count x n) gets `bias` (n) added.
void AddBias(int count, int n, const float* bias, float* rows) {
  for (int i = 0; i < count; ++i) {
    float* row = rows + static_cast<int64_t>(i) * n;
    for (int j = 0; j < n; ++j) row[j] += bias[j];
  }
}

// column_sums (n) = sum over the rows of `rows` (count x n).
void SumRows(int count, int n, const float* rows, float* column_sums) {
  std::fill(column_sums, column_sums + n, 0.0f);
  for (int i = 0; i < count; ++i) {
    const float* row = rows + static_cast<int64_t>(i) * n;
    for (int j = 0; j < n; ++j) column_sums[j] += row[j];
  }
}

// Replaces each row of logits with d(mean loss)/d(logits) = (softmax - onehot) / B and returns the summed
// loss. Subtracting the row maximum before exp() keeps every exponent <= 0, so nothing overflows, and the loss
// is log-sum-exp minus the label's logit rather than -log(softmax), which stays finite when p underflows.
double SoftmaxCrossEntropyBackward(int count, std::span<const int64_t> labels, float* logits) {
  double total = 0.0;
  const float scale = 1.0f / static_cast<float>(count);
  for (int i = 0; i < count; ++i) {
    float* row = logits + static_cast<int64_t>(i) * kNumClasses;
    const float max_logit = *std::max_element(row, row + kNumClasses);
    float sum = 0.0f;
    float exps[kNumClasses];
    for (int c = 0; c < kNumClasses; ++c) {
      exps[c] = std::exp(row[c] - max_logit);
      sum += exps[c];
    }
    const int label = static_cast<int>(labels[i]);
    total += static_cast<double>(std::log(sum)) + max_logit - row[label];
    const float inv_sum = 1.0f / sum;
    for (int c = 0; c < kNumClasses; ++c) row[c] = exps[c] * inv_sum * scale;
    row[label] -= scale;
  }
  return total;
}

// Mean loss per row of logits against labels (no gradient), and the number of argmax hits.
void ScoreLogits(int count, std::span<const int64_t> labels, const float* logits, double* loss_sum,
                 int64_t* correct) {
  for (int i = 0; i < count; ++i) {
    const float* row = logits + static_cast<int64_t>(i) * kNumClasses;
    const float* best = std::max_element(row, row + kNumClasses);
    float sum = 0.0f;
    for (int c = 0; c < kNumClasses; ++c) sum += std::exp(row[c] - *best);
    *loss_sum += static_cast<double>(std::log(sum)) + *best - row[labels[i]];
    if (best - row == labels[i]) ++*correct;
  }
}

// Uniform in [-limit, limit) from the top 24 bits of each draw: a float has a 24-bit significand, and doing
// the mapping ourselves makes the weights identical across standard libraries.
void FillUniform(std::mt19937_64& rng, float limit, std::span<float> out) {
  for (float& value : out) {
    const float unit = static_cast<float>(rng() >> 40) * 0x1.0p-24f;  // [0, 1)
    value = (2.0f * unit - 1.0f) * limit;
  }
}

absl::Status CheckBatch(std::span<const float> images, std::span<const int64_t> labels, int64_t num_parameters,
                        std::span<float> gradients_out) {
  if (images.size() != labels.size() * kImageSize) {
    return absl::InvalidArgumentError(absl::StrCat("ComputeGradients: images has ", images.size(),
                                                   " floats, expected ", labels.size(), " labels x ",
                                                   kImageSize, " = ", labels.size() * kImageSize));
  }
  if (static_cast<int64_t>(gradients_out.size()) != num_parameters) {
    return absl::InvalidArgumentError(absl::StrCat("ComputeGradients: gradients_out has ", gradients_out.size(),
                                                   " floats, the model has ", num_parameters, " parameters"));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= kNumClasses) {
      return absl::InvalidArgumentError(absl::StrCat("ComputeGradients: label ", labels[i], " at index ", i,
                                                     " is outside [0, ", kNumClasses, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int> CheckPredict(std::span<const float> images, std::span<float> logits_out) {
  if (images.size() % kImageSize != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Predict: images has ", images.size(), " floats, not a multiple of ", kImageSize));
  }
  const size_t count = images.size() / kImageSize;
  if (logits_out.size() != count * kNumClasses) {
    return absl::InvalidArgumentError(absl::StrCat("Predict: logits_out has ", logits_out.size(),
                                                   " floats, expected ", count, " x ", kNumClasses));
  }
  return static_cast<int>(count);
}

}  // namespace

// --- SoftmaxRegression ---------------------------------------------------------------------------------------

SoftmaxRegression::SoftmaxRegression(uint64_t seed) : Model(kImageSize * kNumClasses + kNumClasses) {
  std::mt19937_64 rng(seed);
  const float limit = std::sqrt(6.0f / (kImageSize + kNumClasses));
  FillUniform(rng, limit, std::span<float>(parameters_).first(kImageSize * kNumClasses));
}

absl::Status SoftmaxRegression::Predict(std::span<const float> images, std::span<float> logits_out) const {
  absl::StatusOr<int> count = CheckPredict(images, logits_out);
  if (!count.ok()) return count.status();
  const float* w = parameters_.data();
  const float* bias = w + kImageSize * kNumClasses;
  std::fill(logits_out.begin(), logits_out.end(), 0.0f);
  MatMulAdd(*count, kNumClasses, kImageSize, images.data(), kImageSize, 1, w, kNumClasses, logits_out.data(),
            kNumClasses);
  AddBias(*count, kNumClasses, bias, logits_out.data());
  return absl::OkStatus();
}

absl::StatusOr<float> SoftmaxRegression::ComputeGradients(std::span<const float> images,
                                                          std::span<const int64_t> labels,
                                                          std::span<float> gradients_out) const {
  if (absl::Status status = CheckBatch(images, labels, num_parameters(), gradients_out); !status.ok()) {
    return status;
  }
  std::fill(gradients_out.begin(), gradients_out.end(), 0.0f);
  const int count = static_cast<int>(labels.size());
  if (count == 0) return 0.0f;
  std::vector<float> logits(static_cast<size_t>(count) * kNumClasses);
  if (absl::Status status = Predict(images, logits); !status.ok()) return status;
  const double loss_sum = SoftmaxCrossEntropyBackward(count, labels, logits.data());
  float* grad_w = gradients_out.data();
  float* grad_b = grad_w + kImageSize * kNumClasses;
  // dW = X^T dlogits: A(i, p) = X[p][i], i.e. row stride 1 and column stride 784.
  MatMulAdd(kImageSize, kNumClasses, count, images.data(), 1, kImageSize, logits.data(), kNumClasses, grad_w,
            kNumClasses);
  SumRows(count, kNumClasses, logits.data(), grad_b);
  return static_cast<float>(loss_sum / count);
}

// --- Mlp -----------------------------------------------------------------------------------------------------

Mlp::Mlp(uint64_t seed, int hidden_units)
    : Model(static_cast<int64_t>(kImageSize) * std::max(hidden_units, 1) + std::max(hidden_units, 1) +
            static_cast<int64_t>(std::max(hidden_units, 1)) * kNumClasses + kNumClasses),
      hidden_(std::max(hidden_units, 1)) {
  std::mt19937_64 rng(seed);
  std::span<float> params(parameters_);
  const size_t w1_size = static_cast<size_t>(kImageSize) * hidden_;
  const size_t w2_offset = w1_size + hidden_;
  FillUniform(rng, std::sqrt(6.0f / kImageSize), params.first(w1_size));
  FillUniform(rng, std::sqrt(6.0f / static_cast<float>(hidden_ + kNumClasses)),
              params.subspan(w2_offset, static_cast<size_t>(hidden_) * kNumClasses));
}

namespace {

// Forward pass of the MLP up to the logits; `hidden` (count x H) keeps the post-ReLU activations for the
// backward pass.
void MlpForward(int count, int hidden_units, const float* params, const float* images, float* hidden,
                float* logits) {
  const int64_t h = hidden_units;
  const float* w1 = params;
  const float* b1 = w1 + kImageSize * h;
  const float* w2 = b1 + h;
  const float* b2 = w2 + h * kNumClasses;
  std::fill(hidden, hidden + count * h, 0.0f);
  MatMulAdd(count, hidden_units, kImageSize, images, kImageSize, 1, w1, h, hidden, h);
  for (int64_t i = 0; i < count; ++i) {
    float* row = hidden + i * h;
    for (int64_t j = 0; j < h; ++j) row[j] = std::max(row[j] + b1[j], 0.0f);
  }
  std::fill(logits, logits + count * kNumClasses, 0.0f);
  MatMulAdd(count, kNumClasses, hidden_units, hidden, h, 1, w2, kNumClasses, logits, kNumClasses);
  AddBias(count, kNumClasses, b2, logits);
}

}  // namespace

absl::Status Mlp::Predict(std::span<const float> images, std::span<float> logits_out) const {
  absl::StatusOr<int> count = CheckPredict(images, logits_out);
  if (!count.ok()) return count.status();
  std::vector<float> hidden(static_cast<size_t>(*count) * hidden_);
  MlpForward(*count, hidden_, parameters_.data(), images.data(), hidden.data(), logits_out.data());
  return absl::OkStatus();
}

absl::StatusOr<float> Mlp::ComputeGradients(std::span<const float> images, std::span<const int64_t> labels,
                                            std::span<float> gradients_out) const {
  if (absl::Status status = CheckBatch(images, labels, num_parameters(), gradients_out); !status.ok()) {
    return status;
  }
  std::fill(gradients_out.begin(), gradients_out.end(), 0.0f);
  const int count = static_cast<int>(labels.size());
  if (count == 0) return 0.0f;
  const int64_t h = hidden_;
  std::vector<float> hidden(static_cast<size_t>(count) * h);
  std::vector<float> logits(static_cast<size_t>(count) * kNumClasses);
  MlpForward(count, hidden_, parameters_.data(), images.data(), hidden.data(), logits.data());
  const double loss_sum = SoftmaxCrossEntropyBackward(count, labels, logits.data());

  const float* w2 = parameters_.data() + kImageSize * h + h;
  float* grad_w1 = gradients_out.data();
  float* grad_b1 = grad_w1 + kImageSize * h;
  float* grad_w2 = grad_b1 + h;
  float* grad_b2 = grad_w2 + h * kNumClasses;

  // Output layer: dW2 = A^T dlogits, db2 = column sums of dlogits.
  MatMulAdd(hidden_, kNumClasses, count, hidden.data(), 1, h, logits.data(), kNumClasses, grad_w2, kNumClasses);
  SumRows(count, kNumClasses, logits.data(), grad_b2);

  // Hidden layer: dZ1 = (dlogits W2^T) masked by the ReLU (A > 0 exactly where Z1 > 0). Written over the
  // activations, which are not needed any more. K = 10 is too short for the blocked kernel to pay off.
  for (int64_t i = 0; i < count; ++i) {
    const float* d_logits = logits.data() + i * kNumClasses;
    float* row = hidden.data() + i * h;
    for (int64_t j = 0; j < h; ++j) {
      const float* w2_row = w2 + j * kNumClasses;
      float sum = 0.0f;
      for (int c = 0; c < kNumClasses; ++c) sum += d_logits[c] * w2_row[c];
      row[j] = row[j] > 0.0f ? sum : 0.0f;
    }
  }
  // dW1 = X^T dZ1, db1 = column sums of dZ1.
  MatMulAdd(kImageSize, hidden_, count, images.data(), 1, kImageSize, hidden.data(), h, grad_w1, h);
  SumRows(count, hidden_, hidden.data(), grad_b1);
  return static_cast<float>(loss_sum / count);
}

// --- Factories, averaging, optimizers, evaluation -------------------------------------------------------------

absl::StatusOr<std::unique_ptr<Model>> MakeModel(std::string_view name, uint64_t seed) {
  if (name == "softmax") return std::make_unique<SoftmaxRegression>(seed);
  if (name == "mlp") return std::make_unique<Mlp>(seed);
  return absl::InvalidArgumentError(
      absl::StrCat("MakeModel: unknown model '", std::string(name), "' (expected 'softmax' or 'mlp')"));
}

float DefaultLearningRate(const Model& model) {
  return model.name() == "softmax" ? kSoftmaxLearningRate : kMlpLearningRate;
}

float DefaultWeightDecay(const Model& model) {
  return model.name() == "softmax" ? kSoftmaxWeightDecay : kMlpWeightDecay;
}

float CosineLearningRate(float base, int epoch, int num_epochs) {
  if (num_epochs <= 0) return base;
  const double progress = std::clamp(static_cast<double>(epoch) / num_epochs, 0.0, 1.0);
  return static_cast<float>(base * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress)));
}

absl::Status AverageGradients(std::span<const std::span<const float>> per_replica_grads,
                              std::span<const int64_t> per_replica_batch_sizes, std::span<float> out) {
  if (per_replica_grads.size() != per_replica_batch_sizes.size()) {
    return absl::InvalidArgumentError(absl::StrCat("AverageGradients: ", per_replica_grads.size(),
                                                   " gradient vectors but ", per_replica_batch_sizes.size(),
                                                   " batch sizes"));
  }
  int64_t total = 0;
  for (size_t r = 0; r < per_replica_grads.size(); ++r) {
    if (per_replica_batch_sizes[r] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("AverageGradients: replica ", r, " has batch size ",
                                                     per_replica_batch_sizes[r]));
    }
    if (per_replica_grads[r].size() != out.size()) {
      return absl::InvalidArgumentError(absl::StrCat("AverageGradients: replica ", r, " has ",
                                                     per_replica_grads[r].size(), " gradients, out has ",
                                                     out.size()));
    }
    total += per_replica_batch_sizes[r];
  }
  std::fill(out.begin(), out.end(), 0.0f);
  if (total == 0) return absl::OkStatus();
  for (size_t r = 0; r < per_replica_grads.size(); ++r) {
    if (per_replica_batch_sizes[r] == 0) continue;
    const float weight = static_cast<float>(static_cast<double>(per_replica_batch_sizes[r]) / total);
    const float* grads = per_replica_grads[r].data();
    float* dst = out.data();
    const size_t n = out.size();
    for (size_t i = 0; i < n; ++i) dst[i] += weight * grads[i];
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckOptimizerSizes(const char* optimizer, size_t params, size_t grads, size_t state) {
  if (params != grads) {
    return absl::InvalidArgumentError(
        absl::StrCat(optimizer, "::Apply: ", params, " parameters but ", grads, " gradients"));
  }
  if (state != 0 && state != params) {
    return absl::InvalidArgumentError(absl::StrCat(optimizer, "::Apply: state was sized for ", state,
                                                   " parameters, got ", params));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SgdMomentum::Apply(std::span<float> params, std::span<const float> grads) {
  if (absl::Status status = CheckOptimizerSizes("SgdMomentum", params.size(), grads.size(), velocity.size());
      !status.ok()) {
    return status;
  }
  if (velocity.empty()) velocity.assign(params.size(), 0.0f);
  float* p = params.data();
  const float* g = grads.data();
  float* v = velocity.data();
  for (size_t i = 0; i < params.size(); ++i) {
    v[i] = momentum * v[i] + (g[i] + weight_decay * p[i]);
    p[i] -= learning_rate * v[i];
  }
  return absl::OkStatus();
}

absl::Status Adam::Apply(std::span<float> params, std::span<const float> grads) {
  if (absl::Status status = CheckOptimizerSizes("Adam", params.size(), grads.size(), m.size()); !status.ok()) {
    return status;
  }
  if (m.empty()) {
    m.assign(params.size(), 0.0f);
    v.assign(params.size(), 0.0f);
  }
  ++step;
  const float correction1 = 1.0f - static_cast<float>(std::pow(beta1, static_cast<double>(step)));
  const float correction2 = 1.0f - static_cast<float>(std::pow(beta2, static_cast<double>(step)));
  const float step_size = learning_rate / correction1;
  const float inv_sqrt_correction2 = 1.0f / std::sqrt(correction2);
  for (size_t i = 0; i < params.size(); ++i) {
    const float g = grads[i] + weight_decay * params[i];
    m[i] = beta1 * m[i] + (1.0f - beta1) * g;
    v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
    params[i] -= step_size * m[i] / (std::sqrt(v[i]) * inv_sqrt_correction2 + epsilon);
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> Evaluate(const Model& model, std::span<const float> images,
                                    std::span<const int64_t> labels, int batch_size) {
  if (batch_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("Evaluate: batch_size must be positive, got ", batch_size));
  }
  if (images.size() != labels.size() * kImageSize) {
    return absl::InvalidArgumentError(absl::StrCat("Evaluate: images has ", images.size(), " floats, expected ",
                                                   labels.size(), " labels x ", kImageSize));
  }
  for (size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= kNumClasses) {
      return absl::InvalidArgumentError(absl::StrCat("Evaluate: label ", labels[i], " at index ", i,
                                                     " is outside [0, ", kNumClasses, ")"));
    }
  }
  EvalResult result;
  result.examples = static_cast<int64_t>(labels.size());
  if (labels.empty()) return result;
  std::vector<float> logits(static_cast<size_t>(batch_size) * kNumClasses);
  double loss_sum = 0.0;
  int64_t correct = 0;
  for (size_t start = 0; start < labels.size(); start += static_cast<size_t>(batch_size)) {
    const size_t count = std::min(labels.size() - start, static_cast<size_t>(batch_size));
    std::span<float> batch_logits = std::span<float>(logits).first(count * kNumClasses);
    if (absl::Status status = model.Predict(images.subspan(start * kImageSize, count * kImageSize), batch_logits);
        !status.ok()) {
      return status;
    }
    ScoreLogits(static_cast<int>(count), labels.subspan(start, count), batch_logits.data(), &loss_sum, &correct);
  }
  result.accuracy = static_cast<double>(correct) / static_cast<double>(result.examples);
  result.loss = loss_sum / static_cast<double>(result.examples);
  return result;
}

}  // namespace fashion_mnist
