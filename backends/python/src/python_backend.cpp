// Triton's Python backend (backend: "python", a model.py defining TritonPythonModel), run as
// Triton runs it: every model instance in a process of its own, a "stub" (Triton's
// python_backend README: "each model instance ... a separate process"), so that
//   - models do not share one interpreter's GIL, and instances of one model run at once;
//   - a model that crashes, leaks or hangs costs its own process, never the server: a stub that
//     dies or passes its execute time limit is killed, its request fails UNAVAILABLE with the
//     reason, and the model is retired (ModelHost::retire) until a load brings it back.
// The stub is sonic_python_stub.py (embedded, written to a private directory at load), spoken
// to in frames over a socketpair (stub_frame.hpp). Requests go to a free instance, or wait for
// one. A model calls the server's other models (BLS) through the same socket: the thread that
// waits for its execute runs the call through LoadContext::host and answers.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "protocol/model_config_json.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/repository/backend.hpp"
#include "stub_frame.hpp"
#include "stub_process.hpp"

extern const unsigned char sonic_sonic_python_stub_py[];
extern const unsigned long sonic_sonic_python_stub_py_size;
extern const unsigned char sonic_triton_python_backend_utils_py[];
extern const unsigned long sonic_triton_python_backend_utils_py_size;

namespace sonic::python_backend {

namespace {

using json = nlohmann::json;
using repository::LoadContext;
using repository::LoadedModel;
using repository::ModelConfig;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

// The time limits and sizes a model's config.pbtxt may set, as string parameters.
struct Settings {
  /// How long the stub may go without answering during an execute: from the request (or the
  /// answer to its last BLS call) to its next message. Past it the stub is killed and the model
  /// retired. 0: no limit.
  std::chrono::milliseconds execute_timeout{300000};
  /// How long starting a stub, auto_complete_config and initialize may take, each.
  std::chrono::milliseconds initialize_timeout{300000};
  /// How long a request waits for a free instance (every instance busy) before it fails
  /// UNAVAILABLE. 0: no limit.
  std::chrono::milliseconds instance_wait_timeout{300000};
  /// How long finalize may take when the model is unloaded, before the stub is killed.
  std::chrono::milliseconds finalize_timeout{10000};
  FrameLimits limits;
};

Error invalid(const std::string& message) { return Error(StatusCode::InvalidArgument, message); }

Result<std::uint64_t> number_parameter(const ModelConfig& config, const std::string& key,
                                       std::uint64_t fallback) {
  auto it = config.parameters.find(key);
  if (it == config.parameters.end()) return fallback;
  const std::string& text = it->second;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE) {
    return invalid("parameter " + key + " is \"" + text +
                   "\"; it takes a whole number (of milliseconds, or bytes)");
  }
  return static_cast<std::uint64_t>(value);
}

Result<Settings> settings_of(const ModelConfig& config) {
  Settings settings;
  auto execute = number_parameter(config, "execute_timeout_ms",
                                  static_cast<std::uint64_t>(settings.execute_timeout.count()));
  if (!execute) return execute.error();
  auto initialize =
      number_parameter(config, "initialize_timeout_ms",
                       static_cast<std::uint64_t>(settings.initialize_timeout.count()));
  if (!initialize) return initialize.error();
  auto finalize = number_parameter(config, "finalize_timeout_ms",
                                   static_cast<std::uint64_t>(settings.finalize_timeout.count()));
  if (!finalize) return finalize.error();
  auto wait = number_parameter(config, "instance_wait_timeout_ms",
                               static_cast<std::uint64_t>(settings.instance_wait_timeout.count()));
  if (!wait) return wait.error();
  auto bytes = number_parameter(config, "max_message_bytes", settings.limits.max_buffer_bytes);
  if (!bytes) return bytes.error();
  constexpr std::uint64_t kMaxMillis = std::uint64_t{1} << 40;  // a wait that cannot overflow
  if (*execute > kMaxMillis || *initialize > kMaxMillis || *finalize > kMaxMillis ||
      *wait > kMaxMillis) {
    return invalid("a timeout parameter is larger than " + std::to_string(kMaxMillis) + " ms");
  }
  settings.execute_timeout = std::chrono::milliseconds(*execute);
  settings.initialize_timeout = std::chrono::milliseconds(*initialize);
  settings.finalize_timeout = std::chrono::milliseconds(*finalize);
  settings.instance_wait_timeout = std::chrono::milliseconds(*wait);
  settings.limits.max_buffer_bytes = *bytes;
  return settings;
}

std::optional<Clock::time_point> deadline_after(std::chrono::milliseconds limit) {
  if (limit.count() == 0) return std::nullopt;
  return Clock::now() + limit;
}

// ---- tensors on the wire: {"name", "datatype", "shape", "buffer"} and the frame's buffers ----

json describe(const NamedTensor& named, std::vector<ByteRange>& buffers) {
  const Tensor& t = named.tensor;
  buffers.push_back({t.data(), t.byte_size()});
  return {{"name", named.name},
          {"datatype", to_string(t.dtype())},
          {"shape", t.shape()},
          {"buffer", buffers.size() - 1}};
}

json describe_all(const std::vector<NamedTensor>& tensors, std::vector<ByteRange>& buffers) {
  json list = json::array();
  for (const auto& t : tensors) list.push_back(describe(t, buffers));
  return list;
}

// Tensors a stub described, over the frame's buffers (no copy). INTERNAL for a description that
// does not fit its bytes: the stub, not the request, is at fault.
Result<std::vector<NamedTensor>> tensors_of(const json& list, const Frame& frame,
                                            const std::string& who) {
  auto bad = [&](const std::string& what) {
    return Error(StatusCode::Internal, who + " sent a malformed tensor: " + what);
  };
  if (!list.is_array()) return bad("no tensor list");
  std::vector<NamedTensor> tensors;
  for (const auto& item : list) {
    if (!item.is_object() || !item.contains("name") || !item["name"].is_string() ||
        !item.contains("datatype") || !item["datatype"].is_string() || !item.contains("shape") ||
        !item["shape"].is_array() || !item.contains("buffer") ||
        !item["buffer"].is_number_unsigned()) {
      return bad(item.dump());
    }
    auto type = parse_datatype(item["datatype"].get<std::string>());
    if (!type) return bad("datatype " + item["datatype"].get<std::string>());
    Shape shape;
    for (const auto& dim : item["shape"]) {
      if (!dim.is_number_integer() || dim.get<std::int64_t>() < 0) return bad("shape");
      shape.push_back(dim.get<std::int64_t>());
    }
    const auto index = item["buffer"].get<std::size_t>();
    if (index >= frame.buffers.size()) return bad("buffer index " + std::to_string(index));
    const ByteRange& bytes = frame.buffers[index];
    Tensor tensor =
        Tensor::from_shared(*type, std::move(shape), frame.storage, bytes.data, bytes.size);
    if (auto ok = tensor.check(); !ok) return bad(ok.error().message());
    tensors.push_back({item["name"].get<std::string>(), std::move(tensor), {}});
  }
  return tensors;
}

// The parameters that say where a request stands in a sequence. Triton gives them to a model
// as correlation_id() and flags(), not among its parameters().
bool is_sequence_parameter(const std::string& key) {
  return key == "sequence_id" || key == "sequence_start" || key == "sequence_end";
}

json parameters_json(const Parameters& parameters) {
  json out = json::object();
  for (const auto& [key, value] : parameters) {
    if (is_sequence_parameter(key)) continue;
    std::visit([&, name = key](const auto& v) { out[name] = v; }, value);
  }
  return out;
}

// Triton's correlation_id(): the sequence's id, a number or a string; 0 outside a sequence.
json correlation_id_of(const Parameters& parameters) {
  auto it = parameters.find("sequence_id");
  if (it == parameters.end()) return 0;
  if (const auto* text = std::get_if<std::string>(&it->second)) return *text;
  if (const auto* number = std::get_if<std::int64_t>(&it->second)) {
    return static_cast<std::uint64_t>(*number);
  }
  if (const auto* number = std::get_if<std::uint64_t>(&it->second)) return *number;
  return 0;
}

// Triton's flags(): TRITONSERVER_REQUEST_FLAG_SEQUENCE_START (1) and _END (2).
std::uint32_t sequence_flags_of(const Parameters& parameters) {
  auto set = [&](const char* key) {
    auto it = parameters.find(key);
    const bool* value = it == parameters.end() ? nullptr : std::get_if<bool>(&it->second);
    return value && *value;
  };
  return (set("sequence_start") ? 1U : 0U) | (set("sequence_end") ? 2U : 0U);
}

StatusCode code_named(const std::string& name) {
  for (int i = 0; i <= 16; ++i) {
    const auto code = static_cast<StatusCode>(i);
    if (name == to_string(code)) return code;
  }
  return StatusCode::Internal;
}

json error_json(const Error& error) {
  return {{"message", error.message()}, {"code", to_string(error.code())}};
}

// A header as sent to a stub. Strings that are not UTF-8 (a server error quoting a client's
// bytes) are sent with U+FFFD in their place rather than thrown on.
std::string dump_header(const json& header) {
  return header.dump(-1, ' ', false, json::error_handler_t::replace);
}

// The string `key` of a message, `fallback` when absent; an error naming it when it is another
// type, as a message of a stub is not trusted to have the types it should.
Result<std::string> string_field(const json& message, const char* key, std::string fallback) {
  auto it = message.find(key);
  if (it == message.end() || it->is_null()) return fallback;
  if (!it->is_string()) {
    return invalid(std::string(key) + " is " + it->type_name() + ", not a string");
  }
  return it->get<std::string>();
}

// ---- one stub -------------------------------------------------------------------------------

struct Instance {
  std::string name;  // Triton's model_instance_name: <group>_<index>
  StubProcess process;
  bool busy = false;
};

// Messages are JSON objects with a "type".
Result<json> header_of(const Frame& frame) {
  json header = json::parse(frame.header, nullptr, false);
  if (header.is_discarded() || !header.is_object() || !header.contains("type") ||
      !header["type"].is_string()) {
    return Error(StatusCode::DataLoss, "a message that is not a JSON object with a type");
  }
  return header;
}

std::string message_of(const json& header) {
  if (header.contains("message") && header["message"].is_string()) {
    return header["message"].get<std::string>();
  }
  return header.dump();
}

class PythonModel;

// Which load of each model version is in service, per host: a stub of an older load that
// breaks after a reload (its request outlived the reload) must not retire the load that
// replaced it, as ModelHost::retire takes whatever is in service under the name.
class CurrentLoads {
 public:
  static CurrentLoads& get() {
    static CurrentLoads* loads = new CurrentLoads;  // never destroyed: used until the end
    return *loads;
  }

