#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "examples/fashion_mnist_trainer/model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace fashion_mnist {
namespace fashion_mnist_model_test_file {
namespace {

using ::testing::HasSubstr;

struct Batch {
  std::vector<float> images;
  std::vector<int64_t> labels;
};

Batch RandomBatch(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int> label(0, kNumClasses - 1);
  Batch batch;
  batch.images.resize(static_cast<size_t>(count) * kImageSize);
  for (float& value : batch.images) value = pixel(rng);
  for (int i = 0; i < count; ++i) batch.labels.push_back(label(rng));
  return batch;
}

// Ten random prototypes; each example is its class's prototype plus noise, so the classes are separable.
Batch SeparableBatch(int count, uint64_t seed) {
  std::mt19937_64 prototype_rng(7);
  std::bernoulli_distribution on(0.3);
  std::vector<float> prototypes(static_cast<size_t>(kNumClasses) * kImageSize);
  for (float& value : prototypes) value = on(prototype_rng) ? 1.0f : 0.0f;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::uniform_int_distribution<int> label(0, kNumClasses - 1);
  Batch batch;
  for (int i = 0; i < count; ++i) {
    const int y = label(rng);
    batch.labels.push_back(y);
    for (int p = 0; p < kImageSize; ++p) batch.images.push_back(prototypes[y * kImageSize + p] + noise(rng));
  }
  return batch;
}

// Mean cross-entropy with the softmax evaluated in double, for finite differences.
double LossInDouble(const Model& model, const Batch& batch) {
  std::vector<float> logits(batch.labels.size() * kNumClasses);
  EXPECT_TRUE(model.Predict(batch.images, logits).ok());
  double total = 0.0;
  for (size_t i = 0; i < batch.labels.size(); ++i) {
    const float* row = &logits[i * kNumClasses];
    const double max_logit = *std::max_element(row, row + kNumClasses);
    double sum = 0.0;
    for (int c = 0; c < kNumClasses; ++c) sum += std::exp(row[c] - max_logit);
    total += std::log(sum) + max_logit - row[batch.labels[i]];
  }
  return total / static_cast<double>(batch.labels.size());
}

// Central differences on `coordinates` random parameters. The step (3e-3) is a compromise: the forward pass is
// float, so much smaller steps drown in rounding (~1e-7 * loss / step), while 1e-2 made one seed straddle a
// ReLU kink (a hidden pre-activation of 0.003). Relative tolerance 1e-2 plus an absolute floor for rounding.
void ExpectGradientsMatchFiniteDifferences(Model& model, const Batch& batch, int coordinates, uint64_t seed) {
  std::vector<float> grads(static_cast<size_t>(model.num_parameters()));
  absl::StatusOr<float> loss = model.ComputeGradients(batch.images, batch.labels, grads);
  ASSERT_TRUE(loss.ok()) << loss.status();
  EXPECT_NEAR(*loss, LossInDouble(model, batch), 1e-4);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, model.num_parameters() - 1);
  std::span<float> params = model.parameters();
  constexpr float kStep = 3e-3f;
  for (int n = 0; n < coordinates; ++n) {
    // The last parameters are the output bias: always include a few of them, they must be exact.
    const int64_t index = n < 3 ? model.num_parameters() - 1 - n : pick(rng);
    const float saved = params[index];
    params[index] = saved + kStep;
    const double plus = LossInDouble(model, batch);
    params[index] = saved - kStep;
    const double minus = LossInDouble(model, batch);
    params[index] = saved;
    const double numeric = (plus - minus) / (2.0 * kStep);
    const double analytic = grads[index];
    EXPECT_NEAR(analytic, numeric, 1e-2 * std::max(std::abs(numeric), std::abs(analytic)) + 2e-4)
        << model.name() << " parameter " << index;
  }
}

TEST(FashionMnistModelTest, SoftmaxGradientsMatchFiniteDifferences) {
  SoftmaxRegression model(/*seed=*/1);
  ExpectGradientsMatchFiniteDifferences(model, RandomBatch(3, 11), 40, 5);
}

TEST(FashionMnistModelTest, MlpGradientsMatchFiniteDifferences) {
  Mlp model(/*seed=*/2, /*hidden_units=*/20);  // 20: one full 16-column block plus a tail of 4
  ExpectGradientsMatchFiniteDifferences(model, RandomBatch(5, 12), 60, 6);
}

TEST(FashionMnistModelTest, DefaultMlpGradientsMatchFiniteDifferences) {
  Mlp model(/*seed=*/3);
  EXPECT_EQ(model.hidden_units(), kDefaultHiddenUnits);
  EXPECT_EQ(model.num_parameters(), 784 * 256 + 256 + 256 * 10 + 10);
  ExpectGradientsMatchFiniteDifferences(model, RandomBatch(4, 13), 30, 7);
}

TEST(FashionMnistModelTest, BatchedPredictEqualsPerImagePredict) {
  // Batch 7 and hidden 37 exercise the kernel's row and column tails against single-row calls.
  Mlp model(/*seed=*/4, /*hidden_units=*/37);
  Batch batch = RandomBatch(7, 14);
  std::vector<float> logits(7 * kNumClasses);
  ASSERT_TRUE(model.Predict(batch.images, logits).ok());
  for (int i = 0; i < 7; ++i) {
    std::vector<float> one(kNumClasses);
    ASSERT_TRUE(model.Predict(std::span<const float>(batch.images).subspan(i * kImageSize, kImageSize), one).ok());
    for (int c = 0; c < kNumClasses; ++c) EXPECT_NEAR(one[c], logits[i * kNumClasses + c], 1e-4) << i << "," << c;
  }
}

template <class M>
void ExpectLearnsSeparableData(M& model, float learning_rate) {
  Batch test = SeparableBatch(200, 999);
  absl::StatusOr<EvalResult> before = Evaluate(model, test.images, test.labels, 64);
  ASSERT_TRUE(before.ok());
  SgdMomentum sgd{.learning_rate = learning_rate, .momentum = 0.9f};
  std::vector<float> grads(static_cast<size_t>(model.num_parameters()));
  float first_loss = 0.0f;
  float last_loss = 0.0f;
  for (int step = 0; step < 150; ++step) {
    Batch batch = SeparableBatch(32, 1000 + step);
    absl::StatusOr<float> loss = model.ComputeGradients(batch.images, batch.labels, grads);
    ASSERT_TRUE(loss.ok()) << loss.status();
    ASSERT_TRUE(std::isfinite(*loss)) << "step " << step;
    if (step == 0) first_loss = *loss;
    last_loss = *loss;
    ASSERT_TRUE(sgd.Apply(model.parameters(), grads).ok());
  }
  EXPECT_LT(last_loss, 0.25f * first_loss);
  absl::StatusOr<EvalResult> after = Evaluate(model, test.images, test.labels, 64);
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->accuracy, 0.9);  // chance is 0.1
  EXPECT_LT(after->loss, before->loss);
  EXPECT_EQ(after->examples, 200);
}

