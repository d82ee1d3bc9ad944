// sonic — model discovery: the decisions over what endpoints answer, and the questions asked.
#include "client/model_discovery.hpp"

#include <algorithm>
#include <utility>

#include "client/endpoint_slots.hpp"

namespace sonic::detail {

bool DiscoveryRules::lists(const ReadyModels& ready, const ModelRef& ref) {
  auto it = ready.find(ref.name);
  if (it == ready.end()) return false;
  if (ref.version.empty() || it->second.count({}) != 0) return true;
  return it->second.count(ref.version) != 0;
}

ReadyModels DiscoveryRules::ready_models(const std::vector<ModelIndex>& index) {
  ReadyModels ready;
  for (const auto& model : index) {
    if (model.state == ModelState::Unknown || model.state == ModelState::Ready) {
      ready[model.name].insert(model.version);
    }
  }
  return ready;
}

bool DiscoveryRules::discovering() const {
  if (routing_.discovery_interval.count() > 0) return true;
  return std::any_of(routing_.pins.begin(), routing_.pins.end(),
                     [](const auto& pin) { return !pin.second.config_checksum.empty(); });
}

const std::string* DiscoveryRules::pinned_checksum(const std::string& model) const {
  if (routing_.pins.empty()) return nullptr;
  auto it = routing_.pins.find(model);
  return it == routing_.pins.end() || it->second.config_checksum.empty()
             ? nullptr
             : &it->second.config_checksum;
}

bool DiscoveryRules::admits(const DiscoveryState& state, const ModelRef& ref, Clock::time_point now,
                            bool despite_refusal, bool despite_index) const {
  if (state.refused && !despite_refusal) return false;
  if (!state.missing_models.empty() && state.lacks(ref, now)) return false;
  if (!despite_index && state.ready_models && !lists(*state.ready_models, ref)) return false;
  if (const std::string* checksum = pinned_checksum(ref.name)) {
    auto it = state.config_checked.find(ref.name);
    if (it == state.config_checked.end() || it->second != *checksum) return false;
  }
  return true;
}

std::string DiscoveryRules::why_not(const DiscoveryState& state, const ModelRef& ref) const {
  if (state.refused) return "refused model discovery (" + state.refusal + ")";
  if (state.ready_models && !lists(*state.ready_models, ref)) {
    return "does not list the model as ready";
  }
  if (const std::string* checksum = pinned_checksum(ref.name)) {
    auto it = state.config_checked.find(ref.name);
    if (it == state.config_checked.end()) return "has not reported its configuration yet";
    if (it->second != *checksum) {
      return "configuration checksum " + it->second + ", pinned " + *checksum;
    }
  }
  return {};
}

bool DiscoveryRules::awaiting(const DiscoveryState& state, const std::string& model) const {
  return pinned_checksum(model) != nullptr &&
         (state.index_pending || state.config_pending.count(model) != 0);
}

IndexOutcome DiscoveryRules::took_index(DiscoveryState& state, const std::string& url,
                                        const Result<std::vector<ModelIndex>>& index) const {
  IndexOutcome out;
  state.index_pending = false;
  const bool unimplemented = !index && index.code() == StatusCode::Unimplemented;
  if (!index && !unimplemented) {
    if (!state.refused) {
      out.message = "endpoint " + url + " refused model discovery (" + index.error().message() +
                    "): no requests until it answers";
    }
    state.refused = true;
    state.refusal = index.error().message();
    out.failed = true;
    return out;
  }
  if (state.refused) out.message = "endpoint " + url + " answers model discovery again";
  state.refused = false;
  if (index) state.ready_models = ready_models(*index);
  // A server without the repository extension lists nothing: its configurations are asked all
  // the same.
  for (const auto& [model, pin] : routing_.pins) {
    if (pin.config_checksum.empty()) continue;
    if (state.ready_models && !lists(*state.ready_models, ModelRef{model, pin.version})) continue;
    out.to_check.push_back(model);
    state.config_pending.insert(model);
  }
  return out;
}

std::string DiscoveryRules::took_config(DiscoveryState& state, const std::string& url,
                                        const std::string& model,
                                        const Result<std::string>& config) const {
  state.config_pending.erase(model);
  const std::string checksum = config ? model_config_checksum(*config) : std::string();
  const std::string& pinned = routing_.pins.at(model).config_checksum;
  auto it = state.config_checked.find(model);
  const bool changed = it == state.config_checked.end() || it->second != checksum;
  state.config_checked[model] = checksum;
  if (!changed || checksum == pinned) return {};
  return "endpoint " + url + " reports model '" + model + "' with " +
         (config ? "configuration checksum " + checksum
                 : "no configuration (" + config.error().message() + ")") +
         ", not the pinned " + pinned + ": it gets no requests for it";
}

void ModelDiscovery::bind(std::weak_ptr<ModelDiscovery> self) {
  std::lock_guard<std::mutex> lock(table_.mutex);
  self_ = std::move(self);
}

void ModelDiscovery::discover(bool periodic) {
  std::vector<std::pair<std::size_t, std::shared_ptr<Transport>>> asked;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    if (table_.closed) return;
    last_discovery_ = Clock::now();
    if (!periodic) rediscover_scheduled_ = false;
    for (std::size_t i = 0; i < table_.slots.size(); ++i) {
      auto& s = *table_.slots[i];
      if (s.state != SlotState::Active) continue;
      s.discovery.index_pending = true;
      asked.emplace_back(i, s.transport);
    }
  }
  for (auto& [i, transport] : asked) {
    Transport* which = transport.get();
    transport->repository_index_async(true, Clock::now() + table_.options.control_timeout,
                                      [this, i = i, which](Result<std::vector<ModelIndex>> index) {
                                        on_index(i, which, std::move(index));
                                      });
  }
  asked.clear();  // hold no transport past the calls (close() waits for them to be let go)
  if (periodic && rules_.routing().discovery_interval.count() > 0) {
    std::lock_guard<std::mutex> lock(table_.mutex);
    if (table_.closed) return;
    table_.timers.schedule(table_.timer_owner, Clock::now() + rules_.routing().discovery_interval,
                           [weak = self_] {
                             if (auto self = weak.lock()) self->discover();
                           });
  }
}

