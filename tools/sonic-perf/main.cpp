// sonic-perf: load a KServe v2 endpoint through any sonic transport and measure it, point by
// point: a sweep of requests in flight or a fixed request rate, each point measured over windows
// until they agree (or a limit), after a warm-up.
//
//   sonic-perf -u grpc://127.0.0.1:8001 -m identity_fp32
//              --input INPUT0=FP32:1x1024:random --concurrency 1:64:x2 --plot curve.svg
//
// Progress goes to stderr; the table to stdout; --csv and --json write files too.
#include <sonic/credentials.hpp>
#include <sonic/sonic.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "callback_option.hpp"
#include "command_line.hpp"
#include "measure.hpp"
#include "options.hpp"
#include "report.hpp"
#include "request_plan.hpp"
#include "sequences.hpp"
#include "stream_sender.hpp"
#include "sweep.hpp"
#include "sync_sender.hpp"
#include "tls_options.hpp"

namespace {

using namespace sonic;
using namespace sonic::perf;

// The command line as Options; throws UsageError, exits after --help and --version.
Options parse(int argc, char** argv) {
  Options o;
  tools::CommandLine line(
      "sonic-perf",
      "usage: sonic-perf -m MODEL [options]\n"
      "Loads a KServe v2 endpoint through any sonic transport and measures it, point by point:\n"
      "a sweep of requests in flight or of request rates, each point measured over windows\n"
      "until they agree, after a warm-up. The options perf_analyzer users know (-m, -u, -b,\n"
      "--shape, --input-data, --percentile, --latency-threshold, --binary-search,\n"
      "--concurrency-range, --request-rate-range, -i, the sequence options) mean what they mean\n"
      "there.");
  line.section("What to load:")
      .option("-m, --model", "NAME", "the model (required)",
              [&](const std::string& v) { o.model = v; })
      .option("-u, --url", "URL",
              "endpoint: grpc://, grpcs://, grpc+shm://, tcp://, tcp+zstd:// (or with "
              "+tls), http://, https:// HOST:PORT; "
              "without a scheme grpc:// (default grpc://127.0.0.1:8001); several, "
              "comma-separated, share the load",
              [&](const std::string& v) {
                o.urls = tools::comma_list("--url", v);
                o.urls_given = true;
              })
      .option("-i, --protocol", "grpc|http",
              "perf_analyzer's -i: the scheme of a -u without one, and without -u "
              "127.0.0.1:8000 for http (default grpc)",
              [&](const std::string& v) { o.protocol = v; })
      .option("--token-file", "FILE",
              "send FILE's bearer token with every call (sonic::TokenFile: read again "
              "when the file changes)",
              [&](const std::string& v) { o.token_file = v; });
  tools::add_tls_options(line, o.tls);
  line.option("--input", "NAME=SPEC",
              "NAME=DTYPE:SHAPE[:random|zero|sparse] or NAME=@FILE.npy, as "
              "sonic-infer's (SHAPE: 1x16 or 1,16); repeat per input (default: "
              "the model's inputs, random)",
              [&](const std::string& v) { o.inputs.push_back(parse_input(v)); })
      .option("-b, --batch-size", "N", "rows of each request, for a model that batches (1)",
              [&](const std::string& v) { o.batch_size = parse_count("-b", v); })
      .option("--shape", "NAME:DIMS",
              "the variable dimensions of an input of the model (batch dimension "
              "excluded): --shape IMAGE:3,224,224; repeat per input",
              [&](const std::string& v) { o.shapes.insert(parse_shape_option(v)); })
      .option("--input-data", "FILE.json",
              "the inputs of each request, and outputs to check, from a file in "
              "perf_analyzer's format: {\"data\": [...], \"validation_data\": [...]}; "
              "requests cycle through its steps, an answer that differs fails",
              [&](const std::string& v) { o.input_data = v; });
  line.section("How much load:")
      .option("--concurrency", "SWEEP",
              "requests in flight: N, N,M,..., FROM:TO[:STEP] or FROM:TO:xFACTOR (1)",
              [&](const std::string& v) { o.concurrency = parse_sweep("--concurrency", v); })
      .option("--concurrency-range", "FROM:TO[:STEP]", "the same, perf_analyzer's name",
              [&](const std::string& v) { o.concurrency = parse_sweep("--concurrency-range", v); })
      .option("--rate", "SWEEP",
              "requests started per second instead, whatever is in flight; a sweep "
              "as --concurrency's (--poisson: random exponential gaps)",
              [&](const std::string& v) { o.rates = parse_sweep("--rate", v); })
      .option("--request-rate-range", "FROM:TO[:STEP]", "the same, perf_analyzer's name",
              [&](const std::string& v) { o.rates = parse_sweep("--request-rate-range", v); })
      .flag("--poisson", "exponential gaps between the requests of --rate",
            [&] { o.poisson = true; })
      .option("-l, --latency-threshold", "MS",
              "the highest load whose --percentile latency stays under MS: the "
              "sweep stops at the first point above it, and says which was highest",
              [&](const std::string& v) {
                o.latency_threshold_us = parse_positive("--latency-threshold", v) * 1000;
              })
      .flag("--binary-search",
            "with --latency-threshold: bisect the sweep's range (FROM:TO) instead "
            "of measuring every point of it",
            [&] { o.binary_search = true; });
  line.section("How requests go:")
      .option("--callbacks", "WHERE",
              "where completions run (ClientOptions::callbacks): network (the "
              "default), pool or inline",
              [&](const std::string& v) {
                auto where = bench::parse_callback_thread(v);
                if (!where) {
                  usage_error("--callbacks takes " + std::string(bench::kCallbackThreadNames) +
                              ", not '" + v + "'");
                }
                o.callbacks = *where;
              })
      .flag("--streaming",
            "send the requests on one stream (ModelStreamInfer) instead of a call "
            "each; a request's latency runs to its last response (decoupled models "
            "answer any number of times)",
            [&] { o.streaming = true; })
      .flag("--sync",
            "blocking infer() calls, a thread per request in flight "
            "(perf_analyzer's default mode) instead of infer_async",
            [&] { o.sync = true; })
      .flag("--sync-shared",
            "--sync through the shared connections and their network thread "
            "(drive_blocking_calls off) instead of a connection each thread drives",
            [&] { o.sync = o.sync_shared = true; })
      .option("--client-batch", "N",
              "merge concurrent requests into one of at most N rows before sending "
              "(client-side batching; 0: the model's max_batch_size)",
              [&](const std::string& v) { o.client_batch = parse_count("--client-batch", v, 0); })
      .option("--batch-delay", "US", "how long a client-side batch waits to fill (500)",
              [&](const std::string& v) { o.batch_delay_us = parse_count("--batch-delay", v, 0); });
  line.section("Sequences (for a model whose configuration has sequence_batching):")
      .option("--sequence-length", "N",
              "requests per sequence (20; with --input-data, its steps unless given)",
              [&](const std::string& v) {
                o.sequences.length = parse_count("--sequence-length", v);
                o.sequences.length_given = true;
              })
      .option("--sequence-length-variation", "PERCENT",
              "each sequence's length within +/- PERCENT of --sequence-length (20)",
              [&](const std::string& v) {
                o.sequences.variation = parse_positive("--sequence-length-variation", v, true);
              })
      .option("--sequence-id-range", "START[:END]",
              "sequence ids from START, wrapping before END (default 1, no END)",
              [&](const std::string& v) { parse_sequence_id_range(v, o.sequences); })
      .option("--start-sequence-id", "N", "the first sequence id alone (--sequence-id-range N)",
              [&](const std::string& v) { parse_sequence_id_range(v, o.sequences); })
      .option("--num-of-sequences", "N", "sequences in progress with --rate (4)",
              [&](const std::string& v) {
                o.sequences.rate_sequences = parse_count("--num-of-sequences", v);
              })
      .flag("--serial-sequences",
            "one request of a sequence out at a time: always so here (perf_analyzer's "
            "option, accepted)",
            [] {});
  line.section("How each point is measured:")
      .option("--warmup", "S", "seconds of load before measuring each point (1)",
              [&](const std::string& v) { o.warmup_s = parse_positive("--warmup", v, true); })
      .option(
          "--window", "S", "seconds per measurement window (2)",
          [&](const std::string& v) { o.window_s = std::max(0.05, parse_positive("--window", v)); })
      .option(
          "--window-requests", "N", "requests per window instead",
          [&](const std::string& v) { o.window_requests = parse_count("--window-requests", v); })
      .option("--percentile", "P",
              "the latency percentile (1 to 99) that stability and the threshold "
              "use (99); the table shows p50, p90, p95, p99 and it",
              [&](const std::string& v) {
                o.percentile = parse_count("--percentile", v);
                if (o.percentile > 99) usage_error("--percentile takes 1 to 99, not '" + v + "'");
              })
      .option("--stability", "F", "windows agree when throughput and latency are within F (0.10)",
              [&](const std::string& v) { o.stability = parse_positive("--stability", v); })
      .option("--stable-windows", "N", "... over the last N windows (3)",
              [&](const std::string& v) { o.stable_windows = parse_count("--stable-windows", v); })
      .option("--max-windows", "N", "windows at most per point (10)",
              [&](const std::string& v) { o.max_windows = parse_count("--max-windows", v); });
  line.section("Results (checked before measuring; the table goes to stdout, progress to stderr):")
      .option("--csv", "FILE", "the points as CSV", [&](const std::string& v) { o.csv = v; })
      .option("--json", "FILE", "the points as JSON", [&](const std::string& v) { o.json = v; })
      .option("--plot", "FILE.svg", "latency against throughput",
              [&](const std::string& v) { o.plot = v; });
  line.epilogue(
      "A sequence model: each request in flight (with --rate, each of --num-of-sequences)\n"
      "keeps a sequence going, one request of it at a time, START on its first request and END\n"
      "on its last; the sequences in progress get their END after each point.\n"
      "Windows with failures are never stable; a window in which every request failed ends its\n"
      "point and the sweep. Exit status: 0 every request answered (and, with\n"
      "--latency-threshold, some load met it); 1 some failed (the table's failed column; the\n"
      "first error is printed), no load met the threshold, or the run could not go on (no\n"
      "server, a file that cannot be written); 2 a mistake on the command line.\n");
  std::vector<std::string> extra = line.parse(argc, argv);
  if (!extra.empty()) usage_error("unexpected argument '" + extra.front() + "'");
  if (o.model.empty()) usage_error("-m/--model is required");
  if (o.sync && (o.streaming || !o.rates.empty())) {
    usage_error("--sync runs a blocking call per thread: not with --streaming or --rate");
  }
  if (!o.inputs.empty() && (!o.input_data.empty() || !o.shapes.empty() || o.batch_size > 1)) {
    usage_error("--input gives whole tensors: not with --input-data, --shape or -b");
  }
  if (o.binary_search && o.latency_threshold_us <= 0) {
    usage_error("--binary-search needs --latency-threshold");
  }
  apply_protocol(o);
  // perf_analyzer refuses the same: more sequences at once than ids would reuse an id in use.
  const std::size_t at_once =
      o.rates.empty()
          ? static_cast<std::size_t>(*std::max_element(o.concurrency.begin(), o.concurrency.end()))
          : static_cast<std::size_t>(o.sequences.rate_sequences);
  if (o.sequences.id_range < at_once) {
    usage_error("--sequence-id-range holds " + std::to_string(o.sequences.id_range) + " ids for " +
                std::to_string(at_once) + " sequences at once: sequence ids would collide");
  }
  check_writable("--csv", o.csv);
  check_writable("--json", o.json);
  check_writable("--plot", o.plot);
  return o;
}

// Whether the model is decoupled (any number of responses per request): its configuration
// says so in model_transaction_policy, which sonic's client prints as compact JSON.
bool is_decoupled(Client& client, const std::string& model) {
  try {
    return client.model_config(model).find("\"decoupled\":true") != std::string::npos;
  } catch (const Error&) {
    return false;  // a server without ModelConfig serves no decoupled model sonic-perf knows
  }
}

// Measures one load level: warm-up, then windows until stable or the limit.
Point measure_point(Client& client, const Options& o, const std::vector<PlannedRequest>& plan,
                    bool decoupled, bool sequential, int concurrency, double rate) {
  // Requests cycle through the plan; the step a request came from is found again by its first
  // input's bytes, which no two steps share, to check its answer.
  std::atomic<std::size_t> next{0};
  std::optional<Sequences> sequences;
  if (sequential) {
    sequences.emplace(o.sequences,
                      static_cast<std::size_t>(rate > 0 ? o.sequences.rate_sequences : concurrency),
                      o.input_data.empty() ? 0 : plan.size());
  }
  auto make = [&] {
    if (sequences) return InferRequest(o.model);  // its sequence's turn gives the inputs
    const PlannedRequest& step = plan[next.fetch_add(1, std::memory_order_relaxed) % plan.size()];
    InferRequest request(o.model);
    for (const auto& in : step.inputs) request.input(in.name, in.tensor);
    return request;
  };
  std::unordered_map<const std::uint8_t*, const PlannedRequest*> step_by_first_input;
  for (const auto& step : plan) {
    if (!step.inputs.empty()) step_by_first_input[step.inputs[0].tensor.data()] = &step;
  }
  auto step_of = [&step_by_first_input](const InferRequest& request) -> const PlannedRequest* {
    if (request.inputs().empty()) return nullptr;
    auto found = step_by_first_input.find(request.inputs()[0].tensor.data());
    return found == step_by_first_input.end() ? nullptr : found->second;
  };
  std::optional<StreamSender> stream;
  std::optional<SyncSender> blocking;
  LoadDriver::Send send = [&client](InferRequest request, Callback<InferResult> done) {
    client.infer_async(std::move(request), std::move(done));
  };
  if (o.streaming) {
    stream.emplace(client, decoupled);
    send = [&stream](InferRequest request, Callback<InferResult> done) {
      stream->send(std::move(request), std::move(done));
    };
  } else if (o.sync) {
    blocking.emplace(client, concurrency);
    send = [&blocking](InferRequest request, Callback<InferResult> done) {
      blocking->send(std::move(request), std::move(done));
    };
  }
  const bool validating = std::any_of(plan.begin(), plan.end(),
                                      [](const PlannedRequest& p) { return !p.expected.empty(); });
  if (validating) {
    // An answer that differs from the file's validation_data is a failed request.
    send = [inner = std::move(send), step_of](InferRequest request, Callback<InferResult> done) {
      const PlannedRequest* step = step_of(request);
      inner(std::move(request), [step, done = std::move(done)](Result<InferResult> r) mutable {
        if (r && step) {
          if (std::string why = mismatch(*step, *r); !why.empty()) {
            r = Error(StatusCode::Internal, why);
          }
        }
        done(std::move(r));
      });
    };
  }
  if (sequences) send = in_sequences(std::move(send), *sequences, plan);
  LoadDriver driver(send, make, concurrency, rate, o.poisson);
  long failures = 0;
  auto warmup = driver.run(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(o.warmup_s)),
                           0, failures);
  long sent = static_cast<long>(warmup.size()) + failures;  // what the server saw, all told
  std::vector<Point> windows;
  bool unanswered = false;
  for (int w = 0; w < o.max_windows; ++w) {
    auto before = Counters::now(client, o.model);
    auto until = before.at + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(o.window_s));
    std::string first_error;
    auto latencies = driver.run(until, o.window_requests, failures, &first_error);
    windows.push_back(summarize(std::move(latencies), failures, before,
                                Counters::now(client, o.model), o.percentile));
    Point& last = windows.back();
    last.first_error = std::move(first_error);
    sent += last.requests;
    std::fprintf(stderr, "  window %d: %.1f infer/s, p%d %.0f us%s\n", w + 1, last.throughput,
                 o.percentile, last.chosen_us, last.failures ? " (with failures)" : "");
    if (last.failures == last.requests) {
      // Nothing is answered any more (the server went away, the model was unloaded): more
      // windows would only measure errors.
      std::fprintf(stderr, "  no answer in window %d%s%s\n", w + 1,
                   last.first_error.empty() ? "" : ": ", last.first_error.c_str());
      unanswered = true;
      break;
    }
    if (stable(windows, o.stable_windows, o.stability)) break;
  }
  if (sequences) sequences->end_all(send, make);
  // The point: the last stable_windows windows, merged by their medians.
  std::size_t use =
      std::min<std::size_t>(windows.size(), static_cast<std::size_t>(o.stable_windows));
  std::vector<Point> last(windows.end() - static_cast<std::ptrdiff_t>(use), windows.end());
  auto med = [&](double Point::*field) {
    std::vector<double> v;
    for (const auto& p : last) v.push_back(p.*field);
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  Point p;
  p.all_requests = sent;
  for (const auto& w : last) {
    p.requests += w.requests;
    p.failures += w.failures;
    p.seconds += w.seconds;
    if (p.first_error.empty()) p.first_error = w.first_error;
  }
  for (auto field : {&Point::throughput, &Point::p50_us, &Point::p90_us, &Point::p95_us,
                     &Point::p99_us, &Point::chosen_us, &Point::client_cpu_us, &Point::wire_bytes,
                     &Point::server_queue_us, &Point::server_compute_us}) {
    p.*field = med(field);
  }
  for (const auto& w : last) p.max_us = std::max(p.max_us, w.max_us);
  p.stable = stable(windows, o.stable_windows, o.stability);
  if (rate > 0 && p.throughput < (1 - o.stability) * rate) {
    // Answers slower than asked pile up in flight: the latencies grow without bound and say
    // nothing of the server at that rate.
    std::fprintf(stderr, "  overloaded: %.0f answers/s for %.0f requests/s asked\n", p.throughput,
                 rate);
    p.stable = false;
  }
  p.unanswered = unanswered;
  p.concurrency = concurrency;
  p.rate = rate;
  p.load = rate > 0 ? "rate " + std::to_string(static_cast<int>(rate)) + "/s"
                    : "concurrency " + std::to_string(concurrency);
  return p;
}

