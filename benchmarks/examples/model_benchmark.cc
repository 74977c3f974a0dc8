// Cost of the Fashion-MNIST trainer's model math on one core: forward+backward per global batch, evaluation
// throughput, and the per-step bookkeeping (gradient averaging, optimizer).
#include "examples/fashion_mnist_trainer/model.h"

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include "benchmark/benchmark.h"

namespace fashion_mnist {
namespace {

struct Data {
  std::vector<float> images;
  std::vector<int64_t> labels;
};

// Pixels like Fashion-MNIST's: about half exactly zero (background), the rest in (0, 1]. The kernels do not
// skip zeros, so this only matters for realism of the figures' inputs.
Data MakeData(int count) {
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::uniform_int_distribution<int> label(0, kNumClasses - 1);
  Data data;
  data.images.resize(static_cast<size_t>(count) * kImageSize);
  for (float& value : data.images) {
    const float p = pixel(rng);
    value = p < 0.5f ? 0.0f : p;
  }
  for (int i = 0; i < count; ++i) data.labels.push_back(label(rng));
  return data;
}

void BM_ComputeGradients(benchmark::State& state, const char* name) {
  const int batch = static_cast<int>(state.range(0));
  std::unique_ptr<Model> model = *MakeModel(name, 42);
  Data data = MakeData(batch);
  std::vector<float> grads(static_cast<size_t>(model->num_parameters()));
  for (auto _ : state) {
    absl::StatusOr<float> loss = model->ComputeGradients(data.images, data.labels, grads);
    benchmark::DoNotOptimize(loss);
    benchmark::DoNotOptimize(grads.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.SetLabel("items = images");
}
BENCHMARK_CAPTURE(BM_ComputeGradients, softmax, "softmax")->Arg(256)->Arg(32)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ComputeGradients, mlp, "mlp")->Arg(256)->Arg(32)->Unit(benchmark::kMillisecond);

// Evaluation over a 2,560-image slice (a quarter of the test set) in batches of 256.
void BM_Evaluate(benchmark::State& state, const char* name) {
  constexpr int kImages = 2560;
  std::unique_ptr<Model> model = *MakeModel(name, 42);
  Data data = MakeData(kImages);
  for (auto _ : state) {
    absl::StatusOr<EvalResult> result = Evaluate(*model, data.images, data.labels, kDefaultBatchSize);
    benchmark::DoNotOptimize(result);
  }
  state.SetItemsProcessed(state.iterations() * kImages);
  state.SetLabel("items = images");
}
BENCHMARK_CAPTURE(BM_Evaluate, softmax, "softmax")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Evaluate, mlp, "mlp")->Unit(benchmark::kMillisecond);

// Per-step bookkeeping for the MLP's 203,530 parameters: averaging `replicas` gradients, then SGD.
void BM_AverageGradientsAndSgd(benchmark::State& state) {
  const int replicas = static_cast<int>(state.range(0));
  Mlp model(42);
  const size_t n = static_cast<size_t>(model.num_parameters());
  std::vector<std::vector<float>> grads(static_cast<size_t>(replicas), std::vector<float>(n, 0.001f));
  std::vector<std::span<const float>> views(grads.begin(), grads.end());
  std::vector<int64_t> sizes(static_cast<size_t>(replicas), kDefaultBatchSize / replicas);
  std::vector<float> averaged(n);
  SgdMomentum sgd{.learning_rate = 0.01f, .momentum = 0.9f, .weight_decay = kMlpWeightDecay};
  for (auto _ : state) {
    benchmark::DoNotOptimize(AverageGradients(views, sizes, averaged));
    benchmark::DoNotOptimize(sgd.Apply(model.parameters(), averaged));
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel("items = steps");
}
BENCHMARK(BM_AverageGradientsAndSgd)->Arg(1)->Arg(4)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fashion_mnist

BENCHMARK_MAIN();