  void set(const ModelHost* host, const std::string& name, const std::string& version,
           const std::shared_ptr<PythonModel>& model) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = loads_.begin(); it != loads_.end();) {  // those unloaded since
      it = it->second.expired() ? loads_.erase(it) : std::next(it);
    }
    loads_[{host, name, version}] = model;
  }

  bool is_current(const ModelHost* host, const std::string& name, const std::string& version,
                  const PythonModel* model) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = loads_.find({host, name, version});
    return it != loads_.end() && it->second.lock().get() == model;
  }

 private:
  std::mutex mutex_;
  std::map<std::tuple<const ModelHost*, std::string, std::string>, std::weak_ptr<PythonModel>>
      loads_;
};

class PythonModel {
 public:
  PythonModel(const LoadContext& context, Settings settings, bool decoupled)
      : name_(context.model_name),
        version_(context.version),
        host_(context.host),
        settings_(settings),
        decoupled_(decoupled) {}

  PythonModel(const PythonModel&) = delete;
  PythonModel& operator=(const PythonModel&) = delete;

  // Finalizes every stub that still runs, as Triton calls finalize() at unload.
  ~PythonModel() {
    for (auto& instance : instances_) {
      if (instance.process.pid() <= 0) continue;
      // The answer, or the end of the stub, or the limit: whichever comes first.
      const auto deadline = deadline_after(settings_.finalize_timeout);
      if (write_frame(instance.process.fd(), json{{"type", "finalize"}}.dump(), {}, deadline,
                      instance.process.watch())) {
        (void)read_frame(instance.process.fd(), deadline, settings_.limits,
                         instance.process.watch());
      }
      instance.process.wait_or_kill(1000);
    }
  }

