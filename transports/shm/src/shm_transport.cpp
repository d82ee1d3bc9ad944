// The grpc+shm:// transport: KServe v2 gRPC for control, Triton's shared memory extension for
// tensors. Inputs are copied into pooled regions (or found already in a user's SharedBuffer),
// outputs land in regions and come back as views of them; only a small message crosses the
// socket. A server that cannot map our memory (another host, another IPC namespace, no
// extension) gets plain gRPC, logged once, never an error.
// Over 500 lines: the region pool's users (inputs, outputs, registration) share its state.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "client/completion_thread.hpp"
#include "protocol/control_calls.hpp"
#include "protocol/control_codec.hpp"
#include "protocol/names.hpp"
#include "region_pool.hpp"
#include "server_errors.hpp"
#include "user_regions.hpp"

// sonic::grpc's anchor: this transport's requests travel over grpc://, and the reference makes
// libsonic_grpc a dependency of this library, so that linking sonic::shm alone is enough.
extern "C" int sonic_grpc_registration_anchor;
[[maybe_unused]] __attribute__((used)) static int* const grpc_anchor =
    &sonic_grpc_registration_anchor;

namespace sonic::shm {

namespace {

constexpr std::size_t kAlign = 64;  // every tensor starts on a cache line
std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

Parameters place(const std::string& region, std::size_t offset, std::size_t bytes) {
  Parameters where;
  where[protocol::kSharedMemoryRegion] = region;
  where[protocol::kSharedMemoryByteSize] = static_cast<std::int64_t>(bytes);
  if (offset) where[protocol::kSharedMemoryOffset] = static_cast<std::int64_t>(offset);
  return where;
}

// Calls `visit` with each region a tensor of `request` is placed in by parameters. Such a
// tensor has no bytes in the request (a descriptor, or an output the caller reads from its
// region): the request cannot go without that region.
template <typename Visit>
void for_each_named_region(const InferRequest& request, Visit visit) {
  auto named = [&visit](const Parameters& parameters) {
    auto it = parameters.find(protocol::kSharedMemoryRegion);
    if (it == parameters.end()) return;
    if (const auto* region = std::get_if<std::string>(&it->second)) visit(*region);
  };
  for (const auto& input : request.inputs()) named(input.parameters);
  for (const auto& output : request.outputs()) named(output.parameters);
}

bool names_region(const InferRequest& request, const std::string& name) {
  bool found = false;
  for_each_named_region(request, [&](const std::string& region) { found |= region == name; });
  return found;
}

// One request on its way through shared memory.
struct Exchange {
  const InferRequest* original = nullptr;  // the caller's, valid until `done` has run
  InferRequest wire{""};
  Deadline deadline;
  std::shared_ptr<CancelSignal> cancel;
  Callback<InferResult> done;
  std::shared_ptr<Lease> lease;  // null when every tensor is in user memory or goes by gRPC
  std::vector<std::shared_ptr<const UserRegion>> user_regions;  // named by the request
  struct Output {
    std::string name;
    std::size_t offset = 0;    // in the lease
    std::size_t capacity = 0;  // bytes reserved
  };
  std::vector<Output> outputs;  // outputs placed in the lease
  bool retried = false;
};

class ShmTransport final : public Transport {
 public:
  // The two gRPC transports come from the registry, as a user's would: one for requests and
  // control calls, one for registrations, so that regions can still be unregistered after the
  // first has completed every request with CANCELLED.
  ShmTransport(std::unique_ptr<Transport> calls, std::unique_ptr<Transport> control,
               const Endpoint& endpoint, const ClientOptions& options)
      : url_(endpoint.url),
        options_(options),
        pool_(std::make_shared<RegionPool>(options.shared_memory.pool_bytes,
                                           options.shared_memory.min_region_bytes)),
        calls_(std::move(calls)),
        control_(std::move(control)) {}

  ~ShmTransport() override {
    {
      std::lock_guard<std::mutex> lock(calls_mutex_);
      closing_ = true;
    }
    calls_.reset();  // every request in flight completes with CANCELLED
    unregister_everything();
    control_.reset();
  }

