#include "fake_transport.hpp"

#include <sonic/builtin_models.hpp>
#include "client/completion_thread.hpp"
#include "client/timer_queue.hpp"

#include <algorithm>
#include <utility>

#include "protocol/control_calls.hpp"
#include "protocol/control_codec.hpp"

namespace sonic::test {

namespace {

// A call waiting for release(), reset(), its deadline or its caller's cancel.
struct HeldCall {
  InferRequest request{""};
  Callback<InferResult> done;
  bool finished = false;  // guarded by FakeServer::State::mutex
};

}  // namespace

struct FakeServer::State {
  std::shared_ptr<CpuExecutor> executor;
  mutable std::mutex mutex;
  std::map<std::size_t, Error> failures;  // by call number
  bool down = false;
  std::optional<Error> refusal;  // every call's answer (refuse_calls)
  bool holding = false;
  std::optional<Error> refuse_index;  // RepositoryIndex's answer instead of the models
  std::size_t index_calls = 0;
  std::size_t calls = 0, cancelled = 0, probes = 0;
  std::vector<Clock::time_point> call_times;
  std::vector<std::shared_ptr<HeldCall>> held;

  // Completes a held call once; false when it had completed.
  bool complete(const std::shared_ptr<HeldCall>& call, Result<InferResult> outcome) {
    Callback<InferResult> done;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (call->finished) return false;
      call->finished = true;
      done = std::move(call->done);
      held.erase(std::remove(held.begin(), held.end(), call), held.end());
    }
    done(std::move(outcome));
    return true;
  }
};

namespace {

std::mutex servers_mutex;
std::map<std::string, std::weak_ptr<FakeServer::State>> servers;  // by name

std::shared_ptr<FakeServer::State> find_server(const std::string& name) {
  std::lock_guard<std::mutex> lock(servers_mutex);
  auto it = servers.find(name);
  return it == servers.end() ? nullptr : it->second.lock();
}

// Result<T>, where T is deduced from the callback alone (an outcome may be an Error).
template <typename T>
struct Outcome {
  using type = Result<T>;
};

Error unreachable(const std::string& name) {
  return Error(StatusCode::Unavailable, "no fake server '" + name + "'");
}

// Runs the server's own work (timeouts, cancels) off the caller's thread, as a transport's
// network thread would: a CancelSignal's action must not complete the call inline.
void later(detail::TimerQueue::Owner owner, Clock::time_point when,
           detail::UniqueFunction<void()> task) {
  static auto timers = detail::TimerQueue::shared();
  timers->schedule(owner, when, std::move(task));
}

class FakeTransport final : public Transport {
 public:
  explicit FakeTransport(std::string name) : name_(std::move(name)) {}

  ~FakeTransport() override {
    for (auto& weak : mine_) {
      auto call = weak.lock();
      auto state = state_.lock();
      if (call && state) state->complete(call, Error(StatusCode::Cancelled, "client destroyed"));
    }
  }

  void infer_async(const InferRequest& request, Deadline deadline,
                   std::shared_ptr<CancelSignal> cancel, Callback<InferResult> done) override {
    auto state = find_server(name_);
    if (!state) return complete_later(std::move(done), unreachable(name_));
    state_ = state;
    std::unique_lock<std::mutex> lock(state->mutex);
    std::size_t number = ++state->calls;
    state->call_times.push_back(Clock::now());
    if (auto it = state->failures.find(number); it != state->failures.end()) {
      Error error = it->second;
      state->failures.erase(it);
      lock.unlock();
      return complete_later(std::move(done), std::move(error));
    }
    if (state->down) {
      lock.unlock();
      return complete_later(std::move(done),
                            Error(StatusCode::Unavailable, "fake server '" + name_ + "' is down"));
    }
    if (state->refusal) {
      Error refusal = *state->refusal;
      lock.unlock();
      return complete_later(std::move(done), std::move(refusal));
    }
    if (!state->holding) {
      lock.unlock();
      return complete_later(std::move(done), state->executor->infer(request));
    }
    auto call = std::make_shared<HeldCall>();
    call->request = request;
    call->done = std::move(done);
    state->held.push_back(call);
    mine_.push_back(call);
    lock.unlock();
    std::weak_ptr<HeldCall> weak = call;
    std::weak_ptr<State> weak_state = state;
    if (deadline != Deadline::max()) {
      later(call.get(), deadline, [weak, weak_state] {
        auto held = weak.lock();
        auto s = weak_state.lock();
        if (held && s) s->complete(held, Error(StatusCode::DeadlineExceeded, "fake deadline"));
      });
    }
    if (cancel) {
      cancel->on_cancel([weak, weak_state, owner = call.get()] {
        later(owner, Clock::now(), [weak, weak_state] {
          auto held = weak.lock();
          auto s = weak_state.lock();
          if (!held || !s) return;
          if (s->complete(held, Error(StatusCode::Cancelled, "cancelled by the caller"))) {
            std::lock_guard<std::mutex> counting(s->mutex);
            ++s->cancelled;
          }
        });
      });
    }
  }

