#include "tools/sluice/cli.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "sluice/io/tfrecord.h"
#include "sluice/version.h"
#include "tools/sluice/bench_command.h"
#include "tools/sluice/convert.h"
#include "tools/sluice/dispatcher_command.h"
#include "tools/sluice/graph_command.h"
#include "tools/sluice/inspect.h"
#include "tools/sluice/worker_command.h"

namespace sluice::tools {
namespace {

constexpr const char* kCommands[] = {"inspect", "convert", "graph", "bench", "dispatcher", "worker", "help"};

// CLI11 check functions: "" when the value is fine, else the message.
std::string CheckCompression(const std::string& value, bool allow_auto) {
  if (allow_auto && absl::AsciiStrToLower(value) == "auto") return "";
  if (!value.empty() && ParseCompression(value).ok()) return "";
  return absl::StrCat("\"", value, "\" is not ", allow_auto ? "auto, " : "", "none, gzip or zlib");
}

std::string CheckRecordRange(const std::string& value) {
  absl::StatusOr<RecordRange> range = ParseRecordRange(value);
  return range.ok() ? "" : std::string(range.status().message());
}

std::string CheckNotEmpty(const std::string& value) { return value.empty() ? "must not be empty" : ""; }

std::optional<Compression> CompressionFlag(const std::string& value) {
  if (absl::AsciiStrToLower(value) == "auto") return std::nullopt;
  return *ParseCompression(value);  // validated by CheckCompression
}

// Help of `sluice` itself: App::help() would describe the selected subcommand instead.
std::string TopLevelHelp(const CLI::App& app) {
  return app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
}

struct InspectFlags {
  InspectOptions options;
  std::string compression = "auto";
  std::string records;
  bool json = false;
  bool dump = false;
};

CLI::App* AddInspect(CLI::App& app, InspectFlags* flags) {
  CLI::App* cmd = app.add_subcommand(
      "inspect", "describe TFRecord files: compression, records, bytes, CRC status, first Example");
  CLI::Option* json =
      cmd->add_flag("--json", flags->json, "one JSON object per file, one per line (JSON Lines)");
  CLI::Option* dump = cmd->add_flag("--dump", flags->dump, "print the records, decoded, with their offsets");
  cmd->add_option("--records", flags->records,
                  "the records to dump: A:B is half-open, from 0; A: and :B leave out an end")
      ->type_name("A:B")
      ->check(CheckRecordRange)
      ->needs(dump);
  // --all with --dump is refused after parsing: a second excludes() on --dump would list both in an order
  // that depends on pointer values, and the help text should not change from run to run.
  cmd->add_flag("--all", flags->options.all,
                "decode every record and count those that are tf.train.Example (not with --dump)");
  json->excludes(dump);
  cmd->add_option("--compression", flags->compression,
                  "auto (detected from the first bytes), none, gzip or zlib; any case")
      ->type_name("C")
      ->capture_default_str()
      ->check([](const std::string& v) { return CheckCompression(v, /*allow_auto=*/true); });
  cmd->add_option("FILE", flags->options.files,
                  "TFRecord files; - reads stdin (gzip -c f | sluice inspect -)")
      ->type_name("")
      ->required();
  cmd->footer(
      "exit status: 0 every file read cleanly; 1 a file could not be opened or has a corrupt, truncated or\n"
      "unreadable record (its report names the file and byte offset); 2 bad usage.\n"
      "Errors are reported once each, in the file's report on stdout: the first 10, then a count.");
  return cmd;
}

struct ConvertFlags {
  ConvertOptions options;
  std::string dataset;
  std::string compression = "none";
  bool gzip = false;
};

CLI::App* AddConvert(CLI::App& app, ConvertFlags* flags) {
  CLI::App* cmd = app.add_subcommand(
      "convert", "write a dataset (fashion-mnist) as sharded TFRecord files of tf.train.Example");
  cmd->add_option("DATASET", flags->dataset, "the dataset: fashion-mnist")
      ->type_name("")
      ->required()
      ->check(CLI::IsMember({"fashion-mnist"}));
  cmd->add_option("--out", flags->options.out_dir, "output directory (created if missing)")
      ->type_name("DIR")
      ->required()
      ->check(CheckNotEmpty);
  cmd->add_option("--shards", flags->options.shards, "shards for the train split")
      ->type_name("N")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--test-shards", flags->options.test_shards,
                  "shards for the test split (0, the default: the same as --shards)")
      ->type_name("N")
      ->check(CLI::Range(0, 100000));
  CLI::Option* compression =
      cmd->add_option("--compression", flags->compression,
                      "none, gzip (.tfrecord.gz) or zlib (.tfrecord.zlib); any case")
          ->type_name("C")
          ->capture_default_str()
          ->check([](const std::string& v) { return CheckCompression(v, /*allow_auto=*/false); });
  cmd->add_flag("--gzip", flags->gzip, "the same as --compression=gzip")->excludes(compression);
  cmd->add_option("--limit", flags->options.limit, "convert only the first N examples of each split")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--source", flags->options.source_dir,
                  "IDX files, plain or .gz (from the Debian package dataset-fashion-mnist)")
      ->type_name("DIR");
  cmd->add_flag("--force", flags->options.force,
                "rewrite even when DIR/manifest.txt says the output is complete");
  cmd->footer("exit status: 0 converted (or already up to date); 1 a conversion error; 2 bad usage.");
  return cmd;
}