TEST(FashionMnistModelTest, SoftmaxLearnsSeparableData) {
  SoftmaxRegression model(/*seed=*/5);
  ExpectLearnsSeparableData(model, 0.01f);
}

TEST(FashionMnistModelTest, MlpLearnsSeparableData) {
  Mlp model(/*seed=*/6, /*hidden_units=*/32);
  ExpectLearnsSeparableData(model, 0.01f);
}

std::vector<float> LossSequence(Model& model, int steps) {
  SgdMomentum sgd{.learning_rate = 0.05f, .momentum = 0.9f, .weight_decay = 1e-4f};
  std::vector<float> grads(static_cast<size_t>(model.num_parameters()));
  std::vector<float> losses;
  for (int step = 0; step < steps; ++step) {
    Batch batch = RandomBatch(16, 100 + step);
    absl::StatusOr<float> loss = model.ComputeGradients(batch.images, batch.labels, grads);
    EXPECT_TRUE(loss.ok());
    losses.push_back(loss.value_or(-1.0f));
    EXPECT_TRUE(sgd.Apply(model.parameters(), grads).ok());
  }
  return losses;
}

bool BitwiseEqual(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(FashionMnistModelTest, SameSeedSameWeightsAndLosses) {
  for (const char* name : {"softmax", "mlp"}) {
    std::unique_ptr<Model> a = *MakeModel(name, 42);
    std::unique_ptr<Model> b = *MakeModel(name, 42);
    std::unique_ptr<Model> c = *MakeModel(name, 43);
    EXPECT_TRUE(BitwiseEqual(a->parameters(), b->parameters())) << name;
    EXPECT_FALSE(BitwiseEqual(a->parameters(), c->parameters())) << name;
    // Initial weights are bounded by the Glorot/He limit and not all zero.
    const float max_abs = std::abs(*std::max_element(a->parameters().begin(), a->parameters().end(),
                                                     [](float x, float y) { return std::abs(x) < std::abs(y); }));
    EXPECT_GT(max_abs, 0.01f) << name;
    // Largest Glorot/He limit of either layer: W2's sqrt(6 / (256 + 10)) for the MLP.
    EXPECT_LE(max_abs, std::max(std::sqrt(6.0f / kImageSize), std::sqrt(6.0f / (kDefaultHiddenUnits + kNumClasses))))
        << name;
    const std::vector<float> losses_a = LossSequence(*a, 5);
    const std::vector<float> losses_b = LossSequence(*b, 5);
    EXPECT_TRUE(BitwiseEqual(losses_a, losses_b)) << name;
    EXPECT_TRUE(BitwiseEqual(a->parameters(), b->parameters())) << name;
  }
}

TEST(FashionMnistModelTest, EmptyBatchGivesZeroGradientsAndZeroLoss) {
  for (const char* name : {"softmax", "mlp"}) {
    std::unique_ptr<Model> model = *MakeModel(name, 1);
    std::vector<float> grads(static_cast<size_t>(model->num_parameters()), std::nanf(""));
    absl::StatusOr<float> loss = model->ComputeGradients({}, {}, grads);
    ASSERT_TRUE(loss.ok()) << loss.status();
    EXPECT_EQ(*loss, 0.0f);
    EXPECT_TRUE(std::all_of(grads.begin(), grads.end(), [](float g) { return g == 0.0f; })) << name;
    EXPECT_TRUE(model->Predict({}, {}).ok());
  }
}

TEST(FashionMnistModelTest, AverageGradientsWeightsReplicasByBatchSize) {
  Mlp model(/*seed=*/8, /*hidden_units=*/24);
  Batch whole = RandomBatch(8, 21);
  std::vector<float> whole_grads(static_cast<size_t>(model.num_parameters()));
  ASSERT_TRUE(model.ComputeGradients(whole.images, whole.labels, whole_grads).ok());

  const std::vector<int64_t> sizes = {3, 3, 2, 0};
  std::vector<std::vector<float>> replica_grads;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    replica_grads.emplace_back(static_cast<size_t>(model.num_parameters()));
    std::span<const float> images =
        std::span<const float>(whole.images).subspan(offset * kImageSize, size * kImageSize);
    std::span<const int64_t> labels = std::span<const int64_t>(whole.labels).subspan(offset, size);
    ASSERT_TRUE(model.ComputeGradients(images, labels, replica_grads.back()).ok());
    offset += size;
  }
  std::vector<std::span<const float>> views(replica_grads.begin(), replica_grads.end());
  std::vector<float> averaged(static_cast<size_t>(model.num_parameters()));
  ASSERT_TRUE(AverageGradients(views, sizes, averaged).ok());
  float max_abs = 0.0f;
  for (float g : whole_grads) max_abs = std::max(max_abs, std::abs(g));
  for (size_t i = 0; i < averaged.size(); ++i) {
    ASSERT_NEAR(averaged[i], whole_grads[i], 1e-5f * max_abs + 1e-7f) << "parameter " << i;
  }
  // An unweighted mean over the three non-empty replicas would differ: the check above is not vacuous.
  double unweighted_error = 0.0;
  for (size_t i = 0; i < averaged.size(); ++i) {
    const float mean = (replica_grads[0][i] + replica_grads[1][i] + replica_grads[2][i]) / 3.0f;
    unweighted_error = std::max(unweighted_error, static_cast<double>(std::abs(mean - whole_grads[i])));
  }
  EXPECT_GT(unweighted_error, 1e-4 * max_abs);
}