  void infer_async(const InferRequest& request, Deadline deadline,
                   std::shared_ptr<CancelSignal> cancel, Callback<InferResult> done) override {
    auto exchange = std::make_shared<Exchange>();
    exchange->original = &request;
    exchange->deadline = deadline;
    exchange->cancel = std::move(cancel);
    exchange->done = std::move(done);
    if (plain_) {
      // Regions the caller names still need registering: their tensors have no bytes here.
      for_each_named_region(request, [&](const std::string& name) {
        if (auto region = find_region(name)) exchange->user_regions.push_back(region);
      });
      return register_then_send(exchange, /*plain=*/true);
    }
    if (!prepare(*exchange)) return send_plain(exchange);
    register_then_send(exchange, /*plain=*/false);
  }

  void control_async(ControlRequest request, Deadline deadline,
                     Callback<ControlAnswer> done) override {
    auto* asked = std::get_if<ModelMetadataRequest>(&request);
    if (!asked) return calls_->control_async(std::move(request), deadline, std::move(done));
    // The client fetches metadata to validate inputs before a model's first request: keep a
    // copy, which names the outputs to place in shared memory from that first request on.
    ModelRef key = asked->model;
    calls_->control_async(
        std::move(request), deadline,
        [this, key = std::move(key), done = std::move(done)](Result<ControlAnswer> answer) mutable {
          if (answer) {
            if (auto* metadata = std::get_if<ModelMetadata>(&*answer)) {
              std::lock_guard<std::mutex> lock(mutex_);
              metadata_requested_.insert(key);
              metadata_[key] = *metadata;
            }
          }
          done(std::move(answer));
        });
  }
  // A stream's requests carry their tensors inline, over the gRPC transport.
  Result<std::unique_ptr<TransportStream>> open_stream(
      Deadline deadline, std::function<void(StreamResponse)> on_response,
      Callback<void> done) override {
    return calls_->open_stream(deadline, std::move(on_response), std::move(done));
  }

 private:
  // Builds the wire request: inputs into the lease (or found in user regions), outputs
  // reserved in the lease where their size can be foreseen. False: send it plain (the pool
  // is exhausted).
  bool prepare(Exchange& x) {
    const InferRequest& in = *x.original;
    learn_metadata(in);
    std::size_t input_bytes = 0;
    std::vector<bool> copy(in.inputs().size(), false);
    for (std::size_t i = 0; i < in.inputs().size(); ++i) {
      const NamedTensor& t = in.inputs()[i];
      if (auto it = t.parameters.find(protocol::kSharedMemoryRegion); it != t.parameters.end()) {
        if (const auto* name = std::get_if<std::string>(&it->second)) {
          if (auto region = find_region(*name)) x.user_regions.push_back(region);
        }
        continue;  // placed by the caller
      }
      std::size_t offset = 0;
      if (region_holding(t.tensor.data(), t.tensor.byte_size(), &offset)) continue;
      copy[i] = true;
      input_bytes += align_up(t.tensor.byte_size());
    }
    // Outputs: those requested, or every output the metadata lists.
    std::vector<RequestedOutput> outputs = in.outputs();
    if (outputs.empty()) {
      for (const auto& name : known_outputs(in)) outputs.push_back({name, {}});
    }
    std::size_t output_bytes = 0;
    std::vector<std::size_t> predicted(outputs.size(), 0);
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      if (auto it = outputs[o].parameters.find(protocol::kSharedMemoryRegion);
          it != outputs[o].parameters.end()) {
        // The caller's region (a CudaBuffer, a SharedBuffer): registered before the request
        // as an input's is, also when no input is in it.
        if (const auto* name = std::get_if<std::string>(&it->second)) {
          if (auto region = find_region(*name)) x.user_regions.push_back(region);
        }
        continue;
      }
      predicted[o] = predict(in, outputs[o].name);
      output_bytes += align_up(predicted[o]);
    }
    if (input_bytes + output_bytes > 0) {
      x.lease = pool_->acquire(input_bytes + output_bytes);
      unregister(pool_->take_evicted(), false);
      if (!x.lease) return false;
    }