  void control_async(ControlRequest request, Deadline, Callback<ControlAnswer> done) override {
    protocol::control_by_messages(
        std::move(request),
        [this](ControlMethod method, std::string message, Callback<std::string> answered) {
          unary(method, std::move(message), std::move(answered));
        },
        std::move(done));
  }

 private:
  void unary(ControlMethod method, const std::string& request, Callback<std::string> done) {
    bool discovery = false;
    auto outcome = answer(method, request, discovery);
    auto state = discovery ? find_server(name_) : nullptr;
    if (!state) return complete_later(std::move(done), std::move(outcome));
    // A RepositoryIndex call counts once its caller has handled the answer: a test that waits
    // for the count sees what the answer did.
    complete_later<std::string>(
        [done = std::move(done), state](Result<std::string> answered) mutable {
          done(std::move(answered));
          std::lock_guard<std::mutex> lock(state->mutex);
          ++state->index_calls;
        },
        std::move(outcome));
  }

  using State = FakeServer::State;

  // Delivers an outcome decided inside a call outside it, on the process's completion thread
  // (in order); ~Transport() waits for those still queued.
  template <typename T>
  void complete_later(Callback<T> done, typename Outcome<T>::type outcome) {
    detail::post_completion(static_cast<const Transport*>(this),
                            [done = std::move(done), outcome = std::move(outcome)]() mutable {
                              done(std::move(outcome));
                            });
  }

  // The answer to a control call; `discovery`: it is the answer of RepositoryIndex.
  Result<std::string> answer(ControlMethod method, const std::string& request, bool& discovery) {
    auto state = find_server(name_);
    if (!state) return unreachable(name_);
    bool down;
    {
      std::lock_guard<std::mutex> lock(state->mutex);
      down = state->down;
      if (method == ControlMethod::ServerReady) ++state->probes;
    }
    if (method == ControlMethod::ServerReady || method == ControlMethod::ServerLive)
      return protocol::encode_flag(!down);
    if (down) return Error(StatusCode::Unavailable, "fake server '" + name_ + "' is down");
    if (method == ControlMethod::RepositoryIndex) {
      std::optional<Error> refusal;
      {
        std::lock_guard<std::mutex> lock(state->mutex);
        refusal = state->refuse_index;
      }
      discovery = true;
      if (refusal) return std::move(*refusal);
      return protocol::encode_repository_index(state->executor->repository_index());
    }
    auto ref = protocol::decode_model_ref(request);
    if (!ref) return ref.error();
    if (method == ControlMethod::ModelReady) {
      return protocol::encode_flag(state->executor->has_model(ref->name, ref->version));
    }
    if (method == ControlMethod::ModelMetadata) {
      auto model = state->executor->model(ref->name, ref->version);
      if (!model) return model.error();
      return protocol::encode_model_metadata((*model)->metadata());
    }
    return Error(StatusCode::Unimplemented,
                 "the fake server does not answer " + std::string(method_name(method)));
  }

  std::string name_;
  std::weak_ptr<State> state_;
  std::vector<std::weak_ptr<HeldCall>> mine_;
};

}  // namespace

FakeServer::FakeServer(std::string name, std::shared_ptr<CpuExecutor> executor)
    : name_(std::move(name)), state_(std::make_shared<State>()) {
  state_->executor = std::move(executor);
  transport_registry().add(
      "fake",
      [](const Endpoint& endpoint, const ClientOptions&) -> Result<std::unique_ptr<Transport>> {
        return std::unique_ptr<Transport>(std::make_unique<FakeTransport>(endpoint.host));
      });
  std::lock_guard<std::mutex> lock(servers_mutex);
  servers[name_] = state_;
}

FakeServer::~FakeServer() {
  reset();
  std::lock_guard<std::mutex> lock(servers_mutex);
  servers.erase(name_);
}

std::shared_ptr<CpuExecutor> FakeServer::default_executor() {
  return CpuExecutor::with_models(models::builtin(), 1);
}

void FakeServer::fail_call(std::size_t n, Error error) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->failures.insert_or_assign(state_->calls + n, std::move(error));
}

void FakeServer::refuse_calls(std::optional<Error> error) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->refusal = std::move(error);
}

void FakeServer::refuse_discovery(std::optional<Error> error) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->refuse_index = std::move(error);
}

std::size_t FakeServer::discovery_calls() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->index_calls;
}

void FakeServer::set_down(bool down) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->down = down;
}

void FakeServer::hold(bool on) {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->holding = on;
}

void FakeServer::release() {
  std::vector<std::shared_ptr<HeldCall>> waiting;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    waiting = state_->held;
  }
  for (auto& call : waiting) state_->complete(call, state_->executor->infer(call->request));
}

void FakeServer::reset() {
  std::vector<std::shared_ptr<HeldCall>> waiting;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    waiting = state_->held;
  }
  for (auto& call : waiting) {
    state_->complete(call, Error(StatusCode::Unavailable, "connection reset by fake server"));
  }
}

std::size_t FakeServer::calls() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->calls;
}

std::vector<Clock::time_point> FakeServer::call_times() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->call_times;
}

std::size_t FakeServer::waiting() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->held.size();
}

std::size_t FakeServer::cancelled() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cancelled;
}

std::size_t FakeServer::readiness_probes() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->probes;
}

}  // namespace sonic::test