TEST(FashionMnistModelTest, AverageGradientsEdgeCasesAndErrors) {
  std::vector<float> a = {1.0f, 2.0f};
  std::vector<float> b = {3.0f, 6.0f};
  std::vector<float> nan_grads = {std::nanf(""), std::nanf("")};
  std::vector<std::span<const float>> views = {a, b, nan_grads};
  std::vector<float> out(2, 9.0f);
  // The empty replica's gradients are never read, even if they are garbage.
  ASSERT_TRUE(AverageGradients(views, std::vector<int64_t>{1, 3, 0}, out).ok());
  EXPECT_FLOAT_EQ(out[0], 2.5f);
  EXPECT_FLOAT_EQ(out[1], 5.0f);
  // All replicas empty: zeros.
  ASSERT_TRUE(AverageGradients(views, std::vector<int64_t>{0, 0, 0}, out).ok());
  EXPECT_EQ(out, (std::vector<float>{0.0f, 0.0f}));
  // No replicas at all: zeros too.
  ASSERT_TRUE(AverageGradients({}, {}, out).ok());

  absl::Status count_mismatch = AverageGradients(views, std::vector<int64_t>{1, 1}, out);
  EXPECT_EQ(count_mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(count_mismatch.message(), HasSubstr("3 gradient vectors but 2 batch sizes"));
  absl::Status negative = AverageGradients(views, std::vector<int64_t>{1, -1, 0}, out);
  EXPECT_THAT(negative.message(), HasSubstr("replica 1 has batch size -1"));
  std::vector<float> short_out(1);
  absl::Status length = AverageGradients(views, std::vector<int64_t>{1, 1, 1}, short_out);
  EXPECT_EQ(length.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(length.message(), HasSubstr("replica 0 has 2 gradients, out has 1"));
}

TEST(FashionMnistModelTest, SgdMomentumStep) {
  SgdMomentum sgd{.learning_rate = 0.1f, .momentum = 0.5f, .weight_decay = 0.0f};
  std::vector<float> params = {1.0f, -2.0f};
  const std::vector<float> grads = {1.0f, 2.0f};
  ASSERT_TRUE(sgd.Apply(params, grads).ok());
  EXPECT_FLOAT_EQ(params[0], 0.9f);   // v = 1
  EXPECT_FLOAT_EQ(params[1], -2.2f);  // v = 2
  ASSERT_TRUE(sgd.Apply(params, grads).ok());
  EXPECT_FLOAT_EQ(params[0], 0.75f);  // v = 0.5 * 1 + 1 = 1.5
  EXPECT_FLOAT_EQ(params[1], -2.5f);  // v = 0.5 * 2 + 2 = 3

  SgdMomentum decay{.learning_rate = 0.5f, .momentum = 0.0f, .weight_decay = 0.1f};
  std::vector<float> p = {2.0f};
  ASSERT_TRUE(decay.Apply(p, std::vector<float>{0.0f}).ok());
  EXPECT_FLOAT_EQ(p[0], 1.9f);  // p -= 0.5 * (0 + 0.1 * 2)

  absl::Status mismatch = sgd.Apply(params, std::vector<float>{1.0f});
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.message(), HasSubstr("2 parameters but 1 gradients"));
  std::vector<float> three(3);
  absl::Status resized = sgd.Apply(three, std::vector<float>(3));
  EXPECT_THAT(resized.message(), HasSubstr("state was sized for 2 parameters, got 3"));
}

TEST(FashionMnistModelTest, AdamStep) {
  Adam adam{.learning_rate = 0.01f};
  std::vector<float> params = {1.0f, 1.0f, 1.0f};
  const std::vector<float> grads = {0.5f, -100.0f, 0.0f};
  ASSERT_TRUE(adam.Apply(params, grads).ok());
  // With bias correction the first step moves each parameter by lr * sign(g), whatever |g|.
  EXPECT_NEAR(params[0], 0.99f, 1e-5f);
  EXPECT_NEAR(params[1], 1.01f, 1e-5f);
  EXPECT_FLOAT_EQ(params[2], 1.0f);
  EXPECT_EQ(adam.step, 1);
  EXPECT_FALSE(adam.Apply(params, std::vector<float>(2)).ok());
}

TEST(FashionMnistModelTest, BadInputsAreInvalidArgument) {
  SoftmaxRegression softmax(/*seed=*/1);
  Mlp mlp(/*seed=*/1, /*hidden_units=*/8);
  Batch batch = RandomBatch(2, 3);
  for (Model* model : {static_cast<Model*>(&softmax), static_cast<Model*>(&mlp)}) {
    std::vector<float> grads(static_cast<size_t>(model->num_parameters()));
    std::vector<int64_t> bad_labels = {3, 10};
    absl::StatusOr<float> label = model->ComputeGradients(batch.images, bad_labels, grads);
    EXPECT_EQ(label.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(label.status().message(), HasSubstr("label 10 at index 1"));
    bad_labels[1] = -1;
    EXPECT_FALSE(model->ComputeGradients(batch.images, bad_labels, grads).ok());

    absl::StatusOr<float> images =
        model->ComputeGradients(std::span<const float>(batch.images).first(kImageSize), batch.labels, grads);
    EXPECT_THAT(images.status().message(), HasSubstr("images has 784 floats, expected 2 labels"));

    std::vector<float> short_grads(3);
    absl::StatusOr<float> grads_size = model->ComputeGradients(batch.images, batch.labels, short_grads);
    EXPECT_THAT(grads_size.status().message(), HasSubstr("gradients_out has 3 floats"));

    std::vector<float> logits(2 * kNumClasses);
    EXPECT_THAT(model->Predict(std::span<const float>(batch.images).first(100), logits).message(),
                HasSubstr("not a multiple of 784"));
    EXPECT_THAT(model->Predict(batch.images, std::span<float>(logits).first(5)).message(),
                HasSubstr("logits_out has 5 floats"));

    EXPECT_FALSE(Evaluate(*model, batch.images, batch.labels, 0).ok());
    EXPECT_FALSE(Evaluate(*model, batch.images, std::vector<int64_t>{1}, 4).ok());
    EXPECT_FALSE(Evaluate(*model, batch.images, std::vector<int64_t>{1, 11}, 4).ok());
  }
  absl::StatusOr<std::unique_ptr<Model>> unknown = MakeModel("cnn", 1);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("unknown model 'cnn'"));
}

TEST(FashionMnistModelTest, EvaluateComputesAccuracyAndLoss) {
  // Zero weights and a bias that favours class 3 by log(9): p(3) = 0.5, every other class 1/18.
  SoftmaxRegression model(/*seed=*/1);
  std::span<float> params = model.parameters();
  std::fill(params.begin(), params.end(), 0.0f);
  params[kImageSize * kNumClasses + 3] = std::log(9.0f);
  Batch batch = RandomBatch(10, 4);
  for (int i = 0; i < 10; ++i) batch.labels[i] = i < 4 ? 3 : 5;
  for (int batch_size : {1, 3, 256}) {
    absl::StatusOr<EvalResult> result = Evaluate(model, batch.images, batch.labels, batch_size);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->examples, 10);
    EXPECT_DOUBLE_EQ(result->accuracy, 0.4);
    EXPECT_NEAR(result->loss, (4 * std::log(2.0) + 6 * std::log(18.0)) / 10.0, 1e-5);
  }
  absl::StatusOr<EvalResult> empty = Evaluate(model, {}, {}, 8);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->examples, 0);
  EXPECT_EQ(empty->accuracy, 0.0);
}

