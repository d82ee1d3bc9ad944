// sonic-server: a KServe v2 / Triton-compatible gRPC inference server hosting the models of
// Triton model repositories (ONNX, TorchScript), or sonic's built-in CPU models without one. The
// reference server for tests, demos and benchmarks: a thin program over the server library.
#include <sonic/builtin_models.hpp>
#include <sonic/executor.hpp>
#include <sonic/repository/repository.hpp>
#include <sonic/repository/watch.hpp>
#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include <malloc.h>
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include "command_line.hpp"
#include "number_option.hpp"
#include "stop_signals.hpp"

namespace {

// A request's tensors are allocated on a network thread and freed where its answer is written,
// often at the top of a glibc arena. With glibc's defaults (trim above 128 KiB, raised only after
// a large mmap'd block happens to be freed) every such free can hand the memory back with
// madvise and the next request faults it in again: 3 to 6 page faults and a quarter more server
// CPU per 64 KiB request. Fixed thresholds make the cost independent of the process's history:
// blocks below 32 MiB (glibc's own ceiling for its adaptive threshold) come from arenas and are
// reused; an arena gives memory back once more than 16 MiB lies free at its top. What stays
// kept is bounded by 16 MiB per arena (docs/limits.md). Set before any thread starts.
void keep_freed_memory_for_reuse() {
#ifdef __GLIBC__
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
#endif
}

using sonic::tools::UsageError;

// "--port needs a number up to 65535, got 'x'".
[[noreturn]] void bad_option(std::string_view flag, std::string_view what,
                             const std::string& text) {
  throw UsageError(std::string(flag) + " needs " + std::string(what) + ", got '" + text + "'");
}

unsigned long long parse_number(std::string_view flag, const std::string& text,
                                unsigned long long max) {
  auto value = sonic::tools::whole_number(text);
  if (!value || *value < 0 || static_cast<unsigned long long>(*value) > max) {
    bad_option(flag, "a number from 0 to " + std::to_string(max), text);
  }
  return static_cast<unsigned long long>(*value);
}

// A byte count: digits and an optional K, M or G (powers of 1024).
unsigned long long parse_size(std::string_view flag, const std::string& text) {
  int shift = 0;
  std::string digits = text;
  if (!digits.empty()) {
    char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(digits.back())));
    shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : 0;
    if (shift) digits.pop_back();
  }
  auto value = sonic::tools::whole_number(digits);
  if (!value || *value < 0 || static_cast<unsigned long long>(*value) > (~0ull >> shift)) {
    bad_option(flag, "a size in bytes (with K, M or G)", text);
  }
  return static_cast<unsigned long long>(*value) << shift;
}

std::chrono::milliseconds parse_seconds(std::string_view flag, const std::string& text) {
  auto value = sonic::tools::finite_number(text);
  if (!value || *value < 0 || *value > 1e7) bad_option(flag, "seconds (0 or more)", text);
  return std::chrono::milliseconds(static_cast<long long>(*value * 1000));
}

// One line per model, as tritonserver prints its model table: READY, or why not.
void report(const std::string& model, const sonic::Result<void>& loaded,
            sonic::CpuExecutor& executor) {
  static std::mutex lines;  // loads report from several threads
  std::lock_guard<std::mutex> lock(lines);
  if (!loaded) {
    std::cout << "model " << model << ": UNAVAILABLE: " << loaded.error().message() << std::endl;
    return;
  }
  auto served = executor.model(model);
  std::cout << "model " << model << ": READY (version " << (served ? (*served)->version : "?")
            << ")" << std::endl;
}

void report_change(const sonic::repository::WatchEvent& event) {
  if (event.unloaded) {
    std::cout << "model " << event.model << ": unloaded (gone from the repository)" << std::endl;
  } else if (event.outcome) {
    std::cout << "model " << event.model << ": READY (loaded again)" << std::endl;
  } else {
    std::cout << "model " << event.model << ": UNAVAILABLE: " << event.outcome.error().message()
              << std::endl;
  }
}