  void add_instance(Instance instance) { instances_.push_back(std::move(instance)); }
  void set_decoupled(bool decoupled) { decoupled_ = decoupled; }

  Result<std::vector<NamedTensor>> compute(const InferRequest& request) {
    std::vector<NamedTensor> outputs;
    auto done = run(request, [&](std::vector<NamedTensor> got) { outputs = std::move(got); });
    if (!done) return done.error();
    return outputs;
  }

  Result<void> compute_decoupled(const InferRequest& request, const ResponseSink& respond) {
    return run(request, [&](std::vector<NamedTensor> got) { respond(std::move(got)); });
  }

 private:
  // Lends a free instance to `use`, waiting for one up to instance_wait_timeout_ms; UNAVAILABLE
  // once the model is broken, past the limit, or at once when every instance is busy and this
  // thread holds one: a BLS call runs on the thread of the execute that made it, so the call
  // would wait for its own caller (a model calling itself, or A -> B -> A), for ever.
  template <typename Use>
  Result<void> with_instance(Use&& use) {
    const auto deadline = deadline_after(settings_.instance_wait_timeout);
    std::unique_lock<std::mutex> lock(mutex_);
    std::size_t index = 0;
    for (;;) {
      if (!broken_.empty()) return Error(StatusCode::Unavailable, broken_);
      for (index = 0; index < instances_.size() && instances_[index].busy; ++index) {
      }
      if (index < instances_.size()) break;
      for (const auto& instance : instances_) {
        if (std::find(held_here.begin(), held_here.end(), &instance) != held_here.end()) {
          return Error(StatusCode::Unavailable,
                       "every instance of Python model '" + name_ +
                           "' is busy, and its own call chain holds one (" + instance.name +
                           "): a BLS call to it would wait for itself");
        }
      }
      if (!deadline) {
        available_.wait(lock);
      } else if (available_.wait_until(lock, *deadline) == std::cv_status::timeout) {
        return Error(StatusCode::Unavailable,
                     "no instance of Python model '" + name_ +
                         "' became free within instance_wait_timeout_ms (" +
                         std::to_string(settings_.instance_wait_timeout.count()) + " ms)");
      }
    }
    instances_[index].busy = true;
    held_here.push_back(&instances_[index]);
    lock.unlock();
    // The instance is free again however `use` ends; a throw means the conversation with the
    // stub is in an unknown state, so the stub is not trusted again.
    struct Release {
      PythonModel& model;
      Instance& instance;
      ~Release() {
        held_here.erase(std::find(held_here.begin(), held_here.end(), &instance));
        std::lock_guard<std::mutex> hold(model.mutex_);
        instance.busy = false;
        model.available_.notify_one();
      }
    } release{*this, instances_[index]};
    try {
      return use(instances_[index]);
    } catch (const std::exception& e) {
      return broke(instances_[index], std::string("could not be answered (") + e.what() + ")");
    }
  }

