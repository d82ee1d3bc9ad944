// sonic — a Client's endpoints: their transports, least-outstanding choice, circuit breaker,
// health probes, and the addresses behind host names, looked up again as they change.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "client/model_ref.hpp"
#include "client/timer_queue.hpp"
#include "sonic/error.hpp"
#include "sonic/options.hpp"
#include "sonic/stats.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

/// The endpoints requests may go to. Thread-safe. Endpoints have fixed indices ("slots") for
/// the pool's whole life, so that attempts can report back by index; an address that leaves
/// a name's rotation drains, and its slot is reused once its transport is gone.
///
/// Transports are destroyed only by close() and by the drain check on the timer thread, never
/// on one of their own threads, and never while anyone else holds them.
class EndpointPool : public std::enable_shared_from_this<EndpointPool> {
 public:
  static constexpr std::size_t kNone = SIZE_MAX;

  /// Where an attempt goes: a slot index and its transport (held only for the call).
  struct Pick {
    std::size_t slot = kNone;
    std::shared_ptr<Transport> transport;
  };

  /// Creates the endpoints of options.endpoints, looking host names up now when
  /// options.resolution.each_address asks for it. Throws sonic::Error(InvalidArgument) for a
  /// malformed URL or an unlinked scheme. `timers` must outlive every task scheduled on it.
  EndpointPool(ClientOptions options, TimerQueue& timers)
      : options_(std::move(options)), timers_(timers) {
    for (const auto& url : options_.endpoints) {
      Endpoint endpoint = parse_endpoint(url).value();
      if (options_.resolution.each_address && !is_ip_literal(endpoint.host)) {
        add_name(endpoint);
      } else {
        auto& slot = new_slot();
        activate(slot, url, make_transport(endpoint).value());
      }
    }
  }

  EndpointPool(const EndpointPool&) = delete;
  EndpointPool& operator=(const EndpointPool&) = delete;

  /// Starts the periodic lookups of host names (needs shared ownership, hence not in the
  /// constructor).
  void start() {
    if (!names_.empty()) schedule_lookup();
    if (discovering()) discover();
  }

