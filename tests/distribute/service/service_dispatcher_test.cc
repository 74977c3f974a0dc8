// The dispatcher's job registry, workers and splits, called directly (no network).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "distribute/service/dispatcher.h"
#include "distribute/service/journal.h"
#include "gtest/gtest.h"
#include "sluice/ops/dataset.h"
#include "sluice/ops/graph.h"
#include "tests/test_util.h"

namespace sluice::service {
namespace service_dispatcher_test_file {
namespace {

std::string GraphOf(const Dataset<int64_t>& ds) {
  absl::StatusOr<std::string> bytes = Serialize(ds);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : "";
}

GetOrCreateJobRequest Request(const Dataset<int64_t>& ds, ProcessingMode mode, std::string name = "",
                              uint64_t iteration = 0) {
  GetOrCreateJobRequest request;
  request.graph = GraphOf(ds);
  request.mode = mode;
  request.job_name = std::move(name);
  request.iteration = iteration;
  return request;
}

absl::StatusOr<WorkerHeartbeatResponse> Beat(Dispatcher& dispatcher, uint64_t worker,
                                              std::vector<TaskReport> reports) {
  WorkerHeartbeatRequest request;
  request.worker_id = worker;
  request.reports = std::move(reports);
  return dispatcher.WorkerHeartbeat(request);
}

uint64_t AddWorker(Dispatcher& dispatcher, std::string address) {
  absl::StatusOr<RegisterWorkerResponse> worker = dispatcher.RegisterWorker({std::move(address)});
  EXPECT_TRUE(worker.ok()) << worker.status();
  return worker.ok() ? worker->worker_id : 0;
}

TEST(ServiceDispatcherTest, SameJobNameIsOneJobAnonymousRequestsAreNot) {
  Dispatcher dispatcher(10000, nullptr);
  auto a = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs, "shared"));
  auto b = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs, "shared"));
  auto c = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs));
  auto d = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok() && d.ok());
  EXPECT_EQ(a->job_id, b->job_id);
  EXPECT_NE(a->job_client_id, b->job_client_id);
  EXPECT_NE(c->job_id, d->job_id);
  EXPECT_NE(c->job_id, a->job_id);
}