CLI::App* AddGraph(CLI::App& app, std::string* file) {
  CLI::App* cmd = app.add_subcommand(
      "graph", "print a serialized pipeline definition (sluice::Serialize) as text, with its fingerprint");
  cmd->add_option("FILE", *file, "the serialized graph; - reads stdin")->type_name("")->required();
  cmd->footer("exit status: 0 printed; 1 the file cannot be read or is not a valid graph; 2 bad usage.");
  return cmd;
}

}  // namespace

std::string VersionLine() {
  std::string line = absl::StrCat("sluice ", SLUICE_VERSION_STRING);
  // A binary run against another shared library than it was built with says so.
  if (std::string_view(SluiceVersion()) != SLUICE_VERSION_STRING) {
    absl::StrAppend(&line, " (linked library ", SluiceVersion(), ")");
  }
  return line;
}

int RunSluice(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, int stdin_fd) {
  CLI::App app("Coroutine-based TFRecord input pipelines: inspect and convert TFRecord files, read pipeline graphs.", "sluice");
  app.set_version_flag("--version", VersionLine(), "print the version and exit");
  app.footer("Run 'sluice help COMMAND' or 'sluice COMMAND --help' for a command's options.");

  InspectFlags inspect_flags;
  CLI::App* inspect = AddInspect(app, &inspect_flags);
  ConvertFlags convert_flags;
  CLI::App* convert = AddConvert(app, &convert_flags);
  std::string graph_file;
  CLI::App* graph = AddGraph(app, &graph_file);
  BenchOptions bench_options;
  CLI::App* bench = AddBench(app, &bench_options);
  DispatcherFlags dispatcher_flags;
  CLI::App* dispatcher = AddDispatcherCommand(app, &dispatcher_flags);
  WorkerFlags worker_flags;
  CLI::App* worker = AddWorkerCommand(app, &worker_flags);
  // Listed for the help text; run below, before CLI11, which would take `help convert` for two commands.
  app.add_subcommand("help", "show this message, or 'sluice help COMMAND' for one command");

  if (args.empty()) {
    err << TopLevelHelp(app);
    return kUsageError;
  }
  const std::string& first = args.front();
  if (!first.starts_with("-") &&
      std::find(std::begin(kCommands), std::end(kCommands), first) == std::end(kCommands)) {
    err << "sluice: unknown command \"" << first
        << "\" (commands: inspect, convert, graph, bench, dispatcher, worker, help)\n"
        << "Run 'sluice help' for usage.\n";
    return kUsageError;
  }
  if (first == "help") {
    if (args.size() == 1) {
      out << TopLevelHelp(app);
      return 0;
    }
    const std::string& topic = args[1];
    if (args.size() > 2) {
      err << "sluice help: takes one COMMAND, got " << args.size() - 1 << " arguments\n";
      return kUsageError;
    }
    if (topic == "inspect" || topic == "convert" || topic == "graph" || topic == "bench" ||
        topic == "dispatcher" || topic == "worker") {
      out << app.get_subcommand(topic)->help(app.get_name());
      return 0;
    }
    if (topic == "help" || topic == "--help" || topic == "-h") {
      out << "Usage: sluice help [COMMAND]\nShows the commands, or the options of COMMAND (inspect, "
             "convert, graph, bench, dispatcher, worker).\n";
      return 0;
    }
    err << "sluice help: unknown command \"" << topic
        << "\" (commands: inspect, convert, graph, bench, dispatcher, worker, help)\n";
    return kUsageError;
  }
  try {
    // CLI11 takes the arguments last first.
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e, out, err);  // --help, --version
    std::string where = "sluice";
    for (const CLI::App* sub : app.get_subcommands()) absl::StrAppend(&where, " ", sub->get_name());
    err << where << ": " << e.what() << "\nRun '" << where << " --help' for usage.\n";
    return kUsageError;
  }

  if (inspect->parsed()) {
    InspectOptions& options = inspect_flags.options;
    if (options.all && inspect_flags.dump) {
      err << "sluice inspect: --all cannot be combined with --dump\nRun 'sluice inspect --help' for usage.\n";
      return kUsageError;
    }
    options.compression = CompressionFlag(inspect_flags.compression);
    options.format = inspect_flags.json   ? InspectFormat::kJson
                     : inspect_flags.dump ? InspectFormat::kDump
                                          : InspectFormat::kText;
    if (!inspect_flags.records.empty()) options.records = *ParseRecordRange(inspect_flags.records);
    options.stdin_fd = stdin_fd;
    return RunInspect(options, out, err);
  }
  if (convert->parsed()) {
    ConvertOptions& options = convert_flags.options;
    options.compression =
        convert_flags.gzip ? Compression::kGzip : *CompressionFlag(convert_flags.compression);
    return RunConvert(options, out, err);
  }
  if (graph->parsed()) return RunGraph(graph_file, out, err, stdin_fd);
  if (bench->parsed()) return RunBench(bench_options, out, err);
  if (dispatcher->parsed()) return RunDispatcher(dispatcher_flags, out, err);
  if (worker->parsed()) return RunWorker(worker_flags, out, err);
  err << TopLevelHelp(app);
  return kUsageError;
}

}  // namespace sluice::tools