// Every model of the repositories (modes none and poll), or those named (explicit; '*': all),
// `threads` at a time, as tritonserver's --model-load-thread-count: a slow model delays the
// others by no more than its share. Each load ends within the executor's load timeout.
void load_at_start(sonic::CpuExecutor& executor, const sonic::repository::Repository& repository,
                   const std::string& mode, const std::vector<std::string>& named,
                   std::size_t threads) {
  std::vector<std::string> models = repository.model_names();
  const bool all = mode != "explicit" || std::find(named.begin(), named.end(), "*") != named.end();
  if (!all) models = named;
  // Ensembles last: their loads then find the models they run loaded, or loading, rather than
  // load them a second time.
  std::stable_partition(models.begin(), models.end(), [&](const std::string& name) {
    auto config = repository.config(name);
    return !config || config->platform != "ensemble";
  });
  std::atomic<std::size_t> next{0};
  auto loader = [&] {
    for (std::size_t i = next++; i < models.size(); i = next++) {
      report(models[i], executor.load_model(models[i]), executor);
    }
  };
  std::vector<std::thread> loaders;
  for (std::size_t t = 1; t < std::min(threads, models.size()); ++t) loaders.emplace_back(loader);
  loader();
  for (auto& thread : loaders) thread.join();
}

// What the command line asks for.
struct Command {
  sonic::ServerOptions options;
  std::size_t threads = 0;
  std::vector<std::string> repositories, models_to_load;
  std::string control_mode = "none";
  std::chrono::milliseconds poll_period{15000};
  std::chrono::milliseconds load_timeout{300'000};
  std::size_t load_threads = 4;  // tritonserver's --model-load-thread-count default
  std::chrono::milliseconds exit_timeout{1000};
  bool allow_metrics = true;                  // tritonserver's --allow-metrics default
  std::optional<std::uint16_t> metrics_port;  // unset: 8002, as tritonserver (see parse_args)
  bool allow_http = true;                     // tritonserver's --allow-http default
  std::optional<std::uint16_t> http_port;     // unset: 8000, as tritonserver (see parse_args)
};

// The backends built in, for the help.
std::string backend_list() {
  std::string backends;
  for (const auto& name : sonic::repository::backend_names()) {
    backends += (backends.empty() ? "" : ", ") + name;
  }
  return backends.empty() ? "none (built without the ONNX and TorchScript backends)" : backends;
}

// The command line as a Command; throws UsageError, exits after --help and --version.
Command parse_args(int argc, char** argv) {
  Command command;
  sonic::ServerOptions& options = command.options;
  sonic::ServerLimits& limits = options.limits;
  using sonic::tools::CommandLine;
  CommandLine line(
      "sonic-server",
      "usage: sonic-server [OPTION]...\n"
      "Serves the models of Triton model repositories, or without one sonic's built-in models\n"
      "(simple, identity_fp32 and an identity_<type> of every other datatype, and Triton's\n"
      "examples simple_string, simple_identity, simple_sequence), over KServe v2 gRPC,\n"
      "Triton-compatible.");
  auto count = [](const char* flag, auto& field, unsigned long long max) {
    return CommandLine::OnValue([&field, flag, max](const std::string& value) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(parse_number(flag, value, max));
    });
  };
  auto size = [](const char* flag, auto& field) {
    return CommandLine::OnValue([&field, flag](const std::string& value) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(parse_size(flag, value));
    });
  };
  auto seconds = [](const char* flag, std::chrono::milliseconds& field) {
    return CommandLine::OnValue(
        [&field, flag](const std::string& value) { field = parse_seconds(flag, value); });
  };
  auto choice = [](const char* flag, std::vector<std::string> words, auto on) {
    return CommandLine::OnValue([flag, words, on](const std::string& value) {
      auto found = std::find(words.begin(), words.end(), value);
      if (found == words.end()) {
        std::string list;
        for (const auto& word : words) list += (list.empty() ? "'" : ", '") + word + "'";
        bad_option(flag, "one of " + list, value);
      }
      on(static_cast<int>(found - words.begin()));
    });
  };
  line.section("Serving:")
      .option("--host", "ADDR", "address to listen on (default 127.0.0.1; 0.0.0.0 for all)",
              [&](const std::string& v) { options.host = v; })
      .option("--id", "NAME",
              "the server's name in its metadata (default sonic-server; tritonserver's --id, "
              "whose default is triton)",
              [&](const std::string& v) { options.name = v; })
      .option("-p, --port", "N", "gRPC port (default 8001; 0 picks a free port)",
              count("--port", options.port, 65535))
      .option("--tcp-port", "N",
              "also serve tcp:// and tcp+zstd:// clients on this port\n(0: a free one)",
              [&](const std::string& v) {
                options.tcp_port = static_cast<std::uint16_t>(parse_number("--tcp-port", v, 65535));
              })
      .option("--allow-metrics", "BOOL",
              "true (default, as tritonserver): serve Prometheus metrics with "
              "Triton's names at GET /metrics on --metrics-port; false: no metrics port",
              choice("--allow-metrics", {"true", "false"},
                     [&](int which) { command.allow_metrics = which == 0; }))
      .option("--metrics-port", "N",
              "metrics port (default 8002, as tritonserver; with --port 0, a free one "
              "too; 0 picks a free port)",
              [&](const std::string& v) {
                command.metrics_port =
                    static_cast<std::uint16_t>(parse_number("--metrics-port", v, 65535));
              })
      .option("--allow-http", "BOOL",
              "true (default, as tritonserver): serve KServe v2 over HTTP/REST on "
              "--http-port (health, metadata, model configuration and control, shared memory, "
              "inference with JSON and binary tensors); "
              "false: no HTTP port",
              choice("--allow-http", {"true", "false"},
                     [&](int which) { command.allow_http = which == 0; }))
      .option("--http-port", "N",
              "HTTP/REST port (default 8000, as tritonserver; with --port 0, a free one "
              "too; 0 picks a free port)",
              [&](const std::string& v) {
                command.http_port =
                    static_cast<std::uint16_t>(parse_number("--http-port", v, 65535));
              })
      // The default follows the executor's: the cores this process may use (its affinity mask,
      // its cgroup's CPU quota), which for a server alone on its node is every core, and in a
      // container or a job slot its share. Never more threads than the cores it may run on.
      .option("--threads", "N",
              "model execution threads (default: the cores this process may use: its CPU "
              "affinity, limited by its cgroup's CPU quota)",
              count("--threads", command.threads, 1024))
      .option("--io-threads", "N", "network threads (default 1)",
              count("--io-threads", options.io_threads, 64))
      .flag("--inline-models",
            "run every model on the network threads: no hand-off per request, "
            "for models that take microseconds (a slow one stalls its connections)",
            [&] { options.inline_models = true; })
      .option("--quick-model-us", "N",
              "without --inline-models, a model whose recent executions took under "
              "N microseconds each runs on the network thread, others on the model "
              "threads (default 20; 0: none)",
              [&](const std::string& v) {
                options.quick_model_budget =
                    std::chrono::microseconds(parse_number("--quick-model-us", v, 1000000));
              })
      .option("--shed-early", "BOOL",
              "true (default): refuse at once (UNAVAILABLE, reason WOULD_MISS_DEADLINE) a "
              "request its model cannot answer before its deadline, given the requests "
              "ahead of it, so that its client can go elsewhere in time; false: queue it",
              choice("--shed-early", {"true", "false"},
                     [&](int which) { options.shed_early = which == 0; }));
  line.section("Models (as tritonserver's options):")
      .option("--model-repository", "PATH",
              "a directory of models: PATH/NAME/config.pbtxt and PATH/NAME/1/model.onnx "
              "(or model.pt); repeat for several. Backends here: " +
                  backend_list(),
              [&](const std::string& v) { command.repositories.push_back(v); })
      .option(
          "--model-control-mode", "MODE",
          "none (default): every model of the repositories is loaded at start and "
          "clients may not unload or load models; explicit: only --load-model "
          "models are loaded, and clients may (RepositoryModelLoad, ...Unload); "
          "poll: as none, and the repositories are read again every "
          "--repository-poll-secs: new and changed models load, removed ones unload",
          choice("--model-control-mode", {"none", "explicit", "poll"},
                 [&](int which) {
                   command.control_mode = which == 0 ? "none" : which == 1 ? "explicit" : "poll";
                   options.model_control = which == 1;
                 }))
      .option("--load-model", "NAME", "with explicit: load this model at start (repeat; '*': all)",
              [&](const std::string& v) { command.models_to_load.push_back(v); })
      .option("--model-load-timeout", "SECONDS",
              "a model whose load takes longer is UNAVAILABLE, the load's reason saying "
              "so, and the others are served (default 300; 0: no limit)",
              seconds("--model-load-timeout", command.load_timeout))
      .option(
          "--model-load-thread-count", "N", "models loaded at once (default 4, as tritonserver)",
          [&](const std::string& v) {
            command.load_threads =
                std::max<unsigned long long>(1, parse_number("--model-load-thread-count", v, 256));
          })
      .option("--strict-readiness", "BOOL",
              "true (default, as tritonserver): ServerReady (and the gRPC health check) "
              "answers ready only while every model to serve is READY; false: once listening",
              choice("--strict-readiness", {"true", "false"},
                     [&](int which) { options.strict_readiness = which == 0; }))
      .option("--repository-poll-secs", "N",
              "with poll: seconds between reads of the repositories (default 15)",
              [&](const std::string& v) {
                command.poll_period = std::chrono::seconds(std::max<unsigned long long>(
                    1, parse_number("--repository-poll-secs", v, 86400)));
              });
  line.section("Network:")
      .option("--grpc-infer-response-compression-level", "LEVEL",
              "none (default), low, medium or high, as Triton's: ModelInfer answers to "
              "clients that accept it are compressed (low: gzip; medium, high: "
              "deflate); compressed requests are always accepted",
              choice("--grpc-infer-response-compression-level", {"none", "low", "medium", "high"},
                     [&](int which) {
                       using Level = sonic::ServerOptions::ResponseCompression;
                       const Level levels[] = {Level::None, Level::Low, Level::Medium, Level::High};
                       options.infer_response_compression = levels[which];
                     }))
      .option("--auth-token-file", "FILE",
              "require 'authorization: Bearer TOKEN' on every call (gRPC metadata; a "
              "metadata frame on tcp://), TOKEN being FILE's text; FILE is read again "
              "when it changes. Others are answered UNAUTHENTICATED",
              [&](const std::string& v) { options.auth_token_file = v; })
      .option("--tls-cert", "FILE",
              "serve TLS on both ports with this certificate chain (PEM): grpcs:// and "
              "tcp+tls://; needs --tls-key. No plaintext is served then",
              [&](const std::string& v) { options.tls.cert_file = v; })
      .option("--tls-key", "FILE", "the certificate's private key (PEM)",
              [&](const std::string& v) { options.tls.key_file = v; })
      .option("--tls-client-ca", "FILE",
              "require a client certificate signed by these authorities (PEM): mutual TLS",
              [&](const std::string& v) { options.tls.client_ca_file = v; });
  line.section("Shared memory (Triton's extension; see docs/shared-memory-security.md):")
      .flag("--no-shm", "refuse it (clients send tensors inline)",
            [&] { options.shared_memory = false; })
      .option("--shm-access", "MODE",
              "owner (default): a client maps only objects it owns, learned from the "
              "kernel; any: any client maps any object the server can open (Triton)",
              choice("--shm-access", {"owner", "any"}, [&](int which) {
                options.shared_memory_access =
                    which == 0 ? sonic::SharedMemoryAccess::Owner : sonic::SharedMemoryAccess::Any;
              }));
  line.section(
          "Limits (SIZE takes K, M, G suffixes, powers of 1024; SECONDS may have decimals,\n"
          "0 = never; see docs/limits.md):")
      .option("--max-message-bytes", "SIZE", "one request or answer (default 512M)",
              size("--max-message-bytes", options.max_message_bytes))
      .option("--max-inflate-ratio", "N",
              "a gzip or deflate request inflates to at most N times its size, or 1M "
              "(default 256; 1032: no bound but --max-message-bytes)",
              count("--max-inflate-ratio", options.max_inflate_ratio, 1u << 20))
      .option("--max-buffered-bytes", "SIZE", "held for all clients at once (default 1G)",
              size("--max-buffered-bytes", limits.max_buffered_bytes))
      .option("--max-connection-buffered-bytes", "SIZE", "held for one connection (default 512M)",
              size("--max-connection-buffered-bytes", limits.max_connection_buffered_bytes))
      .option("--connection-window-bytes", "SIZE",
              "HTTP/2 bytes a client may send ahead (default 16M)",
              [&](const std::string& v) {
                auto bytes = parse_size("--connection-window-bytes", v);
                if (bytes < 65535 || bytes > 0x7fffffff) {
                  bad_option("--connection-window-bytes", "64K to 2G - 1", v);
                }
                options.connection_window_bytes = static_cast<std::uint32_t>(bytes);
              })
      .option("--max-connections", "N", "open connections (default 4096)",
              count("--max-connections", limits.max_connections, 1u << 20))
      .option("--max-concurrent-streams", "N", "gRPC calls at once per connection (default 1024)",
              count("--max-concurrent-streams", options.max_concurrent_streams, 0x7fffffff))
      .option("--max-header-list-bytes", "SIZE", "headers of one gRPC call (default 16K)",
              size("--max-header-list-bytes", limits.max_header_list_bytes))
      .option("--exit-timeout-secs", "SECONDS",
              "after SIGINT or SIGTERM, how long calls under way may take before the "
              "process exits without them (default 1; tritonserver's is 30)",
              seconds("--exit-timeout-secs", command.exit_timeout))
      .option("--handshake-timeout", "SECONDS", "to finish the handshake (default 10)",
              seconds("--handshake-timeout", limits.handshake_timeout))
      .option("--idle-timeout", "SECONDS", "without a call (default 600)",
              seconds("--idle-timeout", limits.idle_timeout))
      .option("--stall-timeout", "SECONDS", "stopped mid-message or not reading (default 30)",
              seconds("--stall-timeout", limits.stall_timeout))
      .option("--max-shm-regions", "N", "registered, all connections (default 1024)",
              count("--max-shm-regions", limits.max_shm_regions, 16384))
      .option("--max-connection-shm-regions", "N", "registered by one connection (default 64)",
              count("--max-connection-shm-regions", limits.max_connection_shm_regions, 16384))
      .option("--max-shm-bytes", "SIZE", "mapped, all connections (default 64G)",
              size("--max-shm-bytes", limits.max_shm_bytes))
      .option("--max-connection-shm-bytes", "SIZE", "mapped for one connection (default 16G)",
              size("--max-connection-shm-bytes", limits.max_connection_shm_bytes));
  line.epilogue(
      "A model that fails to load, or passes --model-load-timeout, is reported with its reason\n"
      "and stays UNAVAILABLE; the others are served. Prints 'sonic-server listening on HOST:PORT' "
      "once ready (and\n"
      "'sonic-server tcp listening on HOST:PORT' with --tcp-port, 'sonic-server metrics listening "
      "on HOST:PORT'\nwith metrics, 'sonic-server http listening on HOST:PORT' with HTTP); stops "
      "on SIGINT/SIGTERM.\n"
      "Exit status: 0 stopped by a signal, 1 could not start, 2 bad command line.\n");

  std::vector<std::string> extra = line.parse(argc, argv);
  if (!extra.empty()) {
    throw UsageError("unexpected argument '" + extra.front() + "' (options start with --)");
  }
  options.io_threads = std::max<std::size_t>(1, options.io_threads);
  // A server asked for a free gRPC port (tests, several servers on one host) gets a free metrics
  // port too unless one is named: two of them would otherwise both try 8002.
  if (command.allow_metrics) {
    options.metrics_port = command.metrics_port ? *command.metrics_port
                           : options.port == 0  ? 0
                                                : 8002;
  }
  if (command.allow_http) {
    options.http_port = command.http_port ? *command.http_port : options.port == 0 ? 0 : 8000;
  }
  if (!command.models_to_load.empty() && command.control_mode != "explicit") {
    throw UsageError(
        "--load-model needs --model-control-mode explicit (in the other modes every model of "
        "the repositories is loaded)");
  }
  if (command.repositories.empty() &&
      (command.control_mode == "poll" || !command.models_to_load.empty())) {
    throw UsageError("--model-control-mode poll and --load-model need --model-repository");
  }
  if (limits.max_connection_buffered_bytes < options.max_message_bytes ||
      limits.max_buffered_bytes < options.max_message_bytes) {
    throw UsageError(
        "--max-buffered-bytes and --max-connection-buffered-bytes must be at least "
        "--max-message-bytes (a message must fit)");
  }
  return command;
}