TEST(FashionMnistModelTest, LossIsStableForHugeLogits) {
  SoftmaxRegression model(/*seed=*/1);
  std::span<float> params = model.parameters();
  std::fill(params.begin(), params.end(), 0.0f);
  params[kImageSize * kNumClasses + 0] = 1e4f;  // exp(1e4) overflows float; log-sum-exp must not
  Batch batch = RandomBatch(2, 5);
  batch.labels = {0, 1};
  std::vector<float> grads(static_cast<size_t>(model.num_parameters()));
  absl::StatusOr<float> loss = model.ComputeGradients(batch.images, batch.labels, grads);
  ASSERT_TRUE(loss.ok());
  EXPECT_NEAR(*loss, 1e4f / 2.0f, 1.0f);  // label 1 costs 1e4, label 0 costs ~0
  EXPECT_TRUE(std::all_of(grads.begin(), grads.end(), [](float g) { return std::isfinite(g); }));
  // d loss / d bias_0 = mean(p0 - onehot0) = (0 + 1) / 2; d bias_1 = (0 + (0 - 1)) / 2.
  EXPECT_NEAR(grads[kImageSize * kNumClasses + 0], 0.5f, 1e-6f);
  EXPECT_NEAR(grads[kImageSize * kNumClasses + 1], -0.5f, 1e-6f);
}

