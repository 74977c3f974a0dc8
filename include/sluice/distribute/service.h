// The data service (docs/service.md): a dispatcher and worker processes run the part of a pipeline
// before Distribute(...), and the trainer receives ready elements over TCP, as tf.data service does.
//
//   // elsewhere: `sluice dispatcher --port 5050` and `sluice worker --dispatcher host:5050`, or the
//   // embeddable servers below
//   sluice::service::ServiceOptions options;
//   options.processing_mode = sluice::service::ProcessingMode::kDistributedEpoch;
//   options.dispatcher_address = "host:5050";
//   options.job_name = "train";
//   Dataset<int64_t> ds = Range(5).Map(kSquare).Distribute(options).Map(plus_one);  // 1 2 5 10 17
//
// Contract of Distribute (a source op like any other: Map, Prefetch, Batch after it work unchanged):
// - The pipeline must serialize (sluice/ops/graph.h): a lambda, an unnamed type or values without a
//   codec make the dataset's one element the FailedPrecondition naming the op and its path. T needs an
//   ElementCodec.
// - Each pass over the dataset (an iterator's first pass, each epoch of a Repeat after Distribute; a
//   DistributedDataset's epoch k) is pass k of this consumer and reads iteration k of the job. Without
//   a job_name each iterator has a job of its own; with one, every consumer naming it shares the job:
//   together they see each element of iteration k once (first come, first served). An iteration that
//   already finished ends at once. Reusing a name with another mode, element type or dataset is
//   InvalidArgument naming both.
// - Leaving: a pass that ends early (its iterator destroyed) says goodbye to the dispatcher; one that
//   goes silent is dropped after DispatcherConfig::client_timeout_ms. When the last consumer of an
//   unfinished iteration has left, the iteration is cancelled: its workers stop its tasks and drop their
//   buffered elements, and a consumer that joins it later starts it from the beginning.
// - parallel_epochs: every worker runs the whole pipeline, so each element comes once per worker.
//   distributed_epoch: the dispatcher hands out splits of the pipeline's one splittable source (a Range
//   or FromVector chunk, one file of ListFiles/TFRecord/TextLines/FixedLengthRecords) and each element
//   comes exactly once when nothing fails; a pipeline with no or several splittable sources is refused
//   naming them. Element order across workers is not defined.
// - Flow control: at most max_outstanding_requests elements are buffered here or requested from
//   workers, per consumer.
// - Errors: a worker's error element arrives as an error element; a job that fails (a worker lacks a
//   registration) or an unreachable dispatcher is an error element, then the end. A worker that cannot
//   be reached is an Unavailable error element; its task's elements are lost.
// - Destroying the iterator stops its requests and joins its network thread.
#ifndef SLUICE_DISTRIBUTE_SERVICE_H_
#define SLUICE_DISTRIBUTE_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "sluice/distribute/auto_shard.h"
#include "sluice/distribute/service_mode.h"
#include "sluice/engine/task.h"
#include "sluice/export.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/element_codec.h"
#include "sluice/ops/error_source.h"
#include "sluice/ops/graph.h"
#include "sluice/ops/op_node.h"
#include "sluice/ops/stream.h"

namespace sluice::service {

// What a consumer saw, for tests and monitoring. Updated by the consumer's network thread.
struct ServiceClientStats {
  std::atomic<int64_t> max_outstanding{0};  // the most elements ever buffered plus requested at once
  std::atomic<int64_t> requests{0};         // GetElements calls made
  std::atomic<int64_t> elements{0};         // elements received
};

struct ServiceOptions {
  ProcessingMode processing_mode = ProcessingMode::kParallelEpochs;
  std::string dispatcher_address;  // "host:port"
  std::string job_name;            // "" = a job of this consumer's own
  int64_t max_outstanding_requests = 64;
  uint64_t max_request_bytes = uint64_t{16} << 20;  // per GetElements answer (one element may exceed it)
  // While the dispatcher is unreachable (restarting), the consumer keeps reading from the workers it knows
  // and reconnects; after this long without it, the pass fails with Unavailable.
  int64_t dispatcher_timeout_ms = 60000;
  std::shared_ptr<ServiceClientStats> stats;  // optional
};

// ---- Servers, embeddable: one binary may run a dispatcher, workers and trainers. ----

struct DispatcherConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 0;  // 0: a free port
  // A worker silent this long is dropped and its unfinished tasks end (their elements are lost).
  int64_t worker_timeout_ms = 10000;
  // A consumer silent this long has left its job (a consumer heartbeats every 200 ms while it reads, and
  // says goodbye when its iterator goes). An unfinished iteration whose consumers all left is cancelled:
  // its workers stop its tasks and drop their elements, and a later consumer of it starts it afresh.
  int64_t client_timeout_ms = 60000;
  // Where the dispatcher journals its state (jobs, iterations, tasks, splits handed out, workers), so that
  // a dispatcher restarted with the same folder and port continues them: workers and consumers reconnect,
  // and no split is handed out twice. "": no journal, a restart forgets every job. One dispatcher per
  // folder.
  std::string work_dir;
  std::function<void(const std::string&)> log;  // one line per notable event; nullptr: quiet
};