TEST(ServiceDispatcherTest, ReusingANameWithAnotherModeTypeOrDatasetIsRefusedNamingBoth) {
  Dispatcher dispatcher(10000, nullptr);
  ASSERT_TRUE(dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs, "j")).ok());
  auto mode = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kDistributedEpoch, "j"));
  EXPECT_EQ(mode.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mode.status().message().find("parallel_epochs"), std::string::npos) << mode.status();
  EXPECT_NE(mode.status().message().find("distributed_epoch"), std::string::npos) << mode.status();
  auto dataset = dispatcher.GetOrCreateJob(Request(Range(11), ProcessingMode::kParallelEpochs, "j"));
  EXPECT_EQ(dataset.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(dataset.status().message().find("another dataset"), std::string::npos) << dataset.status();
  GetOrCreateJobRequest strings;
  strings.graph = *Serialize(FromVector<std::string>({"a"}));
  strings.mode = ProcessingMode::kParallelEpochs;
  strings.job_name = "j";
  auto type = dispatcher.GetOrCreateJob(strings);
  EXPECT_EQ(type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(type.status().message().find("yields int64"), std::string::npos) << type.status();
  EXPECT_NE(type.status().message().find("yields string"), std::string::npos) << type.status();
}

TEST(ServiceDispatcherTest, BadRequestsAreRefused) {
  Dispatcher dispatcher(10000, nullptr);
  EXPECT_EQ(dispatcher.GetOrCreateJob(Request(Range(3), ProcessingMode::kUnspecified)).status().code(),
            absl::StatusCode::kInvalidArgument);
  GetOrCreateJobRequest garbage;
  garbage.graph = "not a graph";
  garbage.mode = ProcessingMode::kParallelEpochs;
  EXPECT_EQ(dispatcher.GetOrCreateJob(garbage).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Beat(dispatcher, 12345, {}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(dispatcher.GetSplit({777}).status().code(), absl::StatusCode::kNotFound);
  Frame unknown{FrameKind::kGetElements, 0, 1, ""};
  EXPECT_EQ(dispatcher.Handle(unknown).status().code(), absl::StatusCode::kUnimplemented);
}

TEST(ServiceDispatcherTest, DistributedEpochNeedsExactlyOneSplittableSourceAndNamesThem) {
  Dispatcher dispatcher(10000, nullptr);
  auto none = dispatcher.GetOrCreateJob(
      Request(Dataset<int64_t>(ops::MakeErrorSource<int64_t>("Error", absl::InternalError("x"))),
              ProcessingMode::kDistributedEpoch));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("has none"), std::string::npos) << none.status();
  auto several = dispatcher.GetOrCreateJob(
      Request(Range(5).Concatenate(Range(7)).Take(9), ProcessingMode::kDistributedEpoch));
  EXPECT_EQ(several.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(several.status().message().find("Range at /0/0"), std::string::npos) << several.status();
  EXPECT_NE(several.status().message().find("Range at /0/1"), std::string::npos) << several.status();
}

TEST(ServiceDispatcherTest, SplitsCoverTheSourceOnceInChunksAndEachIterationAfresh) {
  Dispatcher dispatcher(10000, nullptr);
  const uint64_t worker = AddWorker(dispatcher, "127.0.0.1:1");
  auto job = dispatcher.GetOrCreateJob(Request(Range(10000), ProcessingMode::kDistributedEpoch, "split"));
  ASSERT_TRUE(job.ok()) << job.status();
  auto beat = Beat(dispatcher, worker, {});
  ASSERT_TRUE(beat.ok());
  ASSERT_EQ(beat->tasks.size(), 1u);
  const uint64_t task = beat->tasks[0].task_id;
  uint64_t covered = 0;
  int splits = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    auto split = dispatcher.GetSplit({task, i});
    ASSERT_TRUE(split.ok());
    if (split->end_of_splits) break;
    EXPECT_EQ(split->begin, covered);
    EXPECT_GT(split->end, split->begin);
    covered = split->end;
    ++splits;
  }
  EXPECT_EQ(covered, 10000u);
  EXPECT_GE(splits, 32);    // many per worker, not one
  EXPECT_LE(splits, 1000);  // and not one element each
  EXPECT_TRUE(dispatcher.GetSplit({task, static_cast<uint64_t>(splits)})->end_of_splits);
  // Iteration 1 is a new pass with splits of its own.
  ASSERT_TRUE(
      dispatcher.GetOrCreateJob(Request(Range(10000), ProcessingMode::kDistributedEpoch, "split", 1)).ok());
  auto next = Beat(dispatcher, worker, {});
  ASSERT_EQ(next->tasks.size(), 1u);
  EXPECT_EQ(next->tasks[0].iteration, 1u);
  auto first = dispatcher.GetSplit({next->tasks[0].task_id});
  EXPECT_FALSE(first->end_of_splits);
  EXPECT_EQ(first->begin, 0u);
}

TEST(ServiceDispatcherTest, TheLargestRangeSplitsWithoutOverflow) {
  Dispatcher dispatcher(10000, nullptr);
  const uint64_t worker = AddWorker(dispatcher, "127.0.0.1:1");
  const int64_t max = std::numeric_limits<int64_t>::max();
  auto job = dispatcher.GetOrCreateJob(Request(Range(max - 10000, max), ProcessingMode::kDistributedEpoch));
  ASSERT_TRUE(job.ok()) << job.status();
  auto huge = dispatcher.GetOrCreateJob(Request(Range(0, max), ProcessingMode::kDistributedEpoch));
  ASSERT_TRUE(huge.ok()) << huge.status();
  auto beat = Beat(dispatcher, worker, {});
  ASSERT_TRUE(beat.ok());
  ASSERT_EQ(beat->tasks.size(), 2u);
  uint64_t covered = 0;
  for (uint64_t i = 0; i < 20000; ++i) {
    auto split = dispatcher.GetSplit({beat->tasks[0].task_id, i});
    ASSERT_TRUE(split.ok());
    if (split->end_of_splits) break;
    covered = split->end;
  }
  EXPECT_EQ(covered, 10000u);
  auto first = dispatcher.GetSplit({beat->tasks[1].task_id});
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->begin, 0u);
  EXPECT_EQ(first->end, 8192u);  // the largest chunk
}

TEST(ServiceDispatcherTest, IterationFinishesWhenEveryTaskReportsAndAFailureNamesTheWorker) {
  Dispatcher dispatcher(10000, nullptr);
  const uint64_t w1 = AddWorker(dispatcher, "127.0.0.1:1");
  const uint64_t w2 = AddWorker(dispatcher, "127.0.0.1:2");
  auto job = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs, "f"));
  ASSERT_TRUE(job.ok());
  auto t1 = Beat(dispatcher, w1, {})->tasks.at(0).task_id;
  auto t2 = Beat(dispatcher, w2, {})->tasks.at(0).task_id;
  auto state = dispatcher.ClientHeartbeat({job->job_id, 0});
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->tasks.size(), 2u);
  EXPECT_FALSE(state->finished);
  ASSERT_TRUE(Beat(dispatcher, w1, {TaskReport{t1, absl::OkStatus()}}).ok());
  EXPECT_FALSE(dispatcher.ClientHeartbeat({job->job_id, 0})->finished);
  ASSERT_TRUE(Beat(dispatcher, w2, {TaskReport{t2, absl::OkStatus()}}).ok());
  EXPECT_TRUE(dispatcher.ClientHeartbeat({job->job_id, 0})->finished);

  auto failing = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs, "g"));
  auto f1 = Beat(dispatcher, w1, {})->tasks.at(0).task_id;
  ASSERT_TRUE(
      Beat(dispatcher, w1, {TaskReport{f1, absl::FailedPreconditionError("no kFoo")}}).ok());
  auto failed = dispatcher.ClientHeartbeat({failing->job_id, 0});
  EXPECT_TRUE(failed->finished);
  EXPECT_EQ(failed->error.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(failed->error.message().find("no kFoo"), std::string::npos) << failed->error;
  EXPECT_NE(failed->error.message().find("127.0.0.1:1"), std::string::npos) << failed->error;
}