TEST(FashionMnistModelTest, ConcurrentReplicasGetTheSameGradientsAsOneThread) {
  // Replica threads share one model between optimizer steps; per-call scratch keeps them independent.
  Mlp model(/*seed=*/9, /*hidden_units=*/16);
  constexpr int kThreads = 3;
  constexpr int kIterations = 10;
  std::vector<Batch> batches;
  std::vector<std::vector<float>> expected;
  for (int t = 0; t < kThreads; ++t) {
    batches.push_back(RandomBatch(6, 300 + t));
    expected.emplace_back(static_cast<size_t>(model.num_parameters()));
    ASSERT_TRUE(model.ComputeGradients(batches[t].images, batches[t].labels, expected[t]).ok());
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&model, &batches, &expected, &mismatches, t] {
      std::vector<float> grads(static_cast<size_t>(model.num_parameters()));
      for (int i = 0; i < kIterations; ++i) {
        if (!model.ComputeGradients(batches[t].images, batches[t].labels, grads).ok() ||
            !BitwiseEqual(grads, expected[t])) {
          ++mismatches[t];
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(kThreads, 0));
}

TEST(FashionMnistModelTest, Defaults) {
  EXPECT_EQ(DefaultLearningRate(SoftmaxRegression(1)), kSoftmaxLearningRate);
  EXPECT_EQ(DefaultLearningRate(Mlp(1, 4)), kMlpLearningRate);
  EXPECT_EQ(DefaultWeightDecay(SoftmaxRegression(1)), kSoftmaxWeightDecay);
  EXPECT_EQ(DefaultWeightDecay(Mlp(1, 4)), kMlpWeightDecay);
  EXPECT_FLOAT_EQ(StandardizePixel(0), -kPixelMean / kPixelStd);
  EXPECT_FLOAT_EQ(StandardizePixel(255), (1.0f - kPixelMean) / kPixelStd);
  std::string every_byte(256, '\0');
  for (int b = 0; b < 256; ++b) every_byte[static_cast<size_t>(b)] = static_cast<char>(b);
  std::vector<float> image(every_byte.size());
  StandardizeImage(every_byte, image.data());
  for (int b = 0; b < 256; ++b)
    EXPECT_EQ(image[static_cast<size_t>(b)], StandardizePixel(static_cast<uint8_t>(b))) << b;
  EXPECT_FLOAT_EQ(CosineLearningRate(0.1f, 0, 5), 0.1f);
  EXPECT_FLOAT_EQ(CosineLearningRate(0.1f, 5, 10), 0.05f);
  EXPECT_NEAR(CosineLearningRate(0.1f, 10, 10), 0.0f, 1e-9f);
  EXPECT_LT(CosineLearningRate(0.1f, 4, 5), CosineLearningRate(0.1f, 3, 5));
  EXPECT_FLOAT_EQ(CosineLearningRate(0.1f, 3, 0), 0.1f);
  EXPECT_EQ((*MakeModel("mlp", 1))->name(), "mlp");
  EXPECT_EQ((*MakeModel("softmax", 1))->name(), "softmax");
}

}  // namespace
}  // namespace fashion_mnist_model_test_file
}  // namespace fashion_mnist