  /// Stops probing and looking up, then destroys every transport: their calls in flight
  /// complete with CANCELLED before this returns. Idempotent.
  void close() {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (closed_) return;
      closed_ = true;
      // A lookup in progress calls the resolver and may log: both belong to the client, so
      // neither may run once it is gone. Wait for it.
      lookups_done_.wait(lock, [this] {
        return std::none_of(names_.begin(), names_.end(),
                            [](const Name& n) { return n.looking_up; });
      });
    }
    for (auto& slot : slots_) {
      std::shared_ptr<Transport> transport;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        transport = std::move(slot->transport);
      }
      release(std::move(transport));
    }
  }

  /// An endpoint in rotation for `model`: not known to
  /// lack it, listing it when discovery has heard from it, reporting the pinned configuration,
  /// among the model's preferred endpoints while one qualifies, chosen as
  /// ClientOptions::routing.balancing says. `avoid` (where the previous attempt failed) only
  /// when nothing else may take it: when discovery's lists leave nothing else, an endpoint that
  /// does not list the model is tried (the lists may be out of date; they are asked again).
  /// Counts the attempt as outstanding until record(). Nothing when no endpoint qualifies.
  std::optional<Pick> pick(std::size_t avoid, const ModelRef& model) {
    std::size_t best = kNone;
    std::shared_ptr<Transport> transport;
    bool stale = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_ || slots_.empty()) return std::nullopt;
      const Candidates candidates{*this, model, Clock::now()};
      // Takes the choice of a pass unless the one before found an endpoint other than `avoid`.
      auto pass = [&](auto eligible) {
        if (best != kNone && best != avoid) return false;
        const std::size_t found = choose(avoid, eligible);
        if (found == kNone || (found == avoid && best != kNone)) return false;
        best = found;
        return found != avoid;
      };
      // Lookups by name only when routing names models.
      const auto& by_model = options_.routing.preferred;
      auto preferred = by_model.empty() ? by_model.end() : by_model.find(candidates.ref.name);
      if (preferred != by_model.end()) {
        const auto& urls = preferred->second;
        pass([&](const Slot& s) {
          return candidates.qualifies(s, false, false) &&
                 (std::find(urls.begin(), urls.end(), s.url) != urls.end() ||
                  (s.name != kNone &&
                   std::find(urls.begin(), urls.end(), names_[s.name].endpoint.url) != urls.end()));
        });
      }
      pass([&](const Slot& s) { return candidates.qualifies(s, false, false); });
      stale = pass([&](const Slot& s) { return candidates.qualifies(s, false, true); });
      // Every endpoint refused discovery: without a fallback, trying one beats refusing the
      // request outright (as the last endpoint stays in rotation after failures).
      if (!options_.fallback)
        pass([&](const Slot& s) { return candidates.qualifies(s, true, true); });
      if (best != kNone) {
        last_picked_ = best;
        auto& stats = slots_[best]->stats;
        ++stats.outstanding;
        ++stats.attempts;
        transport = slots_[best]->transport;
      }
    }
    if (stale) rediscover_soon();
    if (best == kNone) return std::nullopt;
    return Pick{best, std::move(transport)};
  }

  /// Whether a request for `model` that found no endpoint should wait a moment: a question
  /// about a model pinned to a checksum is still unanswered by an endpoint in rotation (its
  /// model list, or its configuration).
  bool awaiting_discovery(const ModelRef& ref) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_ || !pinned_checksum(ref.name)) return false;
    for (const auto& slot : slots_) {
      if (slot->state == State::Active && !slot->ejected &&
          (slot->index_pending || slot->config_pending.count(ref.name))) {
        return true;
      }
    }
    return false;
  }

  /// Why no endpoint may serve `model`, endpoint by endpoint, for an error message; empty when
  /// routing has nothing to say (no discovery, no pin).
  std::string why_unservable(const ModelRef& ref) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!discovering()) return {};
    const std::string& name = ref.name;
    const std::string* checksum = pinned_checksum(ref.name);
    std::string out;
    for (const auto& slot : slots_) {
      if (slot->state != State::Active) continue;
      std::string why;
      if (slot->ejected) {
        why = "ejected after failures";
      } else if (slot->refused_discovery) {
        why = "refused model discovery (" + slot->refusal + ")";
      } else if (slot->ready_models && !lists(*slot->ready_models, ref)) {
        why = "does not list the model as ready";
      } else if (checksum) {
        auto it = slot->config_checked.find(name);
        if (it == slot->config_checked.end()) {
          why = "has not reported its configuration yet";
        } else if (it->second != *checksum) {
          why = "configuration checksum " + it->second + ", pinned " + *checksum;
        }
      }
      if (why.empty()) continue;
      out += (out.empty() ? "" : "; ") + slot->url + ": " + why;
    }
    return out;
  }

  /// A NOT_FOUND, lists that looked out of date, or a question that failed: asks every
  /// endpoint again, now or a second after the last round (at most one round a second).
  void rediscover_soon() {
    Clock::time_point at;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_ || !discovering() || rediscover_scheduled_) return;
      rediscover_scheduled_ = true;
      at = std::max(Clock::now(), last_discovery_ + kRediscoverySpacing);
    }
    std::weak_ptr<EndpointPool> weak = weak_from_this();
    timers_.schedule(this, at, [weak] {
      if (auto pool = weak.lock()) pool->discover(false);
    });
  }

  /// The outcome of an attempt picked from `slot`: breaker bookkeeping and statistics.
  /// `server_failure`: the server or the path to it failed (UNAVAILABLE, a per-attempt
  /// timeout), which counts toward ejection.
  void record(std::size_t slot, bool ok, bool server_failure, Clock::duration latency) {
    std::string ejected_url;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& s = *slots_[slot];
      auto& e = s.stats;
      --e.outstanding;
      if (ok) {
        ++e.successes;
        const auto ns = static_cast<double>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(latency).count());
        e.latency_ns += static_cast<std::uint64_t>(ns);
        s.recent_latency_ns = s.recent_latency_ns == 0 ? ns : 0.8 * s.recent_latency_ns + 0.2 * ns;
        s.consecutive_failures = 0;
        return;
      }
      ++e.failures;
      // A failure looks slow to PowerOfTwoChoices: an endpoint that fails fast must not look
      // like the fastest.
      s.recent_latency_ns = std::min(1e10, std::max(2 * s.recent_latency_ns, 1e6));
      if (!server_failure || s.state != State::Active) return;
      // Without a fallback the last endpoint in rotation stays in it: trying a failing server
      // beats refusing every request outright.
      bool can_eject = in_rotation() > 1 || options_.fallback != nullptr;
      s.consecutive_failures =
          std::min(s.consecutive_failures + 1, options_.breaker.failures_to_eject);
      if (s.consecutive_failures >= options_.breaker.failures_to_eject && !s.ejected && can_eject) {
        s.ejected = true;
        s.rest_until = Clock::now() + options_.breaker.cool_down;
        ++e.ejections;
        ejected_url = s.url;
      }
    }
    if (!ejected_url.empty()) {
      log(LogLevel::Warning, "endpoint " + ejected_url + " ejected after " +
                                 std::to_string(options_.breaker.failures_to_eject) +
                                 " consecutive failures");
      schedule_probe();
    }
  }

  /// `slot` answered NOT_FOUND for `model`: no request for it goes there for model_recheck.
  void lacks_model(std::size_t slot, const ModelRef& model) {
    std::lock_guard<std::mutex> lock(mutex_);
    slots_[slot]->missing_models[model] = Clock::now() + options_.breaker.model_recheck;
  }

  /// The transport for control calls: the first of control_transports(). Null once closed.
  std::shared_ptr<Transport> control_transport() {
    auto all = control_transports();
    return all.empty() ? nullptr : all.front();
  }

  /// Every active endpoint, for a control call that moves on from one that does not answer:
  /// healthy ones first, in rotation order, then ejected ones. Empty once closed.
  std::vector<std::shared_ptr<Transport>> control_transports() {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::shared_ptr<Transport>> healthy, ejected;
    for (auto& slot : slots_) {
      if (slot->state != State::Active) continue;
      (slot->ejected ? ejected : healthy).push_back(slot->transport);
    }
    healthy.insert(healthy.end(), ejected.begin(), ejected.end());
    return healthy;
  }

  /// Endpoints that take requests now (healthy or not).
  std::size_t active() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::size_t n = 0;
    for (const auto& slot : slots_) n += slot->state == State::Active ? 1 : 0;
    return n;
  }

  /// The URL of `slot` (empty once vacant).
  std::string url(std::size_t slot) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return slot < slots_.size() ? slots_[slot]->url : std::string();
  }

  /// Statistics of the endpoints that exist now (draining ones included).
  std::vector<EndpointStats> stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<EndpointStats> all;
    for (const auto& slot : slots_) {
      if (slot->state == State::Vacant) continue;
      all.push_back(slot->stats);
      all.back().url = slot->url;
      all.back().healthy = slot->state == State::Active && !slot->ejected;
    }
    return all;
  }

 private:
  enum class State { Active, Draining, Vacant };

  struct Slot {
    // Guarded by EndpointPool::mutex_.
    State state = State::Vacant;
    std::string url;
    std::size_t name = kNone;  // index in names_ when the address came from a host name
    std::shared_ptr<Transport> transport;
    EndpointStats stats;
    int consecutive_failures = 0;
    bool ejected = false;
    bool probing = false;
    Clock::time_point rest_until{};
    std::map<ModelRef, Clock::time_point> missing_models;  // model -> recheck time
    double recent_latency_ns = 0;  // moving average of successful attempts' latency
    // Discovery (ClientOptions::routing): the models it listed ready (name -> versions), once it
    // answered; whether it refused the last question, and why; for pinned models, the checksum
    // of the configuration it reported ("" when it reported none).
    std::optional<std::map<std::string, std::set<std::string>, std::less<>>> ready_models;
    bool refused_discovery = false;
    std::string refusal;
    std::map<std::string, std::string> config_checked;
    bool index_pending = false;            // its model list asked, not yet answered
    std::set<std::string> config_pending;  // pinned models whose configuration is asked

    bool lacks(const ModelRef& model, Clock::time_point now) const {
      auto it = missing_models.find(model);
      return it != missing_models.end() && it->second > now;
    }
  };

  // A host name whose every address is an endpoint.
  struct Name {
    Endpoint endpoint;
    bool looking_up = false;
  };

  void log(LogLevel level, const std::string& message) const {
    if (options_.log) options_.log(level, message);
  }

  // Whether a repository index lists the model (the version too, when both say one).
  static bool lists(const std::map<std::string, std::set<std::string>, std::less<>>& ready,
                    const ModelRef& ref) {
    auto it = ready.find(ref.name);
    if (it == ready.end()) return false;
    if (ref.version.empty() || it->second.count({}) != 0) return true;
    return it->second.count(ref.version) != 0;
  }

  // Guarded by mutex_ (options_ is fixed).
  bool discovering() const {
    if (options_.routing.discovery_interval.count() > 0) return true;
    for (const auto& [model, pin] : options_.routing.pins) {
      if (!pin.config_checksum.empty()) return true;
    }
    return false;
  }
  const std::string* pinned_checksum(std::string_view model) const {
    if (options_.routing.pins.empty()) return nullptr;
    auto it = options_.routing.pins.find(std::string(model));
    return it == options_.routing.pins.end() || it->second.config_checksum.empty()
               ? nullptr
               : &it->second.config_checksum;
  }

  // What qualifies an endpoint for a model now. Used under mutex_.
  struct Candidates {
    const EndpointPool& pool;
    const ModelRef& ref;
    Clock::time_point now;
    bool qualifies(const Slot& s, bool despite_refusal, bool despite_index) const {
      if (s.state != State::Active || s.ejected) return false;
      if (s.refused_discovery && !despite_refusal) return false;
      if (!s.missing_models.empty() && s.lacks(ref, now)) return false;
      if (!despite_index && s.ready_models && !lists(*s.ready_models, ref)) return false;
      if (const std::string* checksum = pool.pinned_checksum(ref.name)) {
        auto it = s.config_checked.find(ref.name);
        if (it == s.config_checked.end() || it->second != *checksum) return false;
      }
      return true;
    }
  };

  // Of the slots `eligible` accepts: with LeastOutstanding the one with the fewest attempts in
  // flight (ties rotate), with PowerOfTwoChoices the better-looking of two drawn at random;
  // `avoid` only when no other qualifies. kNone when none qualifies. Under mutex_.
  template <typename Eligible>
  std::size_t choose(std::size_t avoid, Eligible&& eligible) {
    const std::size_t n = slots_.size();
    if (options_.routing.balancing == Balancing::PowerOfTwoChoices) {
      // Two distinct eligible slots, drawn uniformly (reservoir sampling in one pass).
      std::size_t first = kNone, second = kNone, seen = 0, avoided = kNone;
      for (std::size_t i = 0; i < n; ++i) {
        if (!eligible(*slots_[i])) continue;
        if (i == avoid) {
          avoided = i;
          continue;
        }
        ++seen;
        if (seen == 1) {
          first = i;
        } else if (seen == 2) {
          second = i;
        } else {
          std::uniform_int_distribution<std::size_t> draw(0, seen - 1);
          const std::size_t at = draw(random_);
          if (at == 0)
            first = i;
          else if (at == 1)
            second = i;
        }
      }
      if (first == kNone) return avoided;
      if (second == kNone) return first;
      return load_score(*slots_[second]) < load_score(*slots_[first]) ? second : first;
    }
    std::size_t best = kNone;
    auto better = [&](std::size_t i) {
      if (best == kNone) return true;
      if ((i == avoid) != (best == avoid)) return best == avoid;
      return slots_[i]->stats.outstanding < slots_[best]->stats.outstanding;
    };
    // The scan starts after the endpoint picked last, so that ties take turns over the
    // endpoints that qualify: a pass that finds none, or an endpoint that is out, moves no
    // turn on.
    const std::size_t start = (last_picked_ + 1) % n;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (start + k) % n;
      if (eligible(*slots_[i]) && better(i)) best = i;
    }
    return best;
  }

  // How long a new request would take there, roughly: the requests in flight, and this one,
  // times the recent latency (one that has not answered yet counts as fast, to be tried).
  static double load_score(const Slot& s) {
    return static_cast<double>(s.stats.outstanding + 1) *
           (s.recent_latency_ns > 0 ? s.recent_latency_ns : 1.0);
  }

  // Asks every active endpoint for its ready models (and, for models pinned to a checksum, for
  // their configuration), then schedules the next round. `periodic`: the round the interval
  // schedules (a rediscovery after a NOT_FOUND does not schedule another).
  void discover(bool periodic = true) {
    std::vector<std::pair<std::size_t, std::shared_ptr<Transport>>> asked;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) return;
      last_discovery_ = Clock::now();
      if (!periodic) rediscover_scheduled_ = false;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        if (slots_[i]->state != State::Active) continue;
        slots_[i]->index_pending = true;
        asked.emplace_back(i, slots_[i]->transport);
      }
    }
    for (auto& [i, transport] : asked) {
      Transport* which = transport.get();
      transport->repository_index_async(
          true, Clock::now() + options_.control_timeout,
          [this, i = i, which](Result<std::vector<ModelIndex>> index) {
            on_index(i, which, std::move(index));
          });
    }
    asked.clear();  // hold no transport past the calls (close() waits for them to be let go)
    if (periodic && options_.routing.discovery_interval.count() > 0) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) return;
      std::weak_ptr<EndpointPool> weak = weak_from_this();
      timers_.schedule(this, Clock::now() + options_.routing.discovery_interval, [weak] {
        if (auto pool = weak.lock()) pool->discover();
      });
    }
  }

  void on_index(std::size_t i, Transport* which, Result<std::vector<ModelIndex>> index) {
    std::vector<std::string> to_check;  // pinned models to ask the configuration of
    std::shared_ptr<Transport> transport;
    std::string message;
    bool failed = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Slot& s = *slots_[i];
      if (closed_ || s.state != State::Active || s.transport.get() != which) return;
      s.index_pending = false;
      const bool unimplemented = !index && index.code() == StatusCode::Unimplemented;
      if (!index && !unimplemented) {
        if (!s.refused_discovery) {
          message = "endpoint " + s.url + " refused model discovery (" + index.error().message() +
                    "): no requests until it answers";
        }
        s.refused_discovery = true;
        s.refusal = index.error().message();
        failed = true;
      } else {
        if (s.refused_discovery) message = "endpoint " + s.url + " answers model discovery again";
        s.refused_discovery = false;
        if (index) {
          std::map<std::string, std::set<std::string>, std::less<>> ready;
          for (const auto& model : *index) {
            if (model.state.empty() || model.state == "READY") {
              ready[model.name].insert(model.version);
            }
          }
          s.ready_models = std::move(ready);
        }
        // A server without the repository extension lists nothing: its configurations are
        // asked all the same.
        for (const auto& [model, pin] : options_.routing.pins) {
          if (pin.config_checksum.empty()) continue;
          if (s.ready_models && !lists(*s.ready_models, ModelRef{model, pin.version})) continue;
          to_check.push_back(model);
          s.config_pending.insert(model);
        }
        transport = s.transport;
      }
    }
    if (!message.empty()) log(failed ? LogLevel::Warning : LogLevel::Info, message);
    if (failed) rediscover_soon();  // asked again, whatever discovery_interval says
    for (const auto& model : to_check) {
      const std::string& version = options_.routing.pins.at(model).version;
      transport->model_config_async(model, version, Clock::now() + options_.control_timeout,
                                    [this, i, which, model](Result<std::string> config) {
                                      on_config(i, which, model, std::move(config));
                                    });
    }
  }

  void on_config(std::size_t i, Transport* which, const std::string& model,
                 Result<std::string> config) {
    std::string message;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      Slot& s = *slots_[i];
      if (closed_ || s.state != State::Active || s.transport.get() != which) return;
      s.config_pending.erase(model);
      const std::string checksum = config ? model_config_checksum(*config) : std::string();
      const std::string& pinned = options_.routing.pins.at(model).config_checksum;
      auto it = s.config_checked.find(model);
      const bool changed = it == s.config_checked.end() || it->second != checksum;
      s.config_checked[model] = checksum;
      if (changed && checksum != pinned) {
        message = "endpoint " + s.url + " reports model '" + model + "' with " +
                  (config ? "configuration checksum " + checksum
                          : "no configuration (" + config.error().message() + ")") +
                  ", not the pinned " + pinned + ": it gets no requests for it";
      }
    }
    if (!message.empty()) log(LogLevel::Warning, message);
    if (!config) rediscover_soon();  // a failed question is asked again
  }

  Result<std::shared_ptr<Transport>> make_transport(const Endpoint& endpoint) const {
    auto transport = transport_registry().create(endpoint, options_);
    if (!transport) return transport.error();
    return std::shared_ptr<Transport>(std::move(*transport));
  }

  // Construction only (slots_ grows only before start(), while no other thread sees it).
  Slot& new_slot() {
    slots_.push_back(std::make_unique<Slot>());
    return *slots_.back();
  }

  // Guarded by mutex_ after construction.
  static void activate(Slot& slot, std::string url, std::shared_ptr<Transport> transport) {
    slot.state = State::Active;
    slot.url = std::move(url);
    slot.transport = std::move(transport);
    slot.stats = EndpointStats{};
    slot.consecutive_failures = 0;
    slot.ejected = false;
    slot.probing = false;
    slot.missing_models.clear();
    slot.recent_latency_ns = 0;
    slot.ready_models.reset();
    slot.refused_discovery = false;
    slot.refusal.clear();
    slot.config_checked.clear();
    slot.index_pending = false;
    slot.config_pending.clear();
  }

  std::size_t in_rotation() const {  // guarded by mutex_
    std::size_t n = 0;
    for (const auto& slot : slots_) n += slot->state == State::Active && !slot->ejected ? 1 : 0;
    return n;
  }

  Resolver resolver() const {
    return options_.resolution.resolver ? options_.resolution.resolver
                                        : transport_registry().resolver();
  }

  // Reserves the slots of a host name and fills them with its addresses now. When the lookup
  // fails, the name itself is the endpoint (its transport looks it up when connecting) until a
  // later lookup succeeds.
  void add_name(const Endpoint& endpoint) {
    std::size_t index = names_.size();
    names_.push_back(Name{endpoint, false});
    std::size_t first = slots_.size();
    for (std::size_t i = 0; i < options_.resolution.max_addresses; ++i) new_slot().name = index;
    auto lookup = resolver();
    auto addresses = lookup ? lookup(endpoint.host, endpoint.port)
                            : Result<std::vector<std::string>>(
                                  Error(StatusCode::Unavailable, "no resolver: link a transport"));
    if (addresses && !addresses->empty()) {
      apply(index, *addresses);
      return;
    }
    log(LogLevel::Warning,
        "endpoint " + endpoint.url + ": " +
            (addresses ? std::string("no address") : addresses.error().message()) +
            "; using the name as one endpoint until a lookup succeeds");
    activate(*slots_[first], endpoint.url, make_transport(endpoint).value());
  }

  // Makes the name's active endpoints exactly `addresses`: new ones join, absent ones drain.
  void apply(std::size_t name, const std::vector<std::string>& addresses) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) return;
    }
    const Endpoint& base = names_[name].endpoint;
    std::set<std::string> wanted;
    for (const auto& address : addresses) {
      if (wanted.size() == options_.resolution.max_addresses) {
        log(LogLevel::Warning, "endpoint " + base.url + ": more than " +
                                   std::to_string(options_.resolution.max_addresses) +
                                   " addresses; ignoring the rest");
        break;
      }
      wanted.insert(base.scheme + "://" + address);
    }
    std::vector<std::string> joining;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) return;
      for (auto& slot : slots_) {
        if (slot->name != name || slot->state != State::Active) continue;
        if (wanted.erase(slot->url) == 0) {
          slot->state = State::Draining;  // no new requests; closed once its requests are done
          log(LogLevel::Info, "endpoint " + slot->url + " left " + base.url + ": draining");
        }
      }
      joining.assign(wanted.begin(), wanted.end());
    }
    for (auto& url : joining) {
      auto endpoint = parse_endpoint(url);
      Result<std::shared_ptr<Transport>> transport =
          endpoint ? make_transport(*endpoint)
                   : Result<std::shared_ptr<Transport>>(endpoint.error());
      if (!transport) {
        log(LogLevel::Error, "endpoint " + url + ": " + transport.error().message());
        continue;
      }
      std::lock_guard<std::mutex> lock(mutex_);
      if (closed_) return;
      auto free_slot = std::find_if(slots_.begin(), slots_.end(), [&](const auto& slot) {
        return slot->name == name && slot->state == State::Vacant;
      });
      if (free_slot == slots_.end()) {
        log(LogLevel::Warning, "endpoint " + url + ": every slot of " + base.url +
                                   " is busy draining; it joins at the next lookup");
        continue;
      }
      activate(**free_slot, url, std::move(*transport));
      log(LogLevel::Info, "endpoint " + url + " joined " + base.url);
    }
  }

  void schedule_lookup() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return;
    std::weak_ptr<EndpointPool> weak = weak_from_this();
    timers_.schedule(this, Clock::now() + options_.resolution.interval, [weak] {
      if (auto pool = weak.lock()) pool->look_up_all();
    });
  }

  // On the timer thread: closes drained endpoints, and looks every name up again on a thread
  // of its own (a lookup may block for seconds).
  void look_up_all() {
    reap_drained();
    auto lookup = resolver();
    for (std::size_t name = 0; name < names_.size(); ++name) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (closed_ || names_[name].looking_up || !lookup) continue;
        names_[name].looking_up = true;
      }
      // The thread holds the pool, and close() waits for it (looking_up), so the lookup and what
      // follows it never outlive the client.
      std::thread([pool = shared_from_this(), lookup, name, endpoint = names_[name].endpoint] {
        auto addresses = lookup(endpoint.host, endpoint.port);
        if (addresses && !addresses->empty()) {
          pool->apply(name, *addresses);
        } else if (!pool->is_closed()) {
          pool->log(LogLevel::Warning,
                    "endpoint " + endpoint.url + ": lookup failed (" +
                        (addresses ? std::string("no address") : addresses.error().message()) +
                        "); keeping the addresses known");
        }
        std::lock_guard<std::mutex> lock(pool->mutex_);
        pool->names_[name].looking_up = false;
        pool->lookups_done_.notify_all();
      }).detach();
    }
    schedule_lookup();
  }

  bool is_closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }

  // Destroys the transports of draining endpoints that have nothing in flight.
  void reap_drained() {
    for (auto& slot : slots_) {
      std::shared_ptr<Transport> transport;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (slot->state != State::Draining || slot->stats.outstanding > 0 || slot->probing ||
            slot->transport.use_count() > 1) {
          continue;
        }
        transport = std::move(slot->transport);
      }
      transport.reset();  // the last owner: closes its connections
      std::lock_guard<std::mutex> lock(mutex_);
      slot->state = State::Vacant;  // only now may the slot take another address
    }
  }

  // Destroys a transport once nobody else holds it (picks hold one only while sending).
  static void release(std::shared_ptr<Transport> transport) {
    while (transport && transport.use_count() > 1) std::this_thread::yield();
    transport.reset();
  }

  // Probes ejected endpoints whose rest is over; reschedules itself while any is ejected.
  void schedule_probe() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_ || probe_scheduled_) return;
    probe_scheduled_ = true;
    std::weak_ptr<EndpointPool> weak = weak_from_this();
    timers_.schedule(this, Clock::now() + options_.breaker.probe_interval, [weak] {
      if (auto pool = weak.lock()) pool->probe();
    });
  }

  void probe() {
    std::vector<std::pair<std::size_t, std::shared_ptr<Transport>>> due;
    bool any_ejected = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      probe_scheduled_ = false;
      if (closed_) return;
      for (std::size_t i = 0; i < slots_.size(); ++i) {
        auto& s = *slots_[i];
        if (s.state != State::Active || !s.ejected) continue;
        any_ejected = true;
        if (!s.probing && Clock::now() >= s.rest_until) {
          s.probing = true;
          due.emplace_back(i, s.transport);
        }
      }
    }
    for (auto& [i, transport] : due) {
      transport->server_ready_async(
          Clock::now() + options_.breaker.cool_down, [this, i = i](Result<bool> ready) {
            std::string back;
            {
              std::lock_guard<std::mutex> lock(mutex_);
              auto& s = *slots_[i];
              s.probing = false;
              if (ready && *ready) {
                s.ejected = false;
                s.consecutive_failures = 0;
                back = s.url;
              } else {
                s.rest_until = Clock::now() + options_.breaker.cool_down;
              }
            }
            if (!back.empty()) log(LogLevel::Info, "endpoint " + back + " is back in rotation");
          });
    }
    if (any_ejected) schedule_probe();
  }

  const ClientOptions options_;  // a copy: a detached lookup may outlive the client
  TimerQueue& timers_;           // valid until close(); not used after it
  mutable std::mutex mutex_;
  std::condition_variable lookups_done_;  // a name's lookup finished (looking_up cleared)
  bool closed_ = false;
  bool probe_scheduled_ = false;
  bool rediscover_scheduled_ = false;
  static constexpr std::chrono::seconds kRediscoverySpacing{1};
  Clock::time_point last_discovery_{};
  std::size_t last_picked_ = kNone;              // LeastOutstanding's ties take turns after it
  std::mt19937 random_{std::random_device{}()};  // PowerOfTwoChoices draws
  std::vector<Name> names_;                      // fixed after construction (looking_up: mutex_)
  std::vector<std::unique_ptr<Slot>> slots_;     // fixed after construction; contents: mutex_
};

}  // namespace sonic::detail