TEST(ServiceDispatcherTest, ALateWorkerGetsTasksOfUnfinishedIterationsOnly) {
  Dispatcher dispatcher(10000, nullptr);
  const uint64_t w1 = AddWorker(dispatcher, "127.0.0.1:1");
  auto done = dispatcher.GetOrCreateJob(Request(Range(3), ProcessingMode::kParallelEpochs, "done"));
  auto t = Beat(dispatcher, w1, {})->tasks.at(0).task_id;
  ASSERT_TRUE(Beat(dispatcher, w1, {TaskReport{t, absl::OkStatus()}}).ok());
  auto open = dispatcher.GetOrCreateJob(Request(Range(4), ProcessingMode::kDistributedEpoch, "open"));
  ASSERT_TRUE(done.ok() && open.ok());
  const uint64_t w2 = AddWorker(dispatcher, "127.0.0.1:2");
  auto tasks = Beat(dispatcher, w2, {});
  ASSERT_EQ(tasks->tasks.size(), 1u);
  EXPECT_EQ(tasks->tasks[0].job_id, open->job_id);
  EXPECT_EQ(dispatcher.ClientHeartbeat({open->job_id, 0})->tasks.size(), 2u);
}

TEST(ServiceDispatcherTest, ASilentWorkerIsDroppedAndItsTasksEnd) {
  Dispatcher::Clock::time_point now{};
  std::vector<std::string> log;
  Dispatcher dispatcher(
      /*worker_timeout_ms=*/1000, [&log](const std::string& line) { log.push_back(line); },
      [&now] { return now; });
  const uint64_t w1 = AddWorker(dispatcher, "127.0.0.1:1");
  const uint64_t w2 = AddWorker(dispatcher, "127.0.0.1:2");
  auto job = dispatcher.GetOrCreateJob(Request(Range(3), ProcessingMode::kParallelEpochs, "lost"));
  ASSERT_TRUE(job.ok());
  auto t2 = Beat(dispatcher, w2, {})->tasks.at(0).task_id;
  now += std::chrono::milliseconds(800);
  ASSERT_TRUE(Beat(dispatcher, w2, {}).ok());
  now += std::chrono::milliseconds(800);  // worker 1 silent for 1.6 s, worker 2 for 0.8 s
  auto state = dispatcher.ClientHeartbeat({job->job_id, 0});
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->tasks.size(), 1u);
  EXPECT_EQ(state->tasks[0].worker_address, "127.0.0.1:2");
  EXPECT_FALSE(state->finished);
  EXPECT_EQ(Beat(dispatcher, w1, {}).status().code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(Beat(dispatcher, w2, {TaskReport{t2, absl::OkStatus()}}).ok());
  EXPECT_TRUE(dispatcher.ClientHeartbeat({job->job_id, 0})->finished);
  bool logged = false;
  for (const std::string& line : log) logged |= line.find("left") != std::string::npos;
  EXPECT_TRUE(logged);
}

