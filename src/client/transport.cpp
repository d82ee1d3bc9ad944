// sonic — endpoint URLs and the registry of linked transports.
#include "sonic/transport.hpp"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "completion_thread.hpp"
#include "protocol/control_methods.hpp"
#include "threads.hpp"

namespace sonic {

namespace detail {
namespace {

// The state of the process's completion thread (completion_thread.hpp). Never freed, so that a
// task posted while the process exits, after the thread was joined, still finds it.
class CompletionThread {
 public:
  void post(const void* owner, UniqueFunction<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back({owner, std::move(task)});
      ++pending_[owner];
      if (!thread_.joinable() && !stopping_) start();
    }
    wake_.notify_one();
  }

  void drain(const void* owner) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (pending_.find(owner) == pending_.end()) return;
    if (std::this_thread::get_id() != runner_) {
      drained_.wait(lock, [&] { return pending_.find(owner) == pending_.end(); });
      return;
    }
    // A task of this thread destroys `owner`: run its queued tasks here, in order. (The task
    // now running, if it is the owner's, is the caller's own.)
    std::vector<UniqueFunction<void()>> mine;
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (it->owner != owner) {
        ++it;
        continue;
      }
      mine.push_back(std::move(it->task));
      it = tasks_.erase(it);
    }
    lock.unlock();
    for (auto& task : mine) {
      run_one(task);
      task = nullptr;  // what it holds goes now, as a task the thread ran would
      lock.lock();
      finished(owner);
      lock.unlock();
    }
  }

  // The process exits: runs what is queued, then joins. A task may call exit(): its thread
  // cannot join itself, and leaves once that task returns.
  void stop() {
    std::thread thread;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      thread = std::move(thread_);
    }
    wake_.notify_all();
    if (!thread.joinable()) return;
    if (thread.get_id() == std::this_thread::get_id()) {
      thread.detach();
      return;
    }
    thread.join();
    // Tasks posted meanwhile (by static destructors, say) get a thread that the exit does not
    // wait for.
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = false;
    if (!tasks_.empty()) start();
  }

 private:
  struct Queued {
    const void* owner;
    UniqueFunction<void()> task;
  };

  void start() {  // mutex_ held
    thread_ = std::thread([this] { run(); });
    runner_ = thread_.get_id();
  }

  void run() {
    name_this_thread("sonic-complete");
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, and nothing left
      Queued next = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      run_one(next.task);
      next.task = nullptr;
      lock.lock();
      finished(next.owner);
    }
  }

  static void run_one(UniqueFunction<void()>& task) {
    try {
      task();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "sonic: a completion failed and was dropped: %s\n", e.what());
    } catch (...) {
      std::fprintf(stderr, "sonic: a completion failed and was dropped\n");
    }
  }

  void finished(const void* owner) {  // mutex_ held
    auto it = pending_.find(owner);
    if (--it->second != 0) return;
    pending_.erase(it);
    drained_.notify_all();
  }

  std::mutex mutex_;
  std::condition_variable wake_;     // the thread: a task came, or the process exits
  std::condition_variable drained_;  // drain(): an owner's last task ran
  std::deque<Queued> tasks_;
  std::map<const void*, std::size_t> pending_;  // per owner, its tasks queued or running
  std::thread thread_;
  std::thread::id runner_;  // the thread that runs the tasks now
  bool stopping_ = false;
};

CompletionThread& completion_thread() {
  static auto* const state = new CompletionThread;  // never freed: see above
  return *state;
}

// Joins the completion thread when the process exits. Made when the library is loaded, so it
// goes after every static object made since (a static Client, say), whose completions then
// still run.
struct JoinAtExit {
  JoinAtExit() { completion_thread(); }
  ~JoinAtExit() { completion_thread().stop(); }
} join_at_exit;

}  // namespace

void post_completion(const void* owner, UniqueFunction<void()> task) {
  completion_thread().post(owner, std::move(task));
}

void drain_completions(const void* owner) { completion_thread().drain(owner); }

}  // namespace detail