class SLUICE_EXPORT DispatcherServer {
 public:
  // Binds and starts serving. Unavailable naming the address when it cannot listen.
  static absl::StatusOr<std::unique_ptr<DispatcherServer>> Start(DispatcherConfig config);
  DispatcherServer(const DispatcherServer&) = delete;
  DispatcherServer& operator=(const DispatcherServer&) = delete;
  ~DispatcherServer();
  std::string address() const;  // "host:port", the port bound
  // Stops serving, with clients connected or not. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit DispatcherServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct WorkerConfig {
  std::string dispatcher_address;  // "host:port"
  // Where the worker listens, and the host it gives the dispatcher for clients to reach it at.
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int threads = 2;  // the worker's pool, divided among its running tasks' autotuners (docs/service.md)
  int64_t max_buffered_elements = 1024;            // per task
  int64_t max_buffered_bytes = int64_t{64} << 20;  // per task (one element may exceed it)
  int64_t heartbeat_interval_ms = 100;
  // A lost dispatcher is reconnected to; after this long without it, the worker's tasks waiting for a
  // split fail with Unavailable (tasks with splits in hand, and parallel_epochs tasks, run on).
  int64_t dispatcher_timeout_ms = 60000;
  std::function<void(const std::string&)> log;
};

class SLUICE_EXPORT WorkerServer {
 public:
  // Binds, registers with the dispatcher and starts serving. Unavailable when it cannot listen or reach
  // the dispatcher.
  static absl::StatusOr<std::unique_ptr<WorkerServer>> Start(WorkerConfig config);
  WorkerServer(const WorkerServer&) = delete;
  WorkerServer& operator=(const WorkerServer&) = delete;
  ~WorkerServer();
  std::string address() const;
  // Stops its tasks and its server, with clients connected or not. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit WorkerServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The worker as a program, for a user's own binary that links its registrations:
//   int main(int argc, char** argv) { return sluice::service::WorkerMain(argc, argv); }
// Flags: --dispatcher HOST:PORT (required), --port P (0), --threads N (2), --host H (127.0.0.1),
// --dispatcher-timeout-ms MS (60000). Prints "listening on HOST:PORT", logs events on stderr, runs until
// SIGTERM or SIGINT; exit 0, 1 when it cannot start, 2 on bad flags.
SLUICE_EXPORT int WorkerMain(int argc, char** argv);

// ---- Multi-worker trainers in separate processes ----

// A WorkerAgreement (sluice/distribute/auto_shard.h) served by the dispatcher, for MirroredStrategy
// trainers that are separate processes (InProcessWorkerAgreement serves threads of one process). Every
// trainer connects with the same `name` and `num_workers`; each step's round is one request the
// dispatcher answers when all workers arrived, so all replicas of all trainers see the end of the data
// together. A trainer destroying its iterator mid-epoch abandons the epoch for the others (their rounds
// fail with Cancelled); an unreachable dispatcher fails the round with Unavailable.
//
//   auto agreement = ServiceWorkerAgreement::Connect("host:5050", "job-42", /*num_workers=*/2);
//   MirroredStrategy strategy(/*replicas_per_worker=*/2, /*num_workers=*/2, worker_index, *agreement);
class SLUICE_EXPORT ServiceWorkerAgreement final : public WorkerAgreement {
 public:
  static absl::StatusOr<std::shared_ptr<ServiceWorkerAgreement>> Connect(const std::string& dispatcher_address,
                                                                         std::string name, int num_workers);
  ServiceWorkerAgreement(const ServiceWorkerAgreement&) = delete;
  ServiceWorkerAgreement& operator=(const ServiceWorkerAgreement&) = delete;
  ~ServiceWorkerAgreement() override;

  // Counts this process's iterators per worker, as every trainer does in the same order.
  int64_t BeginEpoch(int worker) override;
  Task<absl::StatusOr<bool>> AnyWorkerHasData(int worker, int64_t epoch, int64_t step, bool mine) override;
  // Sent without waiting for the answer (it may be called from a destructor on a pool thread).
  void Abandon(int worker, int64_t epoch) override;

  struct Impl;