TEST(ServiceDispatcherTest, ALeavingWorkerIsDroppedAtOnce) {
  std::vector<std::string> log;
  Dispatcher dispatcher(10000, [&log](const std::string& line) { log.push_back(line); });
  const uint64_t w1 = AddWorker(dispatcher, "127.0.0.1:1");
  auto job = dispatcher.GetOrCreateJob(Request(Range(3), ProcessingMode::kParallelEpochs, "bye"));
  ASSERT_TRUE(job.ok());
  WorkerHeartbeatRequest bye;
  bye.worker_id = w1;
  bye.leaving = true;
  ASSERT_TRUE(dispatcher.WorkerHeartbeat(bye).ok());
  auto state = dispatcher.ClientHeartbeat({job->job_id, 0});
  EXPECT_TRUE(state->finished);
  EXPECT_TRUE(state->tasks.empty());
  EXPECT_EQ(Beat(dispatcher, w1, {}).status().code(), absl::StatusCode::kNotFound);
  ASSERT_FALSE(log.empty());
  EXPECT_NE(log.back().find("left (stopping)"), std::string::npos) << log.back();
}

ClientHeartbeatRequest ClientBeat(const GetOrCreateJobResponse& job, uint64_t iteration,
                                  bool releasing = false) {
  return ClientHeartbeatRequest{job.job_id, iteration, job.job_client_id, releasing};
}

bool Logged(const std::vector<std::string>& log, const std::string& text) {
  for (const std::string& line : log) {
    if (line.find(text) != std::string::npos) return true;
  }
  return false;
}

