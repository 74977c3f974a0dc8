// The embeddable servers of sluice/distribute/service.h over the internal
// dispatcher and worker.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "distribute/service/agreement_registry.h"
#include "distribute/service/dispatcher.h"
#include "distribute/service/journal.h"
#include "distribute/service/server.h"
#include "distribute/service/worker.h"
#include "sluice/distribute/service.h"

namespace sluice::service {

struct DispatcherServer::Impl {
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<AgreementRegistry> agreements;
  std::unique_ptr<Server> server;  // stopped before the dispatcher its handlers use goes
  std::string address;
};

namespace {
// `dispatcher` outlives the task: the server joins its handlers before the
// dispatcher goes.
Task<absl::StatusOr<std::string>> AnswerOn(Dispatcher* dispatcher, AgreementRegistry* agreements,
                                           Frame request) {
  // An agreement round waits for the other trainers: awaited here, not in the dispatcher's lock.
  if (request.kind == FrameKind::kAgreementRound) {
    absl::StatusOr<AgreementRoundRequest> round = DecodeAgreementRoundRequest(request.payload);
    if (!round.ok()) co_return round.status();
    co_return co_await agreements->Round(*std::move(round));
  }
  if (request.kind == FrameKind::kAgreementAbandon) {
    absl::StatusOr<AgreementAbandonRequest> abandon = DecodeAgreementAbandonRequest(request.payload);
    if (!abandon.ok()) co_return abandon.status();
    co_return agreements->Abandon(*abandon);
  }
  co_return dispatcher->Handle(request);
}
}  // namespace

absl::StatusOr<std::unique_ptr<DispatcherServer>> DispatcherServer::Start(DispatcherConfig config) {
  if (config.worker_timeout_ms <= 0 || config.client_timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("DispatcherServer: timeouts must be positive (worker_timeout_ms ",
                     config.worker_timeout_ms, ", client_timeout_ms ", config.client_timeout_ms, ")"));
  }
  auto impl = std::make_unique<Impl>();
  impl->dispatcher = std::make_unique<Dispatcher>(config.worker_timeout_ms, config.log,
                                                  &Dispatcher::Clock::now, config.client_timeout_ms);
  if (!config.work_dir.empty()) {
    std::vector<std::string> replay;
    std::string note;
    absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(config.work_dir, &replay, &note);
    if (!journal.ok()) return journal.status();
    if (!note.empty() && config.log) config.log(note);
    if (absl::Status s = impl->dispatcher->Recover(*std::move(journal), replay); !s.ok()) return s;
  }
  impl->agreements = std::make_unique<AgreementRegistry>();
  Dispatcher* raw = impl->dispatcher.get();
  AgreementRegistry* agreements = impl->agreements.get();
  ServerOptions options;
  options.host = config.host;
  options.port = config.port;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(
      options, [raw, agreements](Frame request) { return AnswerOn(raw, agreements, std::move(request)); });
  if (!server.ok()) return server.status();
  impl->server = std::move(*server);
  impl->address = absl::StrCat(config.host, ":", impl->server->port());
  return std::unique_ptr<DispatcherServer>(new DispatcherServer(std::move(impl)));
}

DispatcherServer::DispatcherServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DispatcherServer::~DispatcherServer() { Stop(); }
std::string DispatcherServer::address() const { return impl_->address; }
void DispatcherServer::Stop() { impl_->server->Stop(); }

struct WorkerServer::Impl {
  std::unique_ptr<Worker> worker;
};

absl::StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(WorkerConfig config) {
  absl::StatusOr<std::unique_ptr<Worker>> worker = Worker::Start(std::move(config));
  if (!worker.ok()) return worker.status();
  auto impl = std::make_unique<Impl>();
  impl->worker = std::move(*worker);
  return std::unique_ptr<WorkerServer>(new WorkerServer(std::move(impl)));
}

WorkerServer::WorkerServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkerServer::~WorkerServer() { Stop(); }
std::string WorkerServer::address() const { return impl_->worker->address(); }
void WorkerServer::Stop() { impl_->worker->Stop(); }

}  // namespace sluice::service