    InferRequest& w = x.wire = InferRequest(in.model_name(), in.model_version());
    w.id(in.request_id());
    for (const auto& [key, value] : in.parameters()) w.parameter(key, value);
    for (const auto& [name, value] : in.headers()) w.header(name, value);
    std::size_t at = 0;
    for (std::size_t i = 0; i < in.inputs().size(); ++i) {
      const NamedTensor& t = in.inputs()[i];
      std::size_t offset = 0;
      std::shared_ptr<const UserRegion> user;
      if (copy[i]) {
        if (t.tensor.byte_size())
          std::memcpy(x.lease->region->data() + at, t.tensor.data(), t.tensor.byte_size());
        w.input(t.name, t.tensor, place(x.lease->region->name(), at, t.tensor.byte_size()));
        at += align_up(t.tensor.byte_size());
      } else if (!t.parameters.count(protocol::kSharedMemoryRegion) &&
                 (user = region_holding(t.tensor.data(), t.tensor.byte_size(), &offset))) {
        x.user_regions.push_back(user);  // zero copy: the caller built it in place
        w.input(t.name, t.tensor, place(user->name, offset, t.tensor.byte_size()));
      } else {
        w.input(t.name, t.tensor, t.parameters);
      }
    }
    for (std::size_t o = 0; o < outputs.size(); ++o) {
      if (predicted[o] == 0) {
        w.output(outputs[o].name, outputs[o].parameters);
        continue;
      }
      Parameters where = outputs[o].parameters;
      for (auto& [key, value] : place(x.lease->region->name(), at, predicted[o])) {
        where[key] = value;
      }
      w.output(outputs[o].name, std::move(where));
      x.outputs.push_back({outputs[o].name, at, predicted[o]});
      at += align_up(predicted[o]);
    }
    return true;
  }

  // Registers what the server does not know yet, then sends (`plain`: the caller's request,
  // as it is). A registration refused for a region the request names fails the request with
  // the refusal; any other failure sends it plain, which reports what really happens.
  void register_then_send(const std::shared_ptr<Exchange>& x, bool plain) {
    struct Outcome {
      std::mutex mutex;
      std::optional<Error> failure;  // the first
      std::optional<Error> needed;   // a refused region the request names
      std::atomic<std::size_t> remaining{0};
    };
    auto outcome = std::make_shared<Outcome>();
    std::vector<std::function<void(Callback<bool>)>> steps;
    if (x->lease && !x->lease->registered) {
      steps.push_back([this, x](Callback<bool> next) {
        protocol::SystemShmRegistration request{x->lease->region->name(), x->lease->region->key(),
                                                0, x->lease->region->size()};
        register_region(ControlMethod::SystemSharedMemoryRegister,
                        protocol::encode_system_shm_registration(request), x->deadline,
                        [this, x, next = std::move(next)](Result<bool> ok) mutable {
                          if (ok && *ok) pool_->mark_registered(*x->lease);
                          next(std::move(ok));
                        });
      });
    }
    for (const auto& region : x->user_regions) {
      if (knows(region->name)) continue;
      steps.push_back([this, x, region, outcome](Callback<bool> next) {
        register_user(region, x->deadline,
                      [this, x, region, outcome, next = std::move(next)](Result<bool> ok) mutable {
                        if (!ok && names_region(*x->original, region->name)) {
                          std::lock_guard<std::mutex> lock(outcome->mutex);
                          outcome->needed = Error(
                              ok.code(),
                              std::string(region->cuda ? "Cuda" : "System") +
                                  "SharedMemoryRegister of the caller's region '" + region->name +
                                  "' failed at " + url_ + ": " + ok.error().message(),
                              ok.error().reason());
                        }
                        next(std::move(ok));
                      });
      });
    }
    if (steps.empty()) return plain ? send_plain(x) : send(x);
    outcome->remaining = steps.size();
    for (auto& step : steps) {
      step([this, x, outcome, plain](Result<bool> ok) {
        if (!ok) {
          std::lock_guard<std::mutex> lock(outcome->mutex);
          if (!outcome->failure) outcome->failure = ok.error();
        }
        if (--outcome->remaining != 0) return;
        if (!outcome->failure) return plain ? send_plain(x) : send(x);
        if (outcome->needed) {
          auto done = std::move(x->done);
          return done(*outcome->needed);
        }
        if (refuses_shared_memory(*outcome->failure)) go_plain(*outcome->failure);
        send_plain(x);
      });
    }
  }