  // The stub can no longer be trusted: kill it, fail the model with `what`, and retire it so
  // that the server says why until a load brings it back.
  Error broke(Instance& instance, const std::string& what) {
    const std::string ended = instance.process.kill();
    std::string reason =
        "the Python stub of model '" + name_ + "' (instance " + instance.name + ") " + what;
    if (!ended.empty() && what.find(ended) == std::string::npos) reason += "; it " + ended;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (broken_.empty()) broken_ = reason;
    }
    available_.notify_all();
    if (host_ && CurrentLoads::get().is_current(host_.get(), name_, version_, this)) {
      host_->retire(name_, reason);
    }
    return Error(StatusCode::Unavailable, reason);
  }

  // The stub's next message about `execute` within the execute limit; a stub that failed, or
  // that speaks of another execute, is broken.
  Result<std::pair<json, Frame>> next(Instance& instance, std::uint64_t execute) {
    for (;;) {
      auto message = next_any(instance);
      if (!message) return message;
      const json& header = message->first;
      const json& about = header["execute"];
      if (about.is_number_unsigned() && about.get<std::uint64_t>() == execute) return message;
      if (header["type"] == "bls") {
        // A call of a model's thread that outlived its execute: refused, never left waiting.
        if (auto ok = refuse_bls(instance, header); !ok) return ok.error();
        continue;
      }
      return broke(instance, "broke the protocol (a " + header["type"].get<std::string>() +
                                 " message of execute " + dump_header(about) + " during execute " +
                                 std::to_string(execute) + ")");
    }
  }

  Result<std::pair<json, Frame>> next_any(Instance& instance) {
    auto frame = read_frame(instance.process.fd(), deadline_after(settings_.execute_timeout),
                            settings_.limits, instance.process.watch());
    if (!frame) {
      const Error& e = frame.error();
      if (e.code() == StatusCode::DeadlineExceeded) {
        return broke(instance, "did not answer within execute_timeout_ms (" +
                                   std::to_string(settings_.execute_timeout.count()) +
                                   " ms) and was killed");
      }
      if (e.code() == StatusCode::Unavailable) {
        // The socket closed: the process ended (os._exit, a signal, a crash). Reap it to say how.
        const std::string ended = instance.process.wait_or_kill(1000);
        return broke(instance, ended.empty() ? "closed its connection" : ended);
      }
      return broke(instance, "broke the protocol (" + e.message() + ")");
    }
    auto header = header_of(*frame);
    if (!header) return broke(instance, "broke the protocol (" + header.error().message() + ")");
    return std::make_pair(std::move(*header), std::move(*frame));
  }

  Result<void> send(Instance& instance, const json& header, const std::vector<ByteRange>& buffers) {
    return send_dumped(instance, dump_header(header), buffers);
  }

  Result<void> send_dumped(Instance& instance, const std::string& header,
                           const std::vector<ByteRange>& buffers) {
    auto sent = write_frame(instance.process.fd(), header, buffers,
                            deadline_after(settings_.execute_timeout), instance.process.watch());
    if (!sent) {
      if (sent.error().code() == StatusCode::ResourceExhausted) return sent.error();
      if (sent.error().code() == StatusCode::DeadlineExceeded) {
        return broke(instance, "did not read its messages within execute_timeout_ms (" +
                                   std::to_string(settings_.execute_timeout.count()) +
                                   " ms) and was killed");
      }
      const std::string ended = instance.process.wait_or_kill(1000);
      return broke(instance, ended.empty() ? "closed its connection" : ended);
    }
    return {};
  }

  // Runs one request on a free stub, handing each response's outputs to `take`.
  template <typename Take>
  Result<void> run(const InferRequest& request, Take&& take) {
    // The request is described before an instance is taken: a client's string that is not
    // UTF-8 (an id, a parameter, a tensor's name) is the request's error, found here.
    std::vector<ByteRange> buffers;
    std::string header;
    // Every message of the stub's about this execute carries its number: one of another
    // execute's (a response sent late) is a broken protocol, never another request's answer.
    const std::uint64_t execute = ++executes_;
    try {
      json described{{"request_id", request.request_id()},
                     {"inputs", describe_all(request.inputs(), buffers)},
                     {"requested_outputs", json::array()},
                     {"parameters", parameters_json(request.parameters()).dump()},
                     {"correlation_id", correlation_id_of(request.parameters())},
                     {"flags", sequence_flags_of(request.parameters())}};
      for (const auto& wanted : request.outputs()) {
        described["requested_outputs"].push_back(wanted.name);
      }
      header =
          json{{"type", "execute"}, {"execute", execute}, {"requests", json::array({described})}}
              .dump();
    } catch (const json::exception& e) {
      return invalid("a request to Python model '" + name_ +
                     "' holds a string that is not UTF-8 (its id, a parameter or a tensor's "
                     "name): " +
                     e.what());
    }
    return with_instance([&](Instance& instance) -> Result<void> {
      if (auto ok = send_dumped(instance, header, buffers); !ok) return ok;
      return decoupled_ ? await_decoupled(instance, execute, take)
                        : await_responses(instance, execute, take);
    });
  }

  template <typename Take>
  Result<void> await_responses(Instance& instance, std::uint64_t execute, Take& take) {
    for (;;) {
      auto message = next(instance, execute);
      if (!message) return message.error();
      auto& [header, frame] = *message;
      const std::string type = header["type"].get<std::string>();
      if (type == "bls") {
        if (auto ok = answer_bls(instance, header, frame); !ok) return ok;
        continue;
      }
      if (type == "error") {
        // Triton's words for a model whose execute raised.
        return Error(StatusCode::Internal, "Failed to process the request(s) for model '" + name_ +
                                               "', message: " + message_of(header));
      }
      if (type != "responses" || !header.contains("responses") || !header["responses"].is_array() ||
          header["responses"].size() != 1) {
        return broke(instance, "broke the protocol (sent " + header.dump() + ")");
      }
      return take_response(instance, header["responses"][0], frame, take);
    }
  }

  template <typename Take>
  // A decoupled execute ends when execute() returned and the final flag came, in either order:
  // a model's thread may send responses after execute() returned (Triton's usual pattern), and
  // they are this request's. An error response does not end the stream (as in Triton): the
  // responses after it are handed on too, and the first error is the request's, given last.
  Result<void> await_decoupled(Instance& instance, std::uint64_t execute, Take& take) {
    bool executed = false;
    bool final = false;
    std::optional<Error> error;
    while (!executed || !final) {
      auto message = next(instance, execute);
      if (!message) return message.error();
      auto& [header, frame] = *message;
      const std::string type = header["type"].get<std::string>();
      if (type == "bls") {
        if (auto ok = answer_bls(instance, header, frame); !ok) return ok;
      } else if (type == "response") {
        if (header.contains("flags") && header["flags"].is_number_unsigned() &&
            (header["flags"].get<std::uint64_t>() & 1U) != 0) {
          final = true;
        }
        if (!header.contains("response") || header["response"].is_null()) continue;
        if (auto ok = take_response(instance, header["response"], frame, take); !ok && !error) {
          error = ok.error();
        }
      } else if (type == "executed") {
        executed = true;
        if (header.contains("error") && header["error"].is_string() && !error) {
          error =
              Error(StatusCode::Internal, "Failed to process the request(s) for model '" + name_ +
                                              "', message: " + header["error"].get<std::string>());
        }
      } else {
        return broke(instance, "broke the protocol (sent " + header.dump() + ")");
      }
    }
    if (error) return *error;
    return {};
  }

  template <typename Take>
  Result<void> take_response(Instance& instance, const json& response, const Frame& frame,
                             Take& take) {
    if (response.contains("error") && response["error"].is_object()) {
      const json& e = response["error"];
      auto code = string_field(e, "code", "INTERNAL");
      auto message = string_field(e, "message", "");
      if (!code || !message) {
        return broke(instance, "broke the protocol (sent the error " + dump_header(e) + ")");
      }
      return Error(code_named(*code), *message);
    }
    auto outputs = tensors_of(response.contains("outputs") ? response["outputs"] : json::array(),
                              frame, "the Python stub of model '" + name_ + "'");
    if (!outputs) return outputs.error();
    take(std::move(*outputs));
    return {};
  }

  // A BLS call of the stub's: runs it through the host and answers, one response or (decoupled)
  // each as it comes and then the end. The error of a call is the stub's to handle; only a
  // stub that cannot be answered fails the execute.
  Result<void> answer_bls(Instance& instance, const json& header, const Frame& frame) {
    const bool decoupled = header.contains("decoupled") && header["decoupled"].is_boolean() &&
                           header["decoupled"].get<bool>();
    // The answers name the call, for the stub's reader to hand them to the thread that waits.
    const json call = header.contains("call") ? header["call"] : json(nullptr);
    auto answer = [&](const Result<InferResult>& result) {
      std::vector<ByteRange> buffers;
      json response =
          result ? json{{"outputs", describe_all(result->outputs(), buffers)}, {"error", nullptr}}
                 : json{{"outputs", json::array()}, {"error", error_json(result.error())}};
      return send(instance, {{"type", "bls_response"}, {"call", call}, {"response", response}},
                  buffers);
    };
    auto end = [&](const Result<void>& outcome) {
      json e = outcome ? json(nullptr) : error_json(outcome.error());
      return send(instance, {{"type", "bls_end"}, {"call", call}, {"error", e}}, {});
    };
    auto fail = [&](const Error& error) -> Result<void> {
      if (decoupled) return end(error);
      return answer(error);
    };
    if (!host_) {
      return fail(Error(
          StatusCode::Unavailable,
          "model '" + name_ + "' was loaded outside an executor: it cannot call other models"));
    }
    auto inputs = tensors_of(header.contains("inputs") ? header["inputs"] : json::array(), frame,
                             "the Python stub of model '" + name_ + "'");
    if (!inputs) return fail(inputs.error());
    auto model = string_field(header, "model_name", "");
    auto version = string_field(header, "model_version", "");
    auto id = string_field(header, "request_id", "");
    for (const auto* field : {&model, &version, &id}) {
      if (!*field) return fail(invalid("a BLS request's " + field->error().message()));
    }
    InferRequest request(*model, *version);
    for (auto& input : *inputs) request.input(std::move(input.name), std::move(input.tensor));
    if (header.contains("requested_outputs")) {
      const json& wanted = header["requested_outputs"];
      if (!wanted.is_array()) return fail(invalid("a BLS request's requested_outputs is no list"));
      for (const auto& output : wanted) {
        if (!output.is_string()) {
          return fail(invalid("a BLS request's requested_outputs holds a " +
                              std::string(output.type_name()) + ", not a string"));
        }
        request.output(output.get<std::string>());
      }
    }
    request.id(*id);
    if (!decoupled) return answer(host_->infer(request));
    Result<void> sent;
    auto outcome = host_->infer_responses(request, [&](InferResult result) {
      if (sent) sent = answer(std::move(result));
    });
    if (!sent) return sent;
    return end(outcome);
  }

  Result<void> refuse_bls(Instance& instance, const json& header) {
    const json call = header.contains("call") ? header["call"] : json(nullptr);
    const json error = error_json(
        Error(StatusCode::Unavailable,
              "a BLS call is answered only while a request is under way: this one came between "
              "requests"));
    const bool decoupled = header.contains("decoupled") && header["decoupled"] == true;
    if (decoupled)
      return send(instance, {{"type", "bls_end"}, {"call", call}, {"error", error}}, {});
    return send(instance,
                {{"type", "bls_response"},
                 {"call", call},
                 {"response", {{"outputs", json::array()}, {"error", error}}}},
                {});
  }

  // The instances, of every Python model, that this thread holds (see with_instance).
  static thread_local std::vector<const Instance*> held_here;

  std::string name_;
  std::string version_;
  std::shared_ptr<ModelHost> host_;
  Settings settings_;
  bool decoupled_;
  std::mutex mutex_;
  std::condition_variable available_;
  std::vector<Instance> instances_;
  std::atomic<std::uint64_t> executes_{0};  // the number of the last execute sent
  std::string broken_;                      // why the model can no longer run, once it cannot
};

