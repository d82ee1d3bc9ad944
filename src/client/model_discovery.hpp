// sonic — model discovery (ClientOptions::routing): which models each endpoint lists ready,
// whether it reports the configuration a pin expects, and what that allows an endpoint to serve.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/model_ref.hpp"
#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"
#include "sonic/metadata.hpp"
#include "sonic/routing.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

struct SlotTable;

/// Models an endpoint lists ready: name -> versions ("" when the index names no version).
using ReadyModels = std::map<std::string, std::set<std::string>, std::less<>>;

/// What discovery knows of one endpoint. Guarded by whatever guards the endpoint
/// (SlotTable::mutex).
struct DiscoveryState {
  std::map<ModelRef, Clock::time_point> missing_models;  ///< NOT_FOUND: model -> recheck time
  std::optional<ReadyModels> ready_models;               ///< once it answered RepositoryIndex
  bool refused = false;                                  ///< it refused the last question ...
  std::string refusal;                                   ///< ... with this message
  /// For pinned models: the checksum of the configuration it reported ("" for none).
  std::map<std::string, std::string> config_checked;
  bool index_pending = false;            ///< its model list asked, not yet answered
  std::set<std::string> config_pending;  ///< pinned models whose configuration is asked

  /// Whether it answered NOT_FOUND for `model` less than model_recheck before `now`.
  bool lacks(const ModelRef& model, Clock::time_point now) const {
    auto it = missing_models.find(model);
    return it != missing_models.end() && it->second > now;
  }
};

/// What an answer to RepositoryIndex calls for.
struct IndexOutcome {
  std::string message;                ///< to log (Warning when failed, else Info); empty: none
  bool failed = false;                ///< refused: ask again soon
  std::vector<std::string> to_check;  ///< pinned models whose configuration to ask now
};

/// Discovery's decisions over a DiscoveryState the caller guards. Pure: no lock, no transport;
/// the const members may run on any thread.
class DiscoveryRules {
 public:
  explicit DiscoveryRules(Routing routing) : routing_(std::move(routing)) {}

  /// Whether an index lists the model: its name, and its version when both name one.
  static bool lists(const ReadyModels& ready, const ModelRef& ref);
  /// The models of an index that are ready (a state of "READY", or none).
  static ReadyModels ready_models(const std::vector<ModelIndex>& index);

  /// Whether endpoints are asked at all: a discovery interval, or a pin with a checksum.
  bool discovering() const;
  /// The configuration checksum `model` is pinned to; null when none.
  const std::string* pinned_checksum(const std::string& model) const;

  /// Whether an endpoint in rotation may take a request for `ref` at `now`: it did not answer
  /// NOT_FOUND for it lately; it did not refuse discovery (unless `despite_refusal`); it lists
  /// the model once it answered (unless `despite_index`); it reported the pinned checksum.
  bool admits(const DiscoveryState& state, const ModelRef& ref, Clock::time_point now,
              bool despite_refusal, bool despite_index) const;
  /// Why discovery keeps `ref` from an endpoint, for an error message; empty when it does not
  /// (or says nothing: no NOT_FOUND reasons here).
  std::string why_not(const DiscoveryState& state, const ModelRef& ref) const;
  /// Whether a question about `model`, pinned to a checksum, is unanswered by the endpoint.
  bool awaiting(const DiscoveryState& state, const std::string& model) const;

  /// Applies an answer to RepositoryIndex from the endpoint at `url`. UNIMPLEMENTED (no
  /// repository extension) is no refusal: the endpoint then lists nothing, and its pinned
  /// models' configurations are asked all the same. Marks those questions pending.
  IndexOutcome took_index(DiscoveryState& state, const std::string& url,
                          const Result<std::vector<ModelIndex>>& index) const;
  /// Applies an answer to ModelConfig for the pinned `model`; returns the warning to log when
  /// the reported checksum changed to one other than the pin (empty: nothing to say).
  std::string took_config(DiscoveryState& state, const std::string& url, const std::string& model,
                          const Result<std::string>& config) const;

  const Routing& routing() const { return routing_; }

 private:
  Routing routing_;
};

/// Asks the endpoints of a SlotTable which models they have (and, for pinned models, their
/// configurations): at start, every discovery_interval, and soon after a NOT_FOUND or a failed
/// question. Answers arrive on the transports' threads. Thread-safe; every member takes the
/// table's mutex, so the caller must not hold it.
class ModelDiscovery {
 public:
  /// `table` and `rules` must outlive this (members of the same EndpointPool).
  ModelDiscovery(SlotTable& table, const DiscoveryRules& rules) : table_(table), rules_(rules) {}

  /// Gives discovery a handle on itself that keeps the pool alive while a timer task runs (an
  /// aliasing pointer into the pool). Called once by EndpointPool::start(), before the rest.
  void bind(std::weak_ptr<ModelDiscovery> self);
  /// Asks every active endpoint now. `periodic`: the round the interval schedules, which
  /// schedules the next one on the timer thread. Nothing once the table is closed.
  void discover(bool periodic = true);
  /// Asks every endpoint again, now or a second after the last round (at most one round a
  /// second), on the timer thread. Nothing without discovery or once closed.
  void rediscover_soon();
  /// Whether a request for `ref` that found no endpoint should wait: a question about a model
  /// pinned to a checksum is unanswered by an endpoint in rotation.
  bool awaiting_discovery(const ModelRef& ref) const;
  /// Why no endpoint may serve `ref`, endpoint by endpoint ("url: why; ..."); empty without
  /// discovery.
  std::string why_unservable(const ModelRef& ref) const;

 private:
  // On a transport's thread: the answers, for the endpoint of slot `i` while it still has the
  // transport `which`.
  void on_index(std::size_t i, Transport* which, Result<std::vector<ModelIndex>> index);
  void on_config(std::size_t i, Transport* which, const std::string& model,
                 Result<std::string> config);

  static constexpr std::chrono::seconds kRediscoverySpacing{1};
  SlotTable& table_;
  const DiscoveryRules& rules_;
  // Guarded by table_.mutex.
  std::weak_ptr<ModelDiscovery> self_;
  bool rediscover_scheduled_ = false;
  Clock::time_point last_discovery_{};
};

}  // namespace sonic::detail