// Serves until SIGINT or SIGTERM; throws what stops it from starting.
int serve(Command command) {
  sonic::ServerOptions& options = command.options;
  sonic::tools::StopSignals stop(command.exit_timeout);
  {
    auto executor = command.repositories.empty()
                        ? sonic::CpuExecutor::with_models(sonic::models::builtin(), command.threads)
                        : std::make_shared<sonic::CpuExecutor>(command.threads);
    executor->set_load_timeout(command.load_timeout);
    std::unique_ptr<sonic::repository::RepositoryWatch> watch;
    if (!command.repositories.empty()) {
      auto repository = std::make_shared<sonic::repository::Repository>(command.repositories);
      executor->set_source(repository, false);
      load_at_start(*executor, *repository, command.control_mode, command.models_to_load,
                    command.load_threads);
      if (command.control_mode == "poll") {
        watch = std::make_unique<sonic::repository::RepositoryWatch>(
            executor, repository, command.poll_period, report_change);
      }
    }
    sonic::Server server(executor, options);
    server.start();
    stop.serving();
    std::cout << "sonic-server listening on " << options.host << ":" << server.port() << std::endl;
    if (options.tcp_port) {
      std::cout << "sonic-server tcp listening on " << options.host << ":" << server.tcp_port()
                << std::endl;
    }
    if (options.metrics_port >= 0) {
      std::cout << "sonic-server metrics listening on " << options.host << ":"
                << server.metrics_port() << std::endl;
    }
    if (options.http_port >= 0) {
      std::cout << "sonic-server http listening on " << options.host << ":" << server.http_port()
                << std::endl;
    }
    const int signal = stop.wait_for_stop();
    std::cout << "sonic-server stopping (signal " << signal << ")" << std::endl;
    server.stop();
  }
  stop.stopped();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory_for_reuse();
  return sonic::tools::CommandLine::run("sonic-server",
                                        [&] { return serve(parse_args(argc, argv)); });
}