namespace {

// What to link for a scheme that has no transport.
std::string link_hint(std::string_view scheme) {
  if (scheme == "grpc" || scheme == "grpcs") return "link the CMake target sonic::grpc";
  if (scheme == "grpc+shm") return "link the CMake target sonic::shm";
  if (scheme == "tcp" || scheme == "tcp+zstd" || scheme == "tcp+tls" || scheme == "tcp+zstd+tls")
    return "link the CMake target sonic::tcp";
  return "known schemes are grpc, grpcs, grpc+shm, tcp, tcp+zstd, tcp+tls and tcp+zstd+tls";
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view url) {
  Endpoint ep;
  ep.url = std::string(url);
  std::string_view rest = url;
  if (auto sep = rest.find("://"); sep != std::string_view::npos) {
    ep.scheme = std::string(rest.substr(0, sep));
    rest.remove_prefix(sep + 3);
  } else {
    ep.scheme = "grpc";
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view port_text;
  bool port_given = false;  // a ':' after the host: a port must follow
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos) {
      return Error(StatusCode::InvalidArgument, "endpoint '" + ep.url + "': unclosed '[' in host");
    }
    ep.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Error(StatusCode::InvalidArgument, "endpoint '" + ep.url + "': junk after host");
      }
      port_text = rest.substr(1);
      port_given = true;
    }
  } else {
    auto colon = rest.rfind(':');
    ep.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      port_given = true;
    }
  }
  if (ep.host.empty()) {
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has no host; expected scheme://host:port");
  }
  if (!port_given) {
    // Triton's ports: 8000 speaks HTTP/REST, 8001 gRPC.
    ep.port = ep.scheme == "http" || ep.scheme == "https" ? 8000 : 8001;
    return ep;
  }
  if (port_text.empty()) {  // "host:" (an unset variable in a script, say)
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has an empty port; expected scheme://host:port");
  }
  unsigned long port = 0;
  for (char c : port_text) {
    if (c < '0' || c > '9' || port > 65535) {
      port = 70000;
      break;
    }
    port = port * 10 + static_cast<unsigned long>(c - '0');
  }
  if (port == 0 || port > 65535) {
    return Error(StatusCode::InvalidArgument,
                 "endpoint '" + ep.url + "' has an invalid port '" + std::string(port_text) + "'");
  }
  ep.port = static_cast<std::uint16_t>(port);
  return ep;
}

