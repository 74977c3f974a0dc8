// fashion_mnist_trainer: trains a classifier on Fashion-MNIST fed by sluice (see trainer.h).
//
//   build/bin/sluice convert fashion-mnist --out build/data/fashion-mnist
//   build/examples/fashion_mnist_trainer --data_dir=build/data/fashion-mnist --model=mlp --replicas=2
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>

#include "absl/strings/numbers.h"
#include "progress.h"
#include "trainer.h"

namespace {

constexpr const char* kUsage =
    "usage: fashion_mnist_trainer --data_dir=DIR [options]\n"
    "\n"
    "  --data_dir=DIR            shards written by `sluice convert fashion-mnist --out DIR`\n"
    "  --model=softmax|mlp       softmax regression (default) or a 784-256-10 MLP\n"
    "  --replicas=N              MirroredStrategy replicas, one thread each (default 2)\n"
    "  --epochs=N                (default 5)\n"
    "  --batch_size=N            global batch size, split across the replicas (default 256)\n"
    "  --learning_rate=X         base learning rate, cosine-decayed per epoch (default: the model's)\n"
    "  --seed=N                  weights, file order and shuffle (default 42)\n"
    "  --shuffle_buffer=N        (default 10000)\n"
    "  --parallel_calls=N        parallel map/interleave calls; -1 = autotune (default)\n"
    "  --nondeterministic        let parallel ops return in completion order\n"
    "  --max_steps_per_epoch=N   stop each epoch after N steps (default: whole epochs)\n";

bool ParseFlag(std::string_view arg, std::string_view name, std::string_view* value) {
  if (arg.size() <= name.size() + 3 || arg.substr(0, 2) != "--" || arg.substr(2, name.size()) != name ||
      arg[2 + name.size()] != '=') {
    return false;
  }
  *value = arg.substr(3 + name.size());
  return true;
}

template <class Int>
bool ParseInt(std::string_view text, Int* out) {
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::string_view(text.data(), text.size()), &value)) return false;
  *out = static_cast<Int>(value);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  fashion_mnist::TrainerConfig config;
  config.interactive = fashion_mnist::IsTerminal(stdout);
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool ok = true;
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (arg == "--nondeterministic") {
      config.deterministic = false;
    } else if (ParseFlag(arg, "data_dir", &value)) {
      config.data_dir = std::string(value);
    } else if (ParseFlag(arg, "model", &value)) {
      config.model = std::string(value);
    } else if (ParseFlag(arg, "replicas", &value)) {
      ok = ParseInt(value, &config.replicas);
    } else if (ParseFlag(arg, "epochs", &value)) {
      ok = ParseInt(value, &config.epochs);
    } else if (ParseFlag(arg, "batch_size", &value)) {
      ok = ParseInt(value, &config.global_batch_size);
    } else if (ParseFlag(arg, "seed", &value)) {
      ok = ParseInt(value, &config.seed);
    } else if (ParseFlag(arg, "shuffle_buffer", &value)) {
      ok = ParseInt(value, &config.shuffle_buffer);
    } else if (ParseFlag(arg, "parallel_calls", &value)) {
      ok = ParseInt(value, &config.parallel_calls);
    } else if (ParseFlag(arg, "max_steps_per_epoch", &value)) {
      ok = ParseInt(value, &config.max_steps_per_epoch);
    } else if (ParseFlag(arg, "learning_rate", &value)) {
      ok = absl::SimpleAtof(absl::string_view(value.data(), value.size()), &config.learning_rate);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "fashion_mnist_trainer: bad argument '%s'\n\n%s", argv[i], kUsage);
      return 2;
    }
  }
  if (config.data_dir.empty()) {
    std::fprintf(stderr, "fashion_mnist_trainer: --data_dir is required\n\n%s", kUsage);
    return 2;
  }
  absl::StatusOr<fashion_mnist::TrainResult> result = fashion_mnist::Train(config, std::cout);
  if (!result.ok()) {
    std::cerr << "fashion_mnist_trainer: " << result.status() << "\n";
    return 1;
  }
  return 0;
}