void ModelDiscovery::rediscover_soon() {
  std::lock_guard<std::mutex> lock(table_.mutex);
  if (table_.closed || !rules_.discovering() || rediscover_scheduled_) return;
  rediscover_scheduled_ = true;
  const auto at = std::max(Clock::now(), last_discovery_ + kRediscoverySpacing);
  table_.timers.schedule(table_.timer_owner, at, [weak = self_] {
    if (auto self = weak.lock()) self->discover(false);
  });
}

bool ModelDiscovery::awaiting_discovery(const ModelRef& ref) const {
  std::lock_guard<std::mutex> lock(table_.mutex);
  if (table_.closed) return false;
  return std::any_of(table_.slots.begin(), table_.slots.end(), [&](const auto& slot) {
    return slot->state == SlotState::Active && !slot->breaker.ejected &&
           rules_.awaiting(slot->discovery, ref.name);
  });
}

std::string ModelDiscovery::why_unservable(const ModelRef& ref) const {
  std::lock_guard<std::mutex> lock(table_.mutex);
  if (!rules_.discovering()) return {};
  std::string out;
  for (const auto& slot : table_.slots) {
    if (slot->state != SlotState::Active) continue;
    const std::string why =
        slot->breaker.ejected ? "ejected after failures" : rules_.why_not(slot->discovery, ref);
    if (why.empty()) continue;
    out += (out.empty() ? "" : "; ") + slot->url + ": " + why;
  }
  return out;
}

void ModelDiscovery::on_index(std::size_t i, Transport* which,
                              Result<std::vector<ModelIndex>> index) {
  IndexOutcome outcome;
  std::shared_ptr<Transport> transport;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    auto& s = *table_.slots[i];
    if (table_.closed || s.state != SlotState::Active || s.transport.get() != which) return;
    outcome = rules_.took_index(s.discovery, s.url, index);
    transport = s.transport;
  }
  if (!outcome.message.empty()) {
    table_.log(outcome.failed ? LogLevel::Warning : LogLevel::Info, outcome.message);
  }
  if (outcome.failed) rediscover_soon();  // asked again, whatever discovery_interval says
  for (const auto& model : outcome.to_check) {
    const std::string& version = rules_.routing().pins.at(model).version;
    transport->model_config_async(model, version, Clock::now() + table_.options.control_timeout,
                                  [this, i, which, model](Result<std::string> config) {
                                    on_config(i, which, model, std::move(config));
                                  });
  }
}

void ModelDiscovery::on_config(std::size_t i, Transport* which, const std::string& model,
                               Result<std::string> config) {
  std::string message;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    auto& s = *table_.slots[i];
    if (table_.closed || s.state != SlotState::Active || s.transport.get() != which) return;
    message = rules_.took_config(s.discovery, s.url, model, config);
  }
  if (!message.empty()) table_.log(LogLevel::Warning, message);
  if (!config) rediscover_soon();  // a failed question is asked again
}

}  // namespace sonic::detail
