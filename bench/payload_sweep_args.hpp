// The command line of the payload-size benchmarks (sonic-shm-bench, sonic-cuda-shm-bench):
// round trips from 64 KiB to --max-mib, each the median of --repeats runs, against the server on
// 127.0.0.1:--port. Read with the tools' command-line reader (-h, --opt=value, exit status 2).
#pragma once

#include <cstddef>
#include <string>

#include "command_line.hpp"
#include "number_option.hpp"

namespace sonic::bench {

struct PayloadSweepArgs {
  int port = 0;  ///< 0: the program's default (an in-process server, or none)
  int repeats = 5;
  std::size_t max_mib = 256;
};

/// Reads argv; `usage` is the help's first lines. Throws tools::UsageError.
inline PayloadSweepArgs parse_payload_sweep(const std::string& program, const std::string& usage,
                                            int argc, char** argv, PayloadSweepArgs args = {}) {
  auto count = [](const char* flag, int least, int most) {
    return [flag, least, most](const std::string& text) {
      auto value = tools::whole_number(text);
      if (!value || *value < least || *value > most) {
        throw tools::UsageError(std::string(flag) + " takes a whole number from " +
                                std::to_string(least) + " to " + std::to_string(most) + ", not '" +
                                text + "'");
      }
      return static_cast<int>(*value);
    };
  };
  tools::CommandLine line(program, usage);
  line.option("--port", "P", "the server on 127.0.0.1:P",
              [&](const std::string& v) { args.port = count("--port", 1, 65535)(v); })
      .option("--repeats", "N", "runs per size, whose median is reported (5)",
              [&](const std::string& v) { args.repeats = count("--repeats", 1, 1000)(v); })
      .option("--max-mib", "M", "the largest payload, in MiB (256)", [&](const std::string& v) {
        args.max_mib = static_cast<std::size_t>(count("--max-mib", 1, 4096)(v));
      });
  if (!line.parse(argc, argv).empty()) throw tools::UsageError("unexpected argument");
  return args;
}

}  // namespace sonic::bench