int run(const Options& o) {
  ClientOptions client_options;
  client_options.endpoints = o.urls;
  client_options.tls = o.tls;
  if (!o.token_file.empty()) client_options.bearer_token = TokenFile(o.token_file);
  client_options.callbacks = o.callbacks;
  client_options.drive_blocking_calls = !o.sync_shared;
  // The statistics read around each window: a server that went away must not hold a window
  // open for the default ten seconds.
  client_options.control_timeout = std::chrono::seconds(1);
  if (o.client_batch) {
    BatchingOptions batching;
    batching.max_batch = *o.client_batch;
    batching.max_delay = std::chrono::microseconds(o.batch_delay_us);
    client_options.batching[o.model] = batching;
  }
  Client client(client_options);
  const std::vector<PlannedRequest> plan = plan_requests(client, o);
  const bool decoupled = is_decoupled(client, o.model);
  const bool sequential = is_sequence_model(client, o.model);
  if (sequential && o.client_batch) {
    usage_error("model '" + o.model + "' keeps sequences: requests of different sequences " +
                "cannot be merged (--client-batch)");
  }
  if (decoupled && !o.streaming) {
    usage_error("model '" + o.model + "' is decoupled: it answers only on a stream (--streaming)");
  }
  const bool by_rate = !o.rates.empty();
  std::vector<Point> points = sweep(o, [&](int load) {
    if (by_rate) {
      std::fprintf(stderr, "sonic-perf: %s at %d requests/s%s%s\n", o.model.c_str(), load,
                   o.poisson ? " (Poisson)" : "", o.streaming ? ", on a stream" : "");
      return measure_point(client, o, plan, decoupled, sequential, 0, load);
    }
    std::fprintf(stderr, "sonic-perf: %s with %d in flight%s\n", o.model.c_str(), load,
                 o.streaming ? " on a stream" : "");
    return measure_point(client, o, plan, decoupled, sequential, load, 0);
  });
  print_table(points, o.percentile);
  if (o.client_batch) {
    const ClientStats stats = client.stats();
    std::fprintf(stderr,
                 "sonic-perf: client-side batching merged %llu requests into %llu (%.1f per "
                 "merged request)\n",
                 static_cast<unsigned long long>(stats.batched_requests),
                 static_cast<unsigned long long>(stats.merged_requests),
                 stats.merged_requests ? static_cast<double>(stats.batched_requests) /
                                             static_cast<double>(stats.merged_requests)
                                       : 0.0);
  }
  const std::string where = o.urls.front() + (o.urls.size() > 1 ? " and others" : "");
  if (!o.csv.empty()) write_csv(o.csv, points, o.percentile);
  if (!o.json.empty()) write_json(o.json, where, o.model, points, o.percentile);
  if (!o.plot.empty()) write_svg(o.plot, o.model + " at " + where, points);
  // Exit codes: 0 every request answered, 1 some failed (the table's "failed" column, and the
  // first error below) or no load met the threshold, 2 a usage error.
  int failed_points = 0;
  for (const auto& p : points) {
    if (p.failures == 0 && !p.unanswered) continue;
    if (failed_points++ == 0) {
      std::fprintf(stderr, "sonic-perf: %ld of %ld requests failed at %s, the first with: %s\n",
                   p.failures, p.requests, p.load.c_str(), p.first_error.c_str());
    }
  }
  bool threshold_met = o.latency_threshold_us <= 0 || report_threshold(o, points);
  return failed_points > 0 || !threshold_met ? tools::kExitFailure : tools::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return tools::CommandLine::run("sonic-perf", [&] { return run(parse(argc, argv)); });
}
