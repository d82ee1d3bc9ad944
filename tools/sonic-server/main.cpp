// sonic-server: a KServe v2 / Triton-compatible gRPC inference server hosting the models of
// Triton model repositories (ONNX, TorchScript), or sonic's built-in CPU models without one. The
// reference server for tests, demos and benchmarks: a thin program over the server library.
#include <sonic/builtin_models.hpp>
#include <sonic/repository/repository.hpp>
#include <sonic/repository/watch.hpp>
#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include <malloc.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "number_option.hpp"

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

void usage(std::ostream& out) {
  std::string backends;
  for (const auto& name : sonic::repository::backend_names()) {
    backends += (backends.empty() ? "" : ", ") + name;
  }
  if (backends.empty()) backends = "none (built without OpenCV DNN and libtorch)";
  out << R"(usage: sonic-server [OPTION]...
Serves the models of Triton model repositories, or without one sonic's built-in models
(simple, identity_fp32 and an identity_<type> of every other datatype, and Triton's
examples simple_string, simple_identity, simple_sequence), over KServe v2 gRPC,
Triton-compatible.

  --host ADDR        address to listen on (default 127.0.0.1; 0.0.0.0 for all)
  --port N           gRPC port (default 8001; 0 picks a free port)
  --tcp-port N       also serve tcp:// and tcp+zstd:// clients on this port (0: a free one)
  --threads N        model execution threads (default: one per core)
  --io-threads N     network threads (default 1)
  --inline-models    run every model on the network threads: no hand-off per request, for
                     models that take microseconds (a slow one stalls its connections)
  --quick-model-us N without --inline-models, a model whose recent executions took under N
                     microseconds each runs on the network thread, others on the model
                     threads (default 20; 0: none)

Models (as tritonserver's options):
  --model-repository PATH
                     a directory of models: PATH/NAME/config.pbtxt and PATH/NAME/1/model.onnx
                     (or model.pt); repeat for several. Backends here: )"
      << backends << R"(
  --model-control-mode MODE
                     none (default): every model of the repositories is loaded at start and
                     clients may not unload or load models; explicit: only --load-model
                     models are loaded, and clients may (RepositoryModelLoad, ...Unload);
                     poll: as none, and the repositories are read again every
                     --repository-poll-secs: new and changed models load, removed ones unload
  --load-model NAME  with explicit: load this model at start (repeat; '*' loads all)
  --repository-poll-secs N
                     with poll: seconds between reads of the repositories (default 15)
  A model that fails to load is reported with its reason and stays UNAVAILABLE; the others
  are served.

Network:
  --grpc-infer-response-compression-level LEVEL
                     none (default), low, medium or high, as Triton's: ModelInfer answers
                     to clients that accept it are compressed (low: gzip; medium, high:
                     deflate); compressed requests are always accepted

Shared memory (Triton's extension; see docs/shared-memory-security.md):
  --no-shm           refuse it (clients send tensors inline)
  --shm-access MODE  owner (default): a client maps only objects it owns, learned from the
                     kernel; any: any client maps any object the server can open (Triton)

Limits (SIZE takes K, M, G suffixes, powers of 1024; SECONDS may have decimals, 0 = never;
see docs/limits.md):
  --max-message-bytes SIZE              one request or answer (default 512M)
  --max-buffered-bytes SIZE             held for all clients at once (default 1G)
  --max-connection-buffered-bytes SIZE  held for one connection (default 512M)
  --connection-window-bytes SIZE        HTTP/2 bytes a client may send ahead (default 16M)
  --max-connections N                   open connections (default 4096)
  --max-concurrent-streams N            gRPC calls at once per connection (default 1024)
  --max-header-list-bytes SIZE          headers of one gRPC call (default 16K)
  --handshake-timeout SECONDS           to finish the handshake (default 10)
  --idle-timeout SECONDS                without a call (default 600)
  --stall-timeout SECONDS               stopped mid-message or not reading (default 30)
  --max-shm-regions N                   registered, all connections (default 1024)
  --max-connection-shm-regions N        registered by one connection (default 64)
  --max-shm-bytes SIZE                  mapped, all connections (default 64G)
  --max-connection-shm-bytes SIZE       mapped for one connection (default 16G)

Prints 'sonic-server listening on HOST:PORT' once ready (and 'sonic-server tcp listening on
HOST:PORT' with --tcp-port); stops on SIGINT/SIGTERM. Exit status: 0 stopped by a signal,
1 could not start, 2 bad command line.
)";
}

[[noreturn]] void bad_option(std::string_view flag, std::string_view what, const char* text) {
  std::cerr << "sonic-server: " << flag << " needs " << what << ", got '" << text
            << "' (sonic-server --help lists the options)\n";
  std::exit(2);
}

unsigned long long parse_number(std::string_view flag, const char* text, unsigned long long max) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (!*text || *end || *text == '-' || value > max) {
    bad_option(flag, "a number up to " + std::to_string(max), text);
  }
  return value;
}