TEST(ServiceDispatcherTest, AnIterationWhoseConsumersLeftIsCancelledAndStartsAfreshForANewConsumer) {
  std::vector<std::string> log;
  Dispatcher dispatcher(10000, [&log](const std::string& line) { log.push_back(line); });
  const uint64_t w1 = AddWorker(dispatcher, "127.0.0.1:1");
  auto a = dispatcher.GetOrCreateJob(Request(Range(1000), ProcessingMode::kDistributedEpoch, "gc"));
  auto b = dispatcher.GetOrCreateJob(Request(Range(1000), ProcessingMode::kDistributedEpoch, "gc"));
  ASSERT_TRUE(a.ok() && b.ok());
  const uint64_t task = Beat(dispatcher, w1, {})->tasks.at(0).task_id;
  ASSERT_FALSE(dispatcher.GetSplit({task})->end_of_splits);
  // One of two consumers leaving changes nothing.
  ASSERT_TRUE(dispatcher.ClientHeartbeat(ClientBeat(*a, 0, /*releasing=*/true)).ok());
  auto beat = Beat(dispatcher, w1, {});
  ASSERT_TRUE(beat.ok());
  EXPECT_TRUE(beat->cancelled_tasks.empty());
  EXPECT_EQ(dispatcher.ClientHeartbeat(ClientBeat(*b, 0))->tasks.size(), 1u);
  // The last one leaving cancels the iteration: its worker is told once, the record is gone.
  (void)dispatcher.ClientHeartbeat(ClientBeat(*b, 0, /*releasing=*/true));
  beat = Beat(dispatcher, w1, {});
  ASSERT_TRUE(beat.ok());
  EXPECT_EQ(beat->cancelled_tasks, std::vector<uint64_t>{task});
  EXPECT_TRUE(Beat(dispatcher, w1, {})->cancelled_tasks.empty());
  EXPECT_TRUE(Logged(log, "iteration 0 cancelled (its last consumer")) << log.back();
  auto gone = dispatcher.ClientHeartbeat(ClientBeat(*b, 0));
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(gone.status().message().find("cancelled"), std::string::npos) << gone.status();
  EXPECT_EQ(dispatcher.GetSplit({task}).status().code(), absl::StatusCode::kNotFound);
  // The worker's late report of the cancelled task is ignored.
  ASSERT_TRUE(Beat(dispatcher, w1, {TaskReport{task, absl::OkStatus()}}).ok());
  // A new consumer of the same name and iteration starts it again: a new task, splits from 0.
  auto c = dispatcher.GetOrCreateJob(Request(Range(1000), ProcessingMode::kDistributedEpoch, "gc"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->job_id, a->job_id);
  auto again = Beat(dispatcher, w1, {});
  ASSERT_EQ(again->tasks.size(), 1u);
  EXPECT_NE(again->tasks[0].task_id, task);
  EXPECT_EQ(dispatcher.GetSplit({again->tasks[0].task_id})->begin, 0u);
}

TEST(ServiceDispatcherTest, SilentConsumersTimeOutHeartbeatsKeepThem) {
  Dispatcher::Clock::time_point now{};
  std::vector<std::string> log;
  Dispatcher dispatcher(
      /*worker_timeout_ms=*/1000000, [&log](const std::string& line) { log.push_back(line); },
      [&now] { return now; }, /*client_timeout_ms=*/1000);
  const uint64_t w1 = AddWorker(dispatcher, "127.0.0.1:1");
  auto kept = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs, "kept"));
  auto silent = dispatcher.GetOrCreateJob(Request(Range(10), ProcessingMode::kParallelEpochs, "silent"));
  ASSERT_TRUE(kept.ok() && silent.ok());
  auto tasks = Beat(dispatcher, w1, {});
  ASSERT_EQ(tasks->tasks.size(), 2u);
  const uint64_t silent_task =
      tasks->tasks[0].job_id == silent->job_id ? tasks->tasks[0].task_id : tasks->tasks[1].task_id;
  for (int i = 0; i < 5; ++i) {
    now += std::chrono::milliseconds(600);  // "kept" beats every 0.6 s; "silent" stops after the first
    if (i == 0) {
      ASSERT_TRUE(dispatcher.ClientHeartbeat(ClientBeat(*silent, 0)).ok());
    }
    ASSERT_TRUE(dispatcher.ClientHeartbeat(ClientBeat(*kept, 0)).ok()) << i;
  }
  auto beat = Beat(dispatcher, w1, {});
  EXPECT_EQ(beat->cancelled_tasks, std::vector<uint64_t>{silent_task});
  EXPECT_TRUE(Logged(log, "its consumers were silent for 1000 ms"));
  EXPECT_FALSE(dispatcher.ClientHeartbeat(ClientBeat(*kept, 0))->finished);
}