thread_local std::vector<const Instance*> PythonModel::held_here;

// ---- loading --------------------------------------------------------------------------------

// A private directory (mode 0700) holding the stub's scripts, removed with this object: the
// stubs read them as they start.
class ScriptDirectory {
 public:
  static Result<ScriptDirectory> make() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/sonic-python-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      return Error(StatusCode::Internal, "cannot make a directory for the Python stub (" + pattern +
                                             "): " + std::strerror(errno));
    }
    ScriptDirectory directory;
    directory.path_ = pattern;
    auto write = [&](const char* name, const unsigned char* bytes, unsigned long size) {
      std::ofstream out(fs::path(pattern) / name, std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(size));
      return static_cast<bool>(out);
    };
    if (!write("sonic_python_stub.py", sonic_sonic_python_stub_py,
               sonic_sonic_python_stub_py_size) ||
        !write("triton_python_backend_utils.py", sonic_triton_python_backend_utils_py,
               sonic_triton_python_backend_utils_py_size)) {
      return Error(StatusCode::Internal, "cannot write the Python stub into " + pattern);
    }
    return directory;
  }

  ScriptDirectory() = default;
  ScriptDirectory(ScriptDirectory&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  ScriptDirectory& operator=(ScriptDirectory&&) = delete;
  ScriptDirectory(const ScriptDirectory&) = delete;
  ScriptDirectory& operator=(const ScriptDirectory&) = delete;
  ~ScriptDirectory() {
    std::error_code ignored;
    if (!path_.empty()) fs::remove_all(path_, ignored);
  }

  std::string stub() const { return path_ + "/sonic_python_stub.py"; }

 private:
  std::string path_;
};