// A byte count: digits and an optional K, M or G (powers of 1024).
unsigned long long parse_size(std::string_view flag, const char* text) {
  char* end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift) ++end;
  if (!*text || *text == '-' || *end || end == text || value > (~0ull >> shift)) {
    bad_option(flag, "a size in bytes (with K, M or G)", text);
  }
  return value << shift;
}

std::chrono::milliseconds parse_seconds(std::string_view flag, const char* text) {
  auto value = sonic::tools::finite_number(text);
  if (!value || *value < 0 || *value > 1e7) bad_option(flag, "seconds (0 or more)", text);
  return std::chrono::milliseconds(static_cast<long long>(*value * 1000));
}

// One line per model, as tritonserver prints its model table: READY, or why not.
void report(const std::string& model, const sonic::Result<void>& loaded,
            sonic::CpuExecutor& executor) {
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

// Every model of the repositories (modes none and poll), or those named (explicit; '*': all).
void load_at_start(sonic::CpuExecutor& executor, const sonic::repository::Repository& repository,
                   const std::string& mode, const std::vector<std::string>& named) {
  std::vector<std::string> models = repository.model_names();
  const bool all = mode != "explicit" || std::find(named.begin(), named.end(), "*") != named.end();
  if (!all) models = named;
  for (const auto& model : models) report(model, executor.load_model(model), executor);
}

}  // namespace