TEST(ServiceDispatcherTest, LeavingAfterTheEndOrBeforeTheWorkerHeardOfTheTaskCancelsNothingItMustNot) {
  Dispatcher dispatcher(10000, nullptr);
  const uint64_t w1 = AddWorker(dispatcher, "127.0.0.1:1");
  // Finished, then left: the iteration stays finished for late consumers.
  auto done = dispatcher.GetOrCreateJob(Request(Range(3), ProcessingMode::kParallelEpochs, "done"));
  const uint64_t t = Beat(dispatcher, w1, {})->tasks.at(0).task_id;
  ASSERT_TRUE(Beat(dispatcher, w1, {TaskReport{t, absl::OkStatus()}}).ok());
  ASSERT_TRUE(dispatcher.ClientHeartbeat(ClientBeat(*done, 0, /*releasing=*/true)).ok());
  EXPECT_TRUE(Beat(dispatcher, w1, {})->cancelled_tasks.empty());
  auto late = dispatcher.GetOrCreateJob(Request(Range(3), ProcessingMode::kParallelEpochs, "done"));
  ASSERT_TRUE(late.ok());
  EXPECT_TRUE(dispatcher.ClientHeartbeat(ClientBeat(*late, 0))->finished);
  // Created and left before the worker's next heartbeat: the task is never sent, nor cancelled.
  auto brief = dispatcher.GetOrCreateJob(Request(Range(3), ProcessingMode::kParallelEpochs, "brief"));
  (void)dispatcher.ClientHeartbeat(ClientBeat(*brief, 0, /*releasing=*/true));
  auto beat = Beat(dispatcher, w1, {});
  EXPECT_TRUE(beat->tasks.empty());
  EXPECT_TRUE(beat->cancelled_tasks.empty());
}

TEST(ServiceDispatcherTest, ASplitAskedForAgainIsTheSameSplit) {
  Dispatcher dispatcher(10000, nullptr);
  const uint64_t worker = AddWorker(dispatcher, "127.0.0.1:1");
  ASSERT_TRUE(dispatcher.GetOrCreateJob(Request(Range(100000), ProcessingMode::kDistributedEpoch)).ok());
  const uint64_t task = Beat(dispatcher, worker, {})->tasks.at(0).task_id;
  auto first = dispatcher.GetSplit({task, 0});
  auto again = dispatcher.GetSplit({task, 0});  // the answer was lost: asked again
  auto second = dispatcher.GetSplit({task, 1});
  ASSERT_TRUE(first.ok() && again.ok() && second.ok());
  EXPECT_EQ(again->begin, first->begin);
  EXPECT_EQ(again->end, first->end);
  EXPECT_EQ(second->begin, first->end);
  auto ahead = dispatcher.GetSplit({task, 5});
  EXPECT_EQ(ahead.status().code(), absl::StatusCode::kFailedPrecondition) << ahead.status();
}

// A dispatcher with a journal, as DispatcherServer::Start builds one; `dir` holds the journal.
std::unique_ptr<Dispatcher> Journaled(const std::string& dir, std::vector<std::string>* log,
                                      Dispatcher::Clock::time_point* now) {
  auto dispatcher = std::make_unique<Dispatcher>(
      /*worker_timeout_ms=*/1000, [log](const std::string& line) { log->push_back(line); },
      [now] { return *now; }, /*client_timeout_ms=*/1000);
  std::vector<std::string> replay;
  std::string note;
  absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(dir, &replay, &note);
  EXPECT_TRUE(journal.ok()) << journal.status();
  if (!journal.ok()) return nullptr;
  absl::Status recovered = dispatcher->Recover(*std::move(journal), replay);
  EXPECT_TRUE(recovered.ok()) << recovered;
  return dispatcher;
}