// Waits for the stub's answer to a load step: `expected`, or its error.
Result<json> expect(Instance& instance, const std::string& expected, const Settings& settings,
                    const std::string& model_file) {
  auto frame = read_frame(instance.process.fd(), deadline_after(settings.initialize_timeout),
                          settings.limits, instance.process.watch());
  if (!frame) {
    std::string what = frame.error().message();
    if (frame.error().code() == StatusCode::DeadlineExceeded) {
      what = "no answer within initialize_timeout_ms (" +
             std::to_string(settings.initialize_timeout.count()) + " ms)";
    }
    const std::string ended = instance.process.wait_or_kill(1000);
    return Error(StatusCode::Unavailable, "the Python stub running " + model_file + " failed (" +
                                              what + (ended.empty() ? "" : "; it " + ended) + ")");
  }
  auto header = header_of(*frame);
  if (!header) return header.error();
  const std::string type = (*header)["type"].get<std::string>();
  if (type == "error") {
    std::string message = message_of(*header);
    if (header->contains("traceback") && (*header)["traceback"].is_string()) {
      message += "\n" + (*header)["traceback"].get<std::string>();
    }
    return Error(StatusCode::InvalidArgument, message);
  }
  if (type != expected) {
    return Error(StatusCode::Internal,
                 "the Python stub answered " + type + " where " + expected + " was due");
  }
  return std::move(*header);
}