bool is_ip_literal(std::string_view host) {
  if (host.find(':') != std::string_view::npos) return true;  // IPv6
  int dots = 0;
  for (char c : host) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

TransportStream::~TransportStream() = default;

// Waits for the answers call_async() posted for this transport: they run before its
// destructor returns, as every outstanding call's completion does.
Transport::~Transport() { detail::drain_completions(this); }

namespace {

// control_async() with `request`, its answer taken out of the variant (INTERNAL should a
// transport answer with another type: a defect of that transport).
template <typename Request>
void typed_control(Transport& transport, Request request, Deadline deadline,
                   Callback<typename Request::Answer> done) {
  transport.control_async(
      std::move(request), deadline, [done = std::move(done)](Result<ControlAnswer> answer) mutable {
        if (!answer) return done(answer.error());
        auto* value = std::get_if<typename Request::Answer>(&*answer);
        if (!value) {
          return done(Error(StatusCode::Internal, "the transport answered " +
                                                      std::string(method_name(Request::method)) +
                                                      " with a value of another type"));
        }
        done(std::move(*value));
      });
}

}  // namespace

void Transport::server_live_async(Deadline deadline, Callback<bool> done) {
  typed_control(*this, ServerLiveRequest{}, deadline, std::move(done));
}

void Transport::server_ready_async(Deadline deadline, Callback<bool> done) {
  typed_control(*this, ServerReadyRequest{}, deadline, std::move(done));
}

void Transport::model_ready_async(std::string model, std::string version, Deadline deadline,
                                  Callback<bool> done) {
  typed_control(*this, ModelReadyRequest{{std::move(model), std::move(version)}}, deadline,
                std::move(done));
}

void Transport::server_metadata_async(Deadline deadline, Callback<ServerMetadata> done) {
  typed_control(*this, ServerMetadataRequest{}, deadline, std::move(done));
}

void Transport::model_metadata_async(std::string model, std::string version, Deadline deadline,
                                     Callback<ModelMetadata> done) {
  typed_control(*this, ModelMetadataRequest{{std::move(model), std::move(version)}}, deadline,
                std::move(done));
}

void Transport::model_config_async(std::string model, std::string version, Deadline deadline,
                                   Callback<std::string> done) {
  typed_control(*this, ModelConfigRequest{{std::move(model), std::move(version)}}, deadline,
                std::move(done));
}

void Transport::model_statistics_async(std::string model, std::string version, Deadline deadline,
                                       Callback<std::vector<ModelStatistics>> done) {
  typed_control(*this, ModelStatisticsRequest{{std::move(model), std::move(version)}}, deadline,
                std::move(done));
}

void Transport::repository_index_async(bool ready_only, Deadline deadline,
                                       Callback<std::vector<ModelIndex>> done) {
  typed_control(*this, RepositoryIndexRequest{ready_only}, deadline, std::move(done));
}

void Transport::load_model_async(std::string model, std::string config_json, Deadline deadline,
                                 Callback<bool> done) {
  typed_control(*this, RepositoryModelLoadRequest{std::move(model), std::move(config_json)},
                deadline, std::move(done));
}

void Transport::unload_model_async(std::string model, Deadline deadline, Callback<bool> done) {
  typed_control(*this, RepositoryModelUnloadRequest{std::move(model)}, deadline, std::move(done));
}

void Transport::call_async(std::string_view method, std::string request, Deadline deadline,
                           Callback<std::string> done) {
  auto named = control_method_named(method);
  if (!named) {
    // On the process's completion thread: a Transport has no thread of its own, and `done`
    // must not run inside the call.
    return detail::post_completion(
        this, [done = std::move(done), method = std::string(method)]() mutable {
          done(Error(StatusCode::Unimplemented,
                     "'" + method + "' is no control method of inference.GRPCInferenceService"));
        });
  }
  control_async(RawControlRequest{*named, std::move(request)}, deadline,
                [done = std::move(done)](Result<ControlAnswer> answer) mutable {
                  if (!answer) return done(answer.error());
                  auto* response = std::get_if<std::string>(&*answer);
                  if (!response) {
                    return done(Error(StatusCode::Internal,
                                      "the transport answered a raw call with another type"));
                  }
                  done(std::move(*response));
                });
}

ControlMethod method_of(const ControlRequest& request) noexcept {
  return std::visit(
      [](const auto& r) -> ControlMethod {
        if constexpr (std::is_same_v<std::decay_t<decltype(r)>, RawControlRequest>) {
          return r.method;
        } else {
          return std::decay_t<decltype(r)>::method;
        }
      },
      request);
}

std::string_view method_name(ControlMethod method) noexcept {
  return protocol::spec_of(method).name;
}

std::optional<ControlMethod> control_method_named(std::string_view name) noexcept {
  return protocol::find_control_method(name);
}

Result<std::unique_ptr<TransportStream>> Transport::open_stream(Deadline,
                                                                std::function<void(StreamResponse)>,
                                                                Callback<void>) {
  return Error(StatusCode::Unimplemented, "this transport has no streams (ModelStreamInfer)");
}

void TransportRegistry::add(std::string scheme, TransportFactory factory) {
  std::lock_guard<std::mutex> lock(mutex_);
  factories_[std::move(scheme)] = std::move(factory);
}

Result<std::unique_ptr<Transport>> TransportRegistry::create(const Endpoint& endpoint,
                                                             const ClientOptions& options) const {
  TransportFactory factory;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = factories_.find(endpoint.scheme);
    if (it != factories_.end()) factory = it->second;
  }
  if (!factory) {
    return Error(StatusCode::InvalidArgument, "no transport for scheme '" + endpoint.scheme +
                                                  "' in '" + endpoint.url +
                                                  "': " + link_hint(endpoint.scheme));
  }
  return factory(endpoint, options);
}

bool TransportRegistry::has(std::string_view scheme) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return factories_.find(scheme) != factories_.end();
}

void TransportRegistry::set_resolver(Resolver resolver) {
  std::lock_guard<std::mutex> lock(mutex_);
  resolver_ = std::move(resolver);
}

Resolver TransportRegistry::resolver() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return resolver_;
}

TransportRegistry& transport_registry() {
  static TransportRegistry registry;
  return registry;
}

}  // namespace sonic
