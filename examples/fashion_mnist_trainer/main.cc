// fashion_mnist_trainer: trains a classifier on Fashion-MNIST fed by sluice (see trainer.h).
//
//   build/bin/sluice convert fashion-mnist --out build/data/fashion-mnist
//   build/bin/fashion_mnist_trainer --data-dir=build/data/fashion-mnist --model=mlp --replicas=2
//   build/bin/fashion_mnist_trainer worker --dispatcher HOST:PORT   # a data-service worker for --dispatcher
//
// Flags are --kebab-case, as the sluice command line's, and take `--flag value` or `--flag=value`.
// Exit status: 0 trained, 1 training failed (message on stderr), 2 bad usage.
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "progress.h"
#include "sluice/distribute/service.h"
#include "trainer.h"

int main(int argc, char** argv) {
  // `fashion_mnist_trainer worker --dispatcher HOST:PORT`: a data-service worker that knows the trainer's
  // functions and element type (the stock `sluice worker` does not), with WorkerMain's flags.
  if (argc >= 2 && std::string(argv[1]) == "worker") {
    fashion_mnist::EnsureTrainerRegistrations();
    return sluice::service::WorkerMain(argc - 1, argv + 1);
  }
  fashion_mnist::TrainerConfig config;
  config.interactive = fashion_mnist::IsTerminal(stdout);
  bool nondeterministic = false;

  CLI::App app("Trains a Fashion-MNIST classifier on 2 MirroredStrategy replicas fed by sluice.",
               "fashion_mnist_trainer");
  app.add_option("--data-dir", config.data_dir, "shards written by `sluice convert fashion-mnist --out DIR`")
      ->type_name("DIR")
      ->required();
  app.add_option("--model", config.model, "softmax regression or a 784-256-10 MLP")
      ->capture_default_str()
      ->check(CLI::IsMember({"softmax", "mlp"}));
  app.add_option("--replicas", config.replicas, "MirroredStrategy replicas, one thread each")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--epochs", config.epochs, "passes over the training split")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--batch-size", config.global_batch_size, "global batch size, split across the replicas")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--learning-rate", config.learning_rate,
                 "base learning rate, cosine-decayed per epoch (default: the model's)")
      ->type_name("X");
  app.add_option("--seed", config.seed, "weights, file order and shuffle")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--shuffle-buffer", config.shuffle_buffer, "elements in the shuffle buffer")
      ->type_name("N")
      ->capture_default_str();
  app.add_option("--parallel-calls", config.parallel_calls, "parallel map/interleave calls; -1 = autotune")
      ->type_name("N")
      ->capture_default_str();
  app.add_option(
         "--dispatcher", config.dispatcher,
         "read, parse and decode on data-service workers (start them with `fashion_mnist_trainer worker`)")
      ->type_name("HOST:PORT");
  app.add_flag("--nondeterministic", nondeterministic, "let parallel ops return in completion order");
  app.add_option("--max-steps-per-epoch", config.max_steps_per_epoch,
                 "stop each epoch after N steps (default: whole epochs)")
      ->type_name("N");
  app.add_option("--checkpoint-dir", config.checkpoint_dir,
                 "save the model, the optimizer and the input's position here every --checkpoint-every steps")
      ->type_name("DIR");
  app.add_option("--checkpoint-every", config.checkpoint_every, "steps between checkpoints")
      ->type_name("N")
      ->capture_default_str();
  app.add_flag(
      "--resume", config.resume,
      "continue from --checkpoint-dir's checkpoint, on exactly the batches the uninterrupted run would see");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "fashion_mnist_trainer: " << e.what() << "\n";
    // The flags were --snake_case before they matched the sluice command line's.
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg.starts_with("--") && arg.substr(0, arg.find('=')).find('_') != std::string::npos) {
        std::cerr << "(flags are --kebab-case: " << arg << " is now spelled with '-' for '_')\n";
        break;
      }
    }
    std::cerr << "Run 'fashion_mnist_trainer --help' for usage.\n";
    return 2;
  }
  config.deterministic = !nondeterministic;

  return fashion_mnist::TrainAndReport(config, std::cout, std::cerr);
}