 private:
  explicit ServiceWorkerAgreement(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

// ---- The client op ----

namespace detail {

// One consumer pass over a job: the network side of Distribute's stream (pimpl: Asio stays in .cc).
class SLUICE_EXPORT ServiceReader {
 public:
  // Starts the network thread: joins iteration `iteration` of the job (`anonymous_job`, when set, holds
  // the job id this consumer's earlier passes used, and receives the one made now).
  ServiceReader(std::string graph, std::string element_type, ServiceOptions options, int64_t iteration,
                std::shared_ptr<std::atomic<uint64_t>> anonymous_job, IteratorContextPtr context);
  ServiceReader(const ServiceReader&) = delete;
  ServiceReader& operator=(const ServiceReader&) = delete;
  ~ServiceReader();
  // kReady with an element's bytes or an error, kEnd, or kPending (then await WaitReady()).
  PollState Poll(absl::StatusOr<std::string>* out);
  Task<void> WaitReady();

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

// What auto-shard and the static batch size search need of a Distribute node, whatever its element type
// (sluice/distribute/auto_shard.h): the graph the workers run and the options it was made with.
// Exported, with its destructor defined in the library: the key function that makes a dynamic_cast in
// the library work on nodes a program built.
class SLUICE_EXPORT ServiceSource {
 public:
  virtual ~ServiceSource();
  virtual const std::string& serialized_input() const = 0;
  virtual const ServiceOptions& service_options() const = 0;
};

template <class T>
class DataServiceNode final : public Node<T>,
                              public ServiceSource,
                              public std::enable_shared_from_this<DataServiceNode<T>> {
 public:
  DataServiceNode(std::string graph, ServiceOptions options)
      : graph_(std::move(graph)), options_(std::move(options)) {}
  const std::string& serialized_input() const override { return graph_; }
  const ServiceOptions& service_options() const override { return options_; }
  std::string_view op_name() const override { return "DataService"; }
  std::vector<Param> params() const override {
    return {{"dispatcher", options_.dispatcher_address},
            {"job_name", options_.job_name},
            {"processing_mode", std::string(ProcessingModeName(options_.processing_mode))}};
  }
  std::vector<std::shared_ptr<const OpNode>> inputs() const override { return {}; }
  int64_t cardinality() const override { return kUnknownCardinality; }
  std::string not_portable_reason() const override { return "it reads from a data service"; }
  bool begins_passes() const override { return true; }
  std::unique_ptr<Stream<T>> MakeStream(IteratorContextPtr context) const override {
    IteratorState& state = *context->state;
    const IteratorState::NodeKey key{this, this->weak_from_this()};
    const auto pass = static_cast<int64_t>(state.PassNumber(state.BeginPass(key)));
    auto job = state.Resource<std::atomic<uint64_t>>(key, [] { return new std::atomic<uint64_t>(0); });
    return std::make_unique<DataServiceStream>(std::make_unique<ServiceReader>(
        graph_, ElementTypeName<T>(), options_, pass, std::move(job), context));
  }

 private:
  class DataServiceStream final : public Stream<T> {
   public:
    explicit DataServiceStream(std::unique_ptr<ServiceReader> reader) : reader_(std::move(reader)) {}
    PollState Poll(absl::StatusOr<T>* out) override {
      const PollState state = reader_->Poll(&bytes_);
      if (state != PollState::kReady) return state;
      if (!bytes_.ok()) {
        *out = std::move(bytes_).status();
        return state;
      }
      T value{};
      if (absl::Status s = DecodeElement(*bytes_, &value); !s.ok()) {
        *out = absl::DataLossError(
            absl::StrCat("Distribute: an element from the data service does not decode as ",
                         ElementTypeName<T>(), ": ", s.message()));
      } else {
        *out = std::move(value);
      }
      return state;
    }
    Task<void> WaitReady() override { return reader_->WaitReady(); }

   private:
    std::unique_ptr<ServiceReader> reader_;
    absl::StatusOr<std::string> bytes_;
  };

  std::string graph_;
  ServiceOptions options_;
};

}  // namespace detail

// `dataset` runs on the service's workers; the result yields their elements (see the contract above).
template <class T>
Dataset<T> Distribute(const Dataset<T>& dataset, ServiceOptions options) {
  static_assert(HasElementCodec<T>, "Distribute: the element type needs an ElementCodec");
  absl::StatusOr<std::string> graph = Serialize(dataset);
  if (!graph.ok()) {
    return Dataset<T>(ops::MakeErrorSource<T>(
        "DataService",
        absl::FailedPreconditionError(absl::StrCat(
            "Distribute: the pipeline cannot be sent to the data service: ", graph.status().message()))));
  }
  return Dataset<T>(std::make_shared<detail::DataServiceNode<T>>(std::move(*graph), std::move(options)));
}

}  // namespace sluice::service

namespace sluice {
template <class T>
Dataset<T> Dataset<T>::Distribute(const service::ServiceOptions& options) const {
  return service::Distribute(*this, options);
}
}  // namespace sluice

#endif  // SLUICE_DISTRIBUTE_SERVICE_H_
