// sonic-perf: load a KServe v2 endpoint through any sonic transport and measure it, point by
// point: a sweep of requests in flight or a fixed request rate, each point measured over windows
// until they agree (or a limit), after a warm-up.
//
//   sonic-perf --url grpc://127.0.0.1:8001 --model identity_fp32
//              --input INPUT0:FP32:1,1024:random --concurrency 1:64:x2 --plot curve.svg
//
// Progress goes to stderr; the table to stdout; --csv and --json write files too.
#include <sonic/sonic.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "callback_option.hpp"
#include "measure.hpp"
#include "options.hpp"
#include "report.hpp"
#include "stream_sender.hpp"
#include "sync_sender.hpp"

namespace {

using namespace sonic;
using namespace sonic::perf;

void usage(std::ostream& out) {
  out << "usage: sonic-perf --model NAME [options]\n"
         "  --url URL              endpoint (grpc://, grpc+shm://, tcp://, tcp+zstd://; default\n"
         "                         grpc://127.0.0.1:8001)\n"
         "  --input SPEC           NAME:DTYPE:D0,D1,...[:random|zero|sparse] or NAME=FILE.npy;\n"
         "                         repeat per input (default: from the model's metadata)\n"
         "  --concurrency SWEEP    requests in flight: N, N,M,..., FROM:TO:xFACTOR or\n"
         "                         FROM:TO:+STEP (1)\n"
         "  --rate R               fixed rate of R requests/s instead (with --poisson: random\n"
         "                         exponential gaps)\n"
         "  --callbacks WHERE      where completions run (ClientOptions::callbacks): network\n"
         "                         (the default), pool or inline\n"
         "  --streaming            send the requests on one stream (ModelStreamInfer) instead\n"
         "                         of a call each; a request's latency runs to its last\n"
         "                         response (decoupled models answer any number of times)\n"
         "  --sync                 blocking infer() calls, a thread per request in flight\n"
         "                         (perf_analyzer's default mode) instead of infer_async\n"
         "  --client-batch N       merge concurrent requests into one of at most N rows before\n"
         "                         sending (client-side batching; 0: the model's\n"
         "                         max_batch_size)\n"
         "  --batch-delay US       how long a client-side batch waits to fill (500)\n"
         "  --warmup S             seconds of load before measuring each point (1)\n"
         "  --window S             seconds per measurement window (2), or\n"
         "  --window-requests N    requests per window\n"
         "  --stability F          windows agree when throughput and p99 are within F (0.10)\n"
         "  --stable-windows N     ... over the last N windows (3); at most --max-windows (10)\n"
         "  --csv FILE  --json FILE  --plot FILE.svg\n"
         "Windows with failures are never stable; a window in which every request failed ends\n"
         "its point and the sweep. Exit status: 0 every request answered; 1 some failed (the\n"
         "table's failed column; the first error is printed) or the run could not go on (no\n"
         "server, a file that cannot be written); 2 a mistake on the command line.\n";
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "-h" || flag == "--help") {
      usage(std::cout);
      std::exit(0);
    }
    if (flag == "--poisson") {
      o.poisson = true;
      continue;
    }
    if (flag == "--streaming") {
      o.streaming = true;
      continue;
    }
    if (flag == "--sync") {
      o.sync = true;
      continue;
    }
    if (i + 1 >= argc) usage_error("option " + flag + " needs a value");
    std::string value = argv[++i];
    if (flag == "--url")
      o.url = value;
    else if (flag == "--model")
      o.model = value;
    else if (flag == "--input")
      o.inputs.push_back(parse_input(value));
    else if (flag == "--concurrency")
      o.concurrency = parse_sweep(value);
    else if (flag == "--rate")
      o.rate = parse_positive(flag, value);
    else if (flag == "--warmup")
      o.warmup_s = parse_positive(flag, value, true);
    else if (flag == "--window")
      o.window_s = std::max(0.05, parse_positive(flag, value));
    else if (flag == "--window-requests")
      o.window_requests = parse_count(flag, value);
    else if (flag == "--stability")
      o.stability = parse_positive(flag, value);
    else if (flag == "--stable-windows")
      o.stable_windows = parse_count(flag, value);
    else if (flag == "--max-windows")
      o.max_windows = parse_count(flag, value);
    else if (flag == "--client-batch")
      o.client_batch = parse_count(flag, value, 0);
    else if (flag == "--batch-delay")
      o.batch_delay_us = parse_count(flag, value, 0);
    else if (flag == "--callbacks") {
      auto where = bench::parse_callback_thread(value);
      if (!where) usage_error("--callbacks takes " + std::string(bench::kCallbackThreadNames));
      o.callbacks = *where;
    } else if (flag == "--csv")
      o.csv = value;
    else if (flag == "--json")
      o.json = value;
    else if (flag == "--plot")
      o.plot = value;
    else
      usage_error("unknown option " + flag);
  }
  if (o.model.empty()) usage_error("--model is required");
  if (o.sync && (o.streaming || o.rate > 0)) {
    usage_error("--sync runs a blocking call per thread: not with --streaming or --rate");
  }
  check_writable("--csv", o.csv);
  check_writable("--json", o.json);
  check_writable("--plot", o.plot);
  return o;
}