TEST(ServiceDispatcherTest, ARestartedDispatcherContinuesItsJobsTasksAndSplitsFromTheJournal) {
  const std::string dir = testing_util::TempPath("dispatcher_journal");
  Dispatcher::Clock::time_point now{};
  std::vector<std::string> log;
  uint64_t worker = 0;
  uint64_t task = 0;
  uint64_t done_task = 0;
  uint64_t highest_id = 0;
  GetSplitResponse split1;
  absl::StatusOr<GetOrCreateJobResponse> job = absl::UnknownError("not yet");
  absl::StatusOr<GetOrCreateJobResponse> finished = absl::UnknownError("not yet");
  {
    std::unique_ptr<Dispatcher> before = Journaled(dir, &log, &now);
    ASSERT_NE(before, nullptr);
    worker = AddWorker(*before, "127.0.0.1:1");
    job = before->GetOrCreateJob(Request(Range(100000), ProcessingMode::kDistributedEpoch, "train"));
    finished = before->GetOrCreateJob(Request(Range(3), ProcessingMode::kParallelEpochs, "small"));
    ASSERT_TRUE(job.ok() && finished.ok());
    auto beat = Beat(*before, worker, {});
    ASSERT_EQ(beat->tasks.size(), 2u);
    for (const TaskDef& def : beat->tasks) (def.job_id == job->job_id ? task : done_task) = def.task_id;
    ASSERT_TRUE(before->GetSplit({task, 0}).ok());
    split1 = *before->GetSplit({task, 1});
    ASSERT_TRUE(Beat(*before, worker, {TaskReport{done_task, absl::OkStatus()}}).ok());
    highest_id = std::max(job->job_client_id, finished->job_client_id);
  }  // the dispatcher stops; its journal stays
  log.clear();
  std::unique_ptr<Dispatcher> after = Journaled(dir, &log, &now);
  ASSERT_NE(after, nullptr);
  EXPECT_TRUE(Logged(log, "recovered from")) << (log.empty() ? "" : log.back());
  // The worker is known by its id and gets its unfinished task again (it ignores tasks it holds).
  WorkerHeartbeatRequest request;
  request.worker_id = worker;
  request.current_tasks = {task, 999999};
  auto beat = after->WorkerHeartbeat(request);
  ASSERT_TRUE(beat.ok()) << beat.status();
  ASSERT_EQ(beat->tasks.size(), 1u);
  EXPECT_EQ(beat->tasks[0].task_id, task);
  EXPECT_EQ(beat->cancelled_tasks, std::vector<uint64_t>{999999});  // a task it does not know
  // Splits: the ones handed out are the same when asked again; the next follows them.
  auto retry = after->GetSplit({task, 1});
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->begin, split1.begin);
  EXPECT_EQ(retry->end, split1.end);
  EXPECT_EQ(after->GetSplit({task, 2})->begin, split1.end);
  // The consumers' job and iteration are there; the finished iteration stays finished.
  auto listed = after->ClientHeartbeat(ClientBeat(*job, 0));
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->tasks.size(), 1u);
  EXPECT_EQ(listed->tasks[0].worker_address, "127.0.0.1:1");
  EXPECT_TRUE(after->ClientHeartbeat(ClientBeat(*finished, 0))->finished);
  auto joined = after->GetOrCreateJob(Request(Range(100000), ProcessingMode::kDistributedEpoch, "train"));
  ASSERT_TRUE(joined.ok());
  EXPECT_EQ(joined->job_id, job->job_id);
  EXPECT_GT(joined->job_client_id, highest_id);  // ids are never reused across the restart
}

