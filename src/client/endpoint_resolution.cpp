// sonic — name resolution: a host name's addresses as endpoints, looked up again as they change.
#include "client/endpoint_resolution.hpp"

#include <algorithm>
#include <thread>

#include "client/endpoint_slots.hpp"

namespace sonic::detail {

ResolvedUrls resolved_urls(const std::string& scheme, const std::vector<std::string>& addresses,
                           std::size_t max_addresses) {
  ResolvedUrls out;
  for (const auto& address : addresses) {
    if (out.urls.size() == max_addresses) {
      out.truncated = true;
      break;
    }
    out.urls.insert(scheme + "://" + address);
  }
  return out;
}

AddressChange address_change(const std::vector<std::pair<std::size_t, std::string>>& active,
                             std::set<std::string> wanted) {
  AddressChange change;
  for (const auto& [slot, url] : active) {
    if (wanted.erase(url) == 0) change.draining.push_back(slot);
  }
  change.joining.assign(wanted.begin(), wanted.end());
  return change;
}

Resolver NameResolution::resolver() const {
  return table_.options.resolution.resolver ? table_.options.resolution.resolver
                                            : transport_registry().resolver();
}

void NameResolution::add_name(const Endpoint& endpoint) {
  const std::size_t index = names_.size();
  names_.push_back(Name{endpoint, false});
  const std::size_t first = table_.slots.size();
  for (std::size_t i = 0; i < table_.options.resolution.max_addresses; ++i) {
    table_.new_slot().name = index;
  }
  auto lookup = resolver();
  auto addresses = lookup ? lookup(endpoint.host, endpoint.port)
                          : Result<std::vector<std::string>>(
                                Error(StatusCode::Unavailable, "no resolver: link a transport"));
  if (addresses && !addresses->empty()) {
    apply(index, *addresses);
    return;
  }
  table_.log(LogLevel::Warning,
             "endpoint " + endpoint.url + ": " +
                 (addresses ? std::string("no address") : addresses.error().message()) +
                 "; using the name as one endpoint until a lookup succeeds");
  table_.slots[first]->activate(endpoint.url, table_.make_transport(endpoint).value());
}

void NameResolution::apply(std::size_t name, const std::vector<std::string>& addresses) {
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    if (table_.closed) return;
  }
  const Endpoint& base = names_[name].endpoint;
  const std::size_t max = table_.options.resolution.max_addresses;
  ResolvedUrls wanted = resolved_urls(base.scheme, addresses, max);
  if (wanted.truncated) {
    table_.log(LogLevel::Warning, "endpoint " + base.url + ": more than " + std::to_string(max) +
                                      " addresses; ignoring the rest");
  }
  AddressChange change;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    if (table_.closed) return;
    std::vector<std::pair<std::size_t, std::string>> active;
    for (std::size_t i = 0; i < table_.slots.size(); ++i) {
      const auto& slot = *table_.slots[i];
      if (slot.name == name && slot.state == SlotState::Active) active.emplace_back(i, slot.url);
    }
    change = address_change(active, std::move(wanted.urls));
    for (std::size_t i : change.draining) {
      auto& slot = *table_.slots[i];
      slot.state = SlotState::Draining;  // no new requests; closed once its requests are done
      table_.log(LogLevel::Info, "endpoint " + slot.url + " left " + base.url + ": draining");
    }
  }
  for (auto& url : change.joining) {
    auto endpoint = parse_endpoint(url);
    Result<std::shared_ptr<Transport>> transport =
        endpoint ? table_.make_transport(*endpoint)
                 : Result<std::shared_ptr<Transport>>(endpoint.error());
    if (!transport) {
      table_.log(LogLevel::Error, "endpoint " + url + ": " + transport.error().message());
      continue;
    }
    std::lock_guard<std::mutex> lock(table_.mutex);
    if (table_.closed) return;
    auto free_slot = std::find_if(table_.slots.begin(), table_.slots.end(), [&](const auto& slot) {
      return slot->name == name && slot->state == SlotState::Vacant;
    });
    if (free_slot == table_.slots.end()) {
      table_.log(LogLevel::Warning, "endpoint " + url + ": every slot of " + base.url +
                                        " is busy draining; it joins at the next lookup");
      continue;
    }
    (*free_slot)->activate(url, std::move(*transport));
    table_.log(LogLevel::Info, "endpoint " + url + " joined " + base.url);
  }
}

void NameResolution::bind(std::weak_ptr<NameResolution> self) {
  std::lock_guard<std::mutex> lock(table_.mutex);
  self_ = std::move(self);
}

void NameResolution::schedule_lookup() {
  std::lock_guard<std::mutex> lock(table_.mutex);
  if (table_.closed) return;
  table_.timers.schedule(table_.timer_owner, Clock::now() + table_.options.resolution.interval,
                         [weak = self_] {
                           if (auto self = weak.lock()) self->look_up_all();
                         });
}

void NameResolution::wait_for_lookups(std::unique_lock<std::mutex>& lock) {
  lookups_done_.wait(lock, [this] {
    return std::none_of(names_.begin(), names_.end(), [](const Name& n) { return n.looking_up; });
  });
}

void NameResolution::look_up_all() {
  reap_drained();
  auto lookup = resolver();
  std::shared_ptr<NameResolution> self;
  {
    std::lock_guard<std::mutex> lock(table_.mutex);
    self = self_.lock();
  }
  for (std::size_t name = 0; name < names_.size() && self && lookup; ++name) {
    {
      std::lock_guard<std::mutex> lock(table_.mutex);
      if (table_.closed || names_[name].looking_up) continue;
      names_[name].looking_up = true;
    }
    // The thread holds the pool (through `self`), and close() waits for it (looking_up), so
    // the lookup and what follows it never outlive the client.
    std::thread([self, lookup, name, endpoint = names_[name].endpoint] {
      auto addresses = lookup(endpoint.host, endpoint.port);
      if (addresses && !addresses->empty()) {
        self->apply(name, *addresses);
      } else {
        bool closed;
        {
          std::lock_guard<std::mutex> lock(self->table_.mutex);
          closed = self->table_.closed;
        }
        if (!closed) {
          self->table_.log(LogLevel::Warning, "endpoint " + endpoint.url + ": lookup failed (" +
                                                  (addresses ? std::string("no address")
                                                             : addresses.error().message()) +
                                                  "); keeping the addresses known");
        }
      }
      std::lock_guard<std::mutex> lock(self->table_.mutex);
      self->names_[name].looking_up = false;
      self->lookups_done_.notify_all();
    }).detach();
  }
  schedule_lookup();
}

void NameResolution::reap_drained() {
  for (auto& slot : table_.slots) {
    std::shared_ptr<Transport> transport;
    {
      std::lock_guard<std::mutex> lock(table_.mutex);
      if (slot->state != SlotState::Draining || slot->stats.outstanding > 0 ||
          slot->breaker.probing || slot->transport.use_count() > 1) {
        continue;
      }
      transport = std::move(slot->transport);
    }
    transport.reset();  // the last owner: closes its connections
    std::lock_guard<std::mutex> lock(table_.mutex);
    slot->state = SlotState::Vacant;  // only now may the slot take another address
  }
}

}  // namespace sonic::detail