  // A registration (`method`: System- or CudaSharedMemoryRegister, with its encoded request);
  // `done` gets true once the server knows the region (ALREADY_EXISTS included).
  void register_region(ControlMethod method, std::string request, Deadline deadline,
                       Callback<bool> done) {
    control_->control_async(RawControlRequest{method, std::move(request)},
                            std::min(deadline, control_deadline()),
                            [done = std::move(done)](Result<ControlAnswer> r) mutable {
                              if (!r && r.code() != StatusCode::AlreadyExists) {
                                return done(r.error());
                              }
                              done(true);
                            });
  }

  void register_user(const std::shared_ptr<const UserRegion>& region, Deadline deadline,
                     Callback<bool> done) {
    auto remember = [this, region, done = std::move(done)](Result<bool> ok) mutable {
      if (ok) {
        std::lock_guard<std::mutex> lock(mutex_);
        user_registered_[region->name] = region;
      }
      done(std::move(ok));
    };
    if (!region->cuda) {
      protocol::SystemShmRegistration request{region->name, region->key, 0, region->size};
      return register_region(ControlMethod::SystemSharedMemoryRegister,
                             protocol::encode_system_shm_registration(request), deadline,
                             std::move(remember));
    }
    protocol::CudaShmRegistration request{region->name, region->ipc_handle, region->device,
                                          region->size};
    register_region(ControlMethod::CudaSharedMemoryRegister,
                    protocol::encode_cuda_shm_registration(request), deadline, std::move(remember));
  }

  bool knows(const std::string& user_region) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return user_registered_.count(user_region) != 0;
  }

  void send(const std::shared_ptr<Exchange>& x) {
    dispatch(x->wire, x,
             [this, x](Result<InferResult> result) { on_result(x, std::move(result)); });
  }

  void send_plain(const std::shared_ptr<Exchange>& x) {
    x->lease.reset();
    dispatch(*x->original, x, std::move(x->done));
  }

  // Hands a request to the gRPC transport, or completes it CANCELLED once this one is closing
  // (registration answers may still arrive while the destructor runs; a call racing the
  // destructor gets here inside infer_async). That completion goes to the process's completion
  // thread, never inside the call; ~Transport() waits for it.
  void dispatch(const InferRequest& request, const std::shared_ptr<Exchange>& x,
                Callback<InferResult> done) {
    std::unique_lock<std::mutex> lock(calls_mutex_);
    if (closing_) {
      lock.unlock();
      return sonic::detail::post_completion(
          static_cast<const Transport*>(this), [done = std::move(done)]() mutable {
            done(Error(StatusCode::Cancelled, "the client was destroyed"));
          });
    }
    calls_->infer_async(request, x->deadline, x->cancel, std::move(done));
  }