// The request every call sends: the inputs given, or the model's own with dynamic dims as 1.
std::vector<NamedTensor> inputs_for(Client& client, const Options& o) {
  std::mt19937 random(7);
  std::vector<InputSpec> specs = o.inputs;
  if (specs.empty()) {
    for (const auto& in : client.model_metadata(o.model).inputs) {
      InputSpec spec;
      spec.name = in.name;
      spec.dtype = in.dtype;
      for (auto d : in.shape) spec.shape.push_back(d < 0 ? 1 : d);
      specs.push_back(spec);
    }
  }
  std::vector<NamedTensor> tensors;
  for (const auto& spec : specs) tensors.push_back({spec.name, make_tensor(spec, random), {}});
  return tensors;
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
Point measure_point(Client& client, const Options& o, const std::vector<NamedTensor>& inputs,
                    bool decoupled, int concurrency, double rate) {
  auto make = [&] {
    InferRequest request(o.model);
    for (const auto& in : inputs) request.input(in.name, in.tensor);
    return request;
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
  LoadDriver driver(std::move(send), make, concurrency, rate, o.poisson);
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
    windows.push_back(
        summarize(std::move(latencies), failures, before, Counters::now(client, o.model)));
    Point& last = windows.back();
    last.first_error = std::move(first_error);
    sent += last.requests;
    std::fprintf(stderr, "  window %d: %.1f infer/s, p99 %.0f us%s\n", w + 1, last.throughput,
                 last.p99_us, last.failures ? " (with failures)" : "");
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
  for (auto field :
       {&Point::throughput, &Point::p50_us, &Point::p90_us, &Point::p99_us, &Point::client_cpu_us,
        &Point::wire_bytes, &Point::server_queue_us, &Point::server_compute_us}) {
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

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  ClientOptions client_options;
  client_options.callbacks = o.callbacks;
  // The statistics read around each window: a server that went away must not hold a window
  // open for the default ten seconds.
  client_options.control_timeout = std::chrono::seconds(1);
  if (o.client_batch) {
    BatchingOptions batching;
    batching.max_batch = *o.client_batch;
    batching.max_delay = std::chrono::microseconds(o.batch_delay_us);
    client_options.batching[o.model] = batching;
  }
  Client client(o.url, client_options);
  auto inputs = inputs_for(client, o);
  const bool decoupled = is_decoupled(client, o.model);
  if (decoupled && !o.streaming) {
    usage_error("model '" + o.model + "' is decoupled: it answers only on a stream (--streaming)");
  }
  std::vector<Point> points;
  if (o.rate > 0) {
    std::fprintf(stderr, "sonic-perf: %s at %.1f requests/s%s%s\n", o.model.c_str(), o.rate,
                 o.poisson ? " (Poisson)" : "", o.streaming ? ", on a stream" : "");
    points.push_back(measure_point(client, o, inputs, decoupled, 0, o.rate));
  } else {
    for (int c : o.concurrency) {
      std::fprintf(stderr, "sonic-perf: %s with %d in flight%s\n", o.model.c_str(), c,
                   o.streaming ? " on a stream" : "");
      points.push_back(measure_point(client, o, inputs, decoupled, c, 0));
      if (points.back().unanswered) {
        std::fprintf(stderr, "sonic-perf: stopping the sweep: no request is answered\n");
        break;
      }
    }
  }
  print_table(points);
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
  if (!o.csv.empty()) write_csv(o.csv, points);
  if (!o.json.empty()) write_json(o.json, o.url, o.model, points);
  if (!o.plot.empty()) write_svg(o.plot, o.model + " at " + o.url, points);
  // Exit codes: 0 every request answered, 1 some failed (the table's "failed" column, and the
  // first error below), 2 a usage error or nothing could be measured.
  int failed_points = 0;
  for (const auto& p : points) {
    if (p.failures == 0 && !p.unanswered) continue;
    if (failed_points++ == 0) {
      std::fprintf(stderr, "sonic-perf: %ld of %ld requests failed at %s, the first with: %s\n",
                   p.failures, p.requests, p.load.c_str(), p.first_error.c_str());
    }
  }
  return failed_points > 0 ? 1 : 0;
} catch (const UsageError& e) {
  std::cerr << "sonic-perf: " << e.what() << '\n';
  return 2;
} catch (const std::exception& e) {
  std::cerr << "sonic-perf: " << e.what() << '\n';
  return 1;
}