TEST(ServiceDispatcherTest, AfterARestartWorkersAndConsumersThatDoNotComeBackTimeOut) {
  const std::string dir = testing_util::TempPath("dispatcher_journal_timeouts");
  Dispatcher::Clock::time_point now{};
  std::vector<std::string> log;
  uint64_t worker = 0;
  uint64_t task = 0;
  {
    std::unique_ptr<Dispatcher> before = Journaled(dir, &log, &now);
    ASSERT_NE(before, nullptr);
    worker = AddWorker(*before, "127.0.0.1:1");
    ASSERT_TRUE(before->GetOrCreateJob(Request(Range(1000), ProcessingMode::kDistributedEpoch, "gone")).ok());
    task = Beat(*before, worker, {})->tasks.at(0).task_id;
  }
  now += std::chrono::hours(1);  // a long downtime: the restart's own clock starts the waits
  std::unique_ptr<Dispatcher> after = Journaled(dir, &log, &now);
  ASSERT_NE(after, nullptr);
  now += std::chrono::milliseconds(900);
  ASSERT_TRUE(Beat(*after, worker, {}).ok());  // within worker_timeout_ms of the restart
  now += std::chrono::milliseconds(900);
  // No consumer came back within client_timeout_ms: the iteration is cancelled; the worker still holds
  // its task and is told to drop it.
  WorkerHeartbeatRequest holding;
  holding.worker_id = worker;
  holding.current_tasks = {task};
  auto beat = after->WorkerHeartbeat(holding);
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_TRUE(Logged(log, "iteration 0 cancelled (its consumers were silent")) << log.back();
  EXPECT_EQ(beat->cancelled_tasks, std::vector<uint64_t>{task});
  // A worker that does not heartbeat again is dropped.
  now += std::chrono::milliseconds(1500);
  ASSERT_TRUE(after->RegisterWorker({"127.0.0.1:2"}).ok());
  EXPECT_TRUE(Logged(log, "left (no heartbeat")) << log.back();
  // Those decisions were journaled too: a third start sees the same state.
  after.reset();
  log.clear();
  std::unique_ptr<Dispatcher> third = Journaled(dir, &log, &now);
  ASSERT_NE(third, nullptr);
  EXPECT_TRUE(Logged(log, "0 unfinished iterations, 1 workers")) << log.back();
}

// Recovers a dispatcher from a journal holding exactly `records`; returns Recover's status.
absl::Status RecoverFrom(const std::string& dir, const std::vector<std::string>& records) {
  std::vector<std::string> replay;
  std::string note;
  {
    absl::StatusOr<std::unique_ptr<Journal>> journal = Journal::Open(dir, &replay, &note);
    if (!journal.ok()) return journal.status();
    for (const std::string& record : records) {
      if (absl::Status s = (*journal)->Append(record); !s.ok()) return s;
    }
  }
  absl::StatusOr<std::unique_ptr<Journal>> reopened = Journal::Open(dir, &replay, &note);
  if (!reopened.ok()) return reopened.status();
  Dispatcher dispatcher(1000, nullptr);
  return dispatcher.Recover(*std::move(reopened), replay);
}

TEST(ServiceDispatcherTest, AJournalThatDoesNotReplayIsDataLoss) {
  JournalEvent orphan;
  orphan.kind = JournalEventKind::kTaskCreated;
  orphan.id = 7;
  orphan.job_id = 3;  // never created
  absl::Status recovered = RecoverFrom(testing_util::TempPath("dispatcher_journal_bad"),
                                       {EncodeJournalEvent(orphan), "not an event"});
  EXPECT_EQ(recovered.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(recovered.message().find("record 0 (task created): names job 3"), std::string::npos) << recovered;
}

TEST(ServiceDispatcherTest, AJournalThatRepeatsATaskIdIsDataLossNotACrash) {
  JournalEvent job;
  job.kind = JournalEventKind::kJobCreated;
  job.id = 1;
  job.graph = GraphOf(Range(10));
  job.mode = ProcessingMode::kParallelEpochs;
  JournalEvent first;
  first.kind = JournalEventKind::kIterationStarted;
  first.job_id = 1;
  JournalEvent second = first;
  second.iteration = 1;
  JournalEvent task;
  task.kind = JournalEventKind::kTaskCreated;
  task.id = 2;
  task.job_id = 1;
  JournalEvent again = task;  // the same task id in another iteration
  again.iteration = 1;
  std::vector<std::string> records;
  for (const JournalEvent& event : {job, first, second, task, again})
    records.push_back(EncodeJournalEvent(event));
  absl::Status recovered = RecoverFrom(testing_util::TempPath("dispatcher_journal_repeated"), records);
  EXPECT_EQ(recovered.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(recovered.message().find("record 4 (task created): creates task 2, which exists"),
            std::string::npos)
      << recovered;
}

}  // namespace
}  // namespace service_dispatcher_test_file
}  // namespace sluice::service
