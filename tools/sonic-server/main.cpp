// sonic-server: a KServe v2 / Triton-compatible gRPC inference server hosting sonic's built-in
// CPU models (simple, identity_fp32). The reference server for tests, demos and benchmarks: a
// thin program over the server library.
#include <sonic/builtin_models.hpp>
#include <sonic/server.hpp>
#include <sonic/sonic.hpp>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>

namespace {

void usage(std::ostream& out) {
  out << "usage: sonic-server [--host ADDR] [--port N] [--tcp-port N] [--threads N] [--io-threads "
         "N]\n"
         "                    [--no-shm] [--inline-models]\n"
         "  --host ADDR      address to listen on (default 127.0.0.1; 0.0.0.0 for all)\n"
         "  --port N         gRPC port (default 8001; 0 picks a free port)\n"
         "  --tcp-port N     also serve tcp:// and tcp+zstd:// clients on this port (0: a free "
         "one)\n"
         "  --threads N      model execution threads (default: one per core)\n"
         "  --io-threads N   network threads (default 1)\n"
         "  --no-shm         refuse Triton's shared memory extension (clients send tensors "
         "inline)\n"
         "  --inline-models  run models on the network threads: no hand-off per request, for\n"
         "                   models that take microseconds (a slow one stalls its connections)\n"
         "Prints 'sonic-server listening on HOST:PORT' once ready (and 'sonic-server tcp listening "
         "on\n"
         "HOST:PORT' with --tcp-port); stops on SIGINT/SIGTERM.\n";
}

unsigned long parse_number(std::string_view flag, const char* text, unsigned long max) {
  char* end = nullptr;
  unsigned long value = std::strtoul(text, &end, 10);
  if (!*text || *end || value > max) {
    std::cerr << "sonic-server: " << flag << " needs a number up to " << max << ", got '" << text
              << "'\n";
    std::exit(2);
  }
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  sonic::ServerOptions options;
  std::size_t threads = 0;
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
    if (i + 1 >= argc) {
      std::cerr << "sonic-server: unknown or incomplete option '" << arg << "'\n";
      usage(std::cerr);
      return 2;
    }
    const char* value = argv[++i];
    if (arg == "--host") {
      options.host = value;
    } else if (arg == "--port") {
      options.port = static_cast<std::uint16_t>(parse_number(arg, value, 65535));
    } else if (arg == "--tcp-port") {
      options.tcp_port = static_cast<std::uint16_t>(parse_number(arg, value, 65535));
    } else if (arg == "--threads") {
      threads = parse_number(arg, value, 1024);
    } else if (arg == "--io-threads") {
      options.io_threads = std::max(1ul, parse_number(arg, value, 64));
    } else {
      std::cerr << "sonic-server: unknown option '" << arg << "'\n";
      usage(std::cerr);
      return 2;
    }
  }

  // Block the stop signals before any thread starts, so that only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  try {
    auto executor = sonic::CpuExecutor::with_models(sonic::models::builtin(), threads);
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