int main(int argc, char** argv) {
  keep_freed_memory_for_reuse();
  sonic::ServerOptions options;
  sonic::ServerLimits& limits = options.limits;
  std::size_t threads = 0;
  std::vector<std::string> repositories, models_to_load;
  std::string control_mode = "none";
  std::chrono::milliseconds poll_period{15000};
  using Setter = std::function<void(std::string_view flag, const char* value)>;
  auto size_of = [](auto& field) {
    return Setter([&field](std::string_view flag, const char* value) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(parse_size(flag, value));
    });
  };
  auto count_of = [](auto& field, unsigned long long max) {
    return Setter([&field, max](std::string_view flag, const char* value) {
      field = static_cast<std::remove_reference_t<decltype(field)>>(parse_number(flag, value, max));
    });
  };
  auto seconds_of = [](std::chrono::milliseconds& field) {
    return Setter(
        [&field](std::string_view flag, const char* value) { field = parse_seconds(flag, value); });
  };
  const std::vector<std::pair<std::string_view, Setter>> valued = {
      {"--host", [&](std::string_view, const char* v) { options.host = v; }},
      {"--port", count_of(options.port, 65535)},
      {"--tcp-port",
       [&](std::string_view f, const char* v) {
         options.tcp_port = static_cast<std::uint16_t>(parse_number(f, v, 65535));
       }},
      {"--threads", count_of(threads, 1024)},
      {"--io-threads", count_of(options.io_threads, 64)},
      {"--quick-model-us",
       [&](std::string_view f, const char* v) {
         options.quick_model_budget = std::chrono::microseconds(parse_number(f, v, 1000000));
       }},
      {"--shm-access",
       [&](std::string_view f, const char* v) {
         std::string_view mode = v;
         if (mode == "owner") {
           options.shared_memory_access = sonic::SharedMemoryAccess::Owner;
         } else if (mode == "any") {
           options.shared_memory_access = sonic::SharedMemoryAccess::Any;
         } else {
           bad_option(f, "'owner' or 'any'", v);
         }
       }},
      {"--model-repository", [&](std::string_view, const char* v) { repositories.push_back(v); }},
      {"--load-model", [&](std::string_view, const char* v) { models_to_load.push_back(v); }},
      {"--repository-poll-secs",
       [&](std::string_view f, const char* v) {
         poll_period =
             std::chrono::seconds(std::max<unsigned long long>(1, parse_number(f, v, 86400)));
       }},
      {"--model-control-mode",
       [&](std::string_view f, const char* v) {
         control_mode = v;
         if (control_mode != "none" && control_mode != "explicit" && control_mode != "poll") {
           bad_option(f, "'none', 'explicit' or 'poll'", v);
         }
         options.model_control = control_mode == "explicit";
       }},
      {"--grpc-infer-response-compression-level",
       [&](std::string_view f, const char* v) {
         using Level = sonic::ServerOptions::ResponseCompression;
         const std::string_view level = v;
         if (level == "none") {
           options.infer_response_compression = Level::None;
         } else if (level == "low") {
           options.infer_response_compression = Level::Low;
         } else if (level == "medium") {
           options.infer_response_compression = Level::Medium;
         } else if (level == "high") {
           options.infer_response_compression = Level::High;
         } else {
           bad_option(f, "'none', 'low', 'medium' or 'high'", v);
         }
       }},
      {"--max-message-bytes", size_of(options.max_message_bytes)},
      {"--max-buffered-bytes", size_of(limits.max_buffered_bytes)},
      {"--max-connection-buffered-bytes", size_of(limits.max_connection_buffered_bytes)},
      {"--connection-window-bytes",
       [&](std::string_view f, const char* v) {
         auto bytes = parse_size(f, v);
         if (bytes < 65535 || bytes > 0x7fffffff) bad_option(f, "64K to 2G - 1", v);
         options.connection_window_bytes = static_cast<std::uint32_t>(bytes);
       }},
      {"--max-connections", count_of(limits.max_connections, 1u << 20)},
      {"--max-concurrent-streams", count_of(options.max_concurrent_streams, 0x7fffffff)},
      {"--max-header-list-bytes", size_of(limits.max_header_list_bytes)},
      {"--handshake-timeout", seconds_of(limits.handshake_timeout)},
      {"--idle-timeout", seconds_of(limits.idle_timeout)},
      {"--stall-timeout", seconds_of(limits.stall_timeout)},
      {"--max-shm-regions", count_of(limits.max_shm_regions, 16384)},
      {"--max-connection-shm-regions", count_of(limits.max_connection_shm_regions, 16384)},
      {"--max-shm-bytes", size_of(limits.max_shm_bytes)},
      {"--max-connection-shm-bytes", size_of(limits.max_connection_shm_bytes)},
  };

  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      usage(std::cout);
      return 0;
    }
    if (arg == "--no-shm") {
      options.shared_memory = false;
      continue;
    }
    if (arg == "--inline-models") {
      options.inline_models = true;
      continue;
    }
    auto option = std::find_if(valued.begin(), valued.end(),
                               [&](const auto& entry) { return entry.first == arg; });
    if (option == valued.end()) {
      std::cerr << "sonic-server: unknown option '" << arg
                << "' (sonic-server --help lists the options)\n";
      return 2;
    }
    if (i + 1 >= argc) {
      std::cerr << "sonic-server: " << arg << " needs a value (sonic-server --help)\n";
      return 2;
    }
    option->second(arg, argv[++i]);
  }
  options.io_threads = std::max<std::size_t>(1, options.io_threads);
  if (!models_to_load.empty() && control_mode != "explicit") {
    std::cerr << "sonic-server: --load-model needs --model-control-mode explicit (in the "
                 "other modes every model of the repositories is loaded)\n";
    return 2;
  }
  if (repositories.empty() && (control_mode == "poll" || !models_to_load.empty())) {
    std::cerr << "sonic-server: --model-control-mode poll and --load-model need "
                 "--model-repository\n";
    return 2;
  }
  if (limits.max_connection_buffered_bytes < options.max_message_bytes ||
      limits.max_buffered_bytes < options.max_message_bytes) {
    std::cerr << "sonic-server: --max-buffered-bytes and --max-connection-buffered-bytes must be "
                 "at least --max-message-bytes (a message must fit)\n";
    return 2;
  }

  // Block the stop signals before any thread starts, so that only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  try {
    auto executor = repositories.empty()
                        ? sonic::CpuExecutor::with_models(sonic::models::builtin(), threads)
                        : std::make_shared<sonic::CpuExecutor>(threads);
    std::unique_ptr<sonic::repository::RepositoryWatch> watch;
    if (!repositories.empty()) {
      auto repository = std::make_shared<sonic::repository::Repository>(repositories);
      executor->set_source(repository, false);
      load_at_start(*executor, *repository, control_mode, models_to_load);
      if (control_mode == "poll") {
        watch = std::make_unique<sonic::repository::RepositoryWatch>(executor, repository,
                                                                     poll_period, report_change);
      }
    }
    sonic::Server server(executor, options);
    server.start();
    std::cout << "sonic-server listening on " << options.host << ":" << server.port() << std::endl;
    if (options.tcp_port) {
      std::cout << "sonic-server tcp listening on " << options.host << ":" << server.tcp_port()
                << std::endl;
    }
    int signal = 0;
    sigwait(&stop_signals, &signal);
    std::cout << "sonic-server stopping (signal " << signal << ")" << std::endl;
    server.stop();
  } catch (const sonic::Error& e) {
    std::cerr << "sonic-server: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