std::string instance_name(const ModelConfig& config, std::size_t group, std::int32_t index) {
  const auto& groups = config.instance_groups;
  std::string group_name = group < groups.size() && !groups[group].name.empty()
                               ? groups[group].name
                               : config.name + "_" + std::to_string(group);
  return group_name + "_" + std::to_string(index);
}

Result<std::string> config_json(const ModelConfig& config) {
  return protocol::model_config_to_json(repository::serialize_model_config(config));
}

Result<LoadedModel> load(const ModelConfig& given, const std::string& model_file,
                         const LoadContext& context) {
  auto python = find_python();
  if (!python) return python.error();
  auto settings = settings_of(given);
  if (!settings) return settings.error();
  auto scripts = ScriptDirectory::make();
  if (!scripts) return scripts.error();

  ModelConfig config = given;
  auto model = std::make_shared<PythonModel>(context, *settings, given.decoupled);
  // Triton's instance names: <group name, by default <model>_<group index>>_<index>.
  std::vector<std::string> names;
  for (std::size_t g = 0; g < config.instance_groups.size(); ++g) {
    for (std::int32_t i = 0; i < config.instance_groups[g].count; ++i) {
      names.push_back(instance_name(config, g, i));
    }
  }
  if (names.empty()) names.push_back(instance_name(config, 0, 0));

  for (std::size_t i = 0; i < names.size(); ++i) {
    auto process = StubProcess::spawn(*python, {"-u", "-B", scripts->stub(), model_file, names[i]});
    if (!process) return process.error();
    Instance instance{names[i], std::move(*process), false};
    if (auto hello = expect(instance, "hello", *settings, model_file); !hello) {
      return hello.error();
    }
    if (i == 0) {
      // auto_complete_config(auto_complete_model_config), when model.py has it, completes the
      // config once; every instance is then initialized with the completed one.
      auto printed = config_json(config);
      if (!printed) return printed.error();
      if (auto sent = write_frame(instance.process.fd(),
                                  json{{"type", "auto_complete"}, {"config", *printed}}.dump(), {},
                                  deadline_after(settings->initialize_timeout));
          !sent) {
        return sent.error();
      }
      auto completed = expect(instance, "config", *settings, model_file);
      if (!completed) {
        return Error(completed.error().code(),
                     "auto_complete_config failed: " + completed.error().message());
      }
      if (!(*completed)["config"].is_string()) {
        return Error(StatusCode::Internal, "auto_complete_config gave no config");
      }
      auto parsed = repository::parse_model_config_json((*completed)["config"].get<std::string>(),
                                                        "the config auto_complete_config gave");
      if (!parsed) return parsed.error();
      if (parsed->name != config.name) {
        return invalid("auto_complete_config changed the model's name to '" + parsed->name + "'");
      }
      config = std::move(*parsed);
      model->set_decoupled(config.decoupled);
    }
    auto printed = config_json(config);
    if (!printed) return printed.error();
    // Triton's initialize(args): every value a string.
    json args{{"model_config", *printed},
              {"model_instance_kind", "CPU"},
              {"model_instance_name", names[i]},
              {"model_instance_device_id", "0"},
              {"model_repository", context.model_directory},
              {"model_version", context.version},
              {"model_name", context.model_name}};
    if (auto sent = write_frame(
            instance.process.fd(),
            json{{"type", "initialize"}, {"args", args}, {"decoupled", config.decoupled}}.dump(),
            {}, deadline_after(settings->initialize_timeout));
        !sent) {
      return sent.error();
    }
    if (auto ready = expect(instance, "initialized", *settings, model_file); !ready) {
      return Error(ready.error().code(), "initialize failed: " + ready.error().message());
    }
    model->add_instance(std::move(instance));
  }

  LoadedModel loaded;
  if (context.host)
    CurrentLoads::get().set(context.host.get(), context.model_name, context.version, model);
  loaded.config = std::move(config);
  if (loaded.config.decoupled) {
    loaded.decoupled = [model](const InferRequest& request, const ResponseSink& respond) {
      return model->compute_decoupled(request, respond);
    };
    // A program whose repository does not take decoupled functions still gets an answer.
    loaded.compute =
        [name = context.model_name](const InferRequest&) -> Result<std::vector<NamedTensor>> {
      return Error(StatusCode::Unimplemented,
                   "model '" + name + "' is decoupled: its responses come through a stream");
    };
  } else {
    loaded.compute = [model](const InferRequest& request) { return model->compute(request); };
  }
  return loaded;
}

// Registers the backend when the library is loaded. Triton's Python backend has no platform.
const bool registered = [] {
  repository::register_backend({"python", {}, "model.py", repository::LoadFunction(load)});
  return true;
}();

}  // namespace

}  // namespace sonic::python_backend

// Referenced by the anchor object linked into every program that uses sonic::python_backend,
// so that the linker keeps the library (and its registration) even under --as-needed.
extern "C" {
SONIC_EXPORT int sonic_python_backend_registration_anchor = 1;
}