  void on_result(const std::shared_ptr<Exchange>& x, Result<InferResult> result) {
    if (!result && !x->retried && lost_registration(result.error())) {
      // The server restarted and forgot our regions: register again, once, transparently.
      x->retried = true;
      pool_->forget_registrations();
      if (x->lease) x->lease->registered = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        user_registered_.clear();
      }
      return register_then_send(x, /*plain=*/false);
    }
    if (!result && !x->retried && output_space_too_small(result.error())) {
      // An output grew past what we foresaw: this once over gRPC, which also teaches its size.
      x->retried = true;
      x->lease.reset();
      forget_sizes(*x->original);
      return dispatch(*x->original, x, [this, x](Result<InferResult> r) {
        if (r) learn_sizes(*x->original, *r);
        auto done = std::move(x->done);
        done(std::move(r));
      });
    }
    if (!result) {
      auto done = std::move(x->done);
      return done(std::move(result));
    }
    auto outcome = take_outputs(*x, std::move(*result));
    if (outcome) learn_sizes(*x->original, *outcome);
    auto done = std::move(x->done);
    done(std::move(outcome));
  }

  // Outputs the server wrote into our regions become views of them (kept alive by the lease
  // or the user's buffer).
  Result<InferResult> take_outputs(const Exchange& x, InferResult result) {
    std::vector<NamedTensor> outputs;
    for (const auto& out : result.outputs()) {
      auto placed = std::find_if(x.outputs.begin(), x.outputs.end(),
                                 [&](const Exchange::Output& o) { return o.name == out.name; });
      if (placed == x.outputs.end() || !out.parameters.count(protocol::kSharedMemoryRegion)) {
        outputs.push_back(out);
        continue;
      }
      const std::uint8_t* data = x.lease->region->data() + placed->offset;
      auto bytes = byte_size_of(out, data, placed->capacity);
      if (!bytes || *bytes > placed->capacity) {
        return Error(StatusCode::Internal, "server reported output '" + out.name +
                                               "' larger than the shared memory reserved for it");
      }
      Tensor tensor =
          Tensor::from_shared(out.tensor.dtype(), out.tensor.shape(), x.lease, data, *bytes);
      if (auto ok = tensor.check(); !ok) {
        return Error(StatusCode::Internal,
                     "output '" + out.name + "' in shared memory: " + ok.error().message());
      }
      outputs.push_back({out.name, std::move(tensor), {}});
    }
    InferResult shaped(result.model_name(), result.model_version(), result.request_id(),
                       std::move(outputs), result.parameters());
    shaped.set_executed_on(result.executed_on());
    shaped.timing() = result.timing();
    return shaped;
  }

  // The bytes of an output the server wrote at `data`, into space of `capacity` bytes. A BYTES
  // output's size is that of its serialised elements (4-byte length, then the bytes, for each
  // of the shape's elements): Triton does not say how much of the space it wrote.
  static std::optional<std::size_t> byte_size_of(const NamedTensor& out, const std::uint8_t* data,
                                                 std::size_t capacity) {
    auto count = element_count(out.tensor.shape());
    if (!count) return std::nullopt;
    if (out.tensor.dtype() != DataType::Bytes) return *count * element_size(out.tensor.dtype());
    std::size_t at = 0;
    for (std::size_t i = 0; i < *count; ++i) {
      if (capacity - at < 4) return std::nullopt;
      std::uint32_t length = 0;
      std::memcpy(&length, data + at, 4);  // little-endian, as the hosts sonic runs on
      at += 4;
      if (capacity - at < length) return std::nullopt;
      at += length;
    }
    return at;
  }

  // ---- Output sizes: from static shapes in the metadata, else as last seen. ----

  void learn_metadata(const InferRequest& request) {
    ModelRef key = ModelRef{request.model_name(), request.model_version()};
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!metadata_requested_.insert(key).second) return;
    }
    calls_->model_metadata_async(request.model_name(), request.model_version(), control_deadline(),
                                 [this, key](Result<ModelMetadata> m) {
                                   std::lock_guard<std::mutex> lock(mutex_);
                                   if (m) {
                                     metadata_[key] = std::move(*m);
                                   } else {
                                     metadata_requested_.erase(key);  // ask again later
                                   }
                                 });
  }

  std::vector<std::string> known_outputs(const InferRequest& request) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> names;
    auto it = metadata_.find(ModelRef{request.model_name(), request.model_version()});
    if (it != metadata_.end()) {
      for (const auto& out : it->second.outputs) names.push_back(out.name);
    }
    return names;
  }

  std::size_t predict(const InferRequest& request, const std::string& output) const {
    std::lock_guard<std::mutex> lock(mutex_);
    const ModelRef key = ModelRef{request.model_name(), request.model_version()};
    if (auto m = metadata_.find(key); m != metadata_.end()) {
      if (const TensorMetadata* spec = m->second.find_output(output);
          spec && spec->dtype != DataType::Bytes) {
        if (auto count = element_count(spec->shape)) return *count * element_size(spec->dtype);
      }
    }
    auto model = sizes_.find(key);
    if (model == sizes_.end()) return 0;
    auto seen = model->second.find(output);
    return seen == model->second.end() ? 0 : seen->second;
  }

  void learn_sizes(const InferRequest& request, const InferResult& result) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& sizes = sizes_[ModelRef{request.model_name(), request.model_version()}];
    for (const auto& out : result.outputs()) sizes[out.name] = out.tensor.byte_size();
  }

  void forget_sizes(const InferRequest& request) {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_.erase(ModelRef{request.model_name(), request.model_version()});
  }

  // ---- Falling back, and cleaning up. ----

  void go_plain(const Error& why) {
    if (plain_.exchange(true)) return;
    if (options_.log) {
      options_.log(LogLevel::Warning, url_ +
                                          ": the server cannot use this client's shared memory (" +
                                          why.message() + "); sending tensors over plain gRPC");
    }
  }

  Deadline control_deadline() const { return deadline_after(options_.control_timeout); }

  void unregister(const std::vector<std::string>& names, bool cuda) {
    for (const auto& name : names) unregister_one(name, cuda, nullptr);
  }

  void unregister_one(const std::string& name, bool cuda, std::shared_ptr<std::promise<void>> ack) {
    control_->control_async(RawControlRequest{cuda ? ControlMethod::CudaSharedMemoryUnregister
                                                   : ControlMethod::SystemSharedMemoryUnregister,
                                              protocol::encode_region_name(name)},
                            deadline_after(std::chrono::milliseconds(1000)),
                            [ack](Result<ControlAnswer>) {
                              if (ack) ack->set_value();
                            });
  }

  // Unregisters every region this transport registered; waits at most about a second.
  void unregister_everything() {
    std::vector<std::pair<std::string, bool>> all;
    for (auto& name : pool_->registered_names()) all.emplace_back(std::move(name), false);
    for (auto& name : pool_->take_evicted()) all.emplace_back(std::move(name), false);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& [name, region] : user_registered_) all.emplace_back(name, region->cuda);
    }
    std::vector<std::future<void>> acks;
    for (auto& [name, cuda] : all) {
      auto ack = std::make_shared<std::promise<void>>();
      acks.push_back(ack->get_future());
      unregister_one(name, cuda, ack);
    }
    for (auto& ack : acks) ack.wait();  // each is bounded by its one-second deadline
  }

  std::string url_;
  ClientOptions options_;
  std::shared_ptr<RegionPool> pool_;
  std::unique_ptr<Transport> calls_;    // inference and the Transport's control calls
  std::unique_ptr<Transport> control_;  // registrations, alive until they are undone
  std::atomic<bool> plain_{false};
  std::mutex calls_mutex_;  // orders dispatch() against the destructor
  bool closing_ = false;    // guarded by calls_mutex_
  mutable std::mutex mutex_;
  std::set<ModelRef> metadata_requested_;
  std::map<ModelRef, ModelMetadata> metadata_;
  // Last seen bytes of each model's outputs, by output name.
  std::map<ModelRef, std::map<std::string, std::size_t>> sizes_;
  std::map<std::string, std::shared_ptr<const UserRegion>> user_registered_;
};

const bool registered = [] {
  transport_registry().add("grpc+shm",
                           [](const Endpoint& endpoint,
                              const ClientOptions& options) -> Result<std::unique_ptr<Transport>> {
                             Endpoint plain = endpoint;
                             plain.scheme = "grpc";
                             plain.url = "grpc" + endpoint.url.substr(endpoint.scheme.size());
                             auto calls = transport_registry().create(plain, options);
                             if (!calls) return calls.error();
                             auto control = transport_registry().create(plain, options);
                             if (!control) return control.error();
                             return std::unique_ptr<Transport>(std::make_unique<ShmTransport>(
                                 std::move(*calls), std::move(*control), endpoint, options));
                           });
  return true;
}();

}  // namespace

}  // namespace sonic::shm

// Referenced by the anchor object linked into every program that uses sonic::shm (see
// SonicLibrary.cmake).
extern "C" {
SONIC_EXPORT int sonic_shm_registration_anchor = 1;
}
