// sonic — name resolution (ClientOptions::resolution.each_address): a host name's addresses as
// endpoints, looked up again every interval; new addresses join, absent ones drain.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/options.hpp"
#include "sonic/transport.hpp"

namespace sonic::detail {

struct SlotTable;

/// The endpoint URLs a lookup's addresses stand for.
struct ResolvedUrls {
  std::set<std::string> urls;  ///< "scheme://address", each once
  bool truncated = false;      ///< more than max_addresses: the rest were left out
};

/// `scheme`://address for each of `addresses`, in order, until max_addresses distinct ones.
/// Pure.
ResolvedUrls resolved_urls(const std::string& scheme, const std::vector<std::string>& addresses,
                           std::size_t max_addresses);

/// How a name's endpoints change to become `wanted`.
struct AddressChange {
  std::vector<std::size_t> draining;  ///< slots whose address left
  std::vector<std::string> joining;   ///< URLs no active slot has yet, in order
};

/// Of the name's `active` endpoints (slot, URL), those not `wanted` drain; wanted URLs that no
/// active one has join. Pure.
AddressChange address_change(const std::vector<std::pair<std::size_t, std::string>>& active,
                             std::set<std::string> wanted);

/// The host names of a pool whose every address is an endpoint. Each name has max_addresses
/// slots of the SlotTable for its whole life; an address that leaves drains, and its slot takes
/// another one once its transport is gone. Lookups run on threads of their own (a resolver may
/// block for seconds), started from the timer thread. Thread-safe once constructed.
class NameResolution {
 public:
  /// `table` must outlive this (a member of the same EndpointPool).
  explicit NameResolution(SlotTable& table) : table_(table) {}

  /// Construction only (before bind(), on the constructing thread): reserves the slots of a host
  /// name and fills them with its addresses, looked up now. When the lookup fails the name
  /// itself is one endpoint (its transport looks it up when connecting) until one succeeds.
  /// Throws sonic::Error when a transport cannot be made for the name.
  void add_name(const Endpoint& endpoint);
  /// Whether there are names to look up (fixed after construction; any thread).
  bool empty() const { return names_.empty(); }
  /// The URL of name `name` as options.endpoints gave it (fixed after construction; any thread).
  const std::string& name_url(std::size_t name) const { return names_[name].endpoint.url; }

  /// Gives resolution a handle on itself that keeps the pool alive while a timer task or a
  /// lookup runs (an aliasing pointer into the pool). Called once by EndpointPool::start().
  void bind(std::weak_ptr<NameResolution> self);
  /// Looks every name up again after the interval, and every interval after that, until the
  /// table is closed. Any thread; takes the table's mutex (the caller must not hold it).
  void schedule_lookup();
  /// For close(), with the table's mutex held by `lock` and `closed` set: waits until no lookup
  /// is under way (none then starts), so that no resolver or log runs after the client is gone.
  void wait_for_lookups(std::unique_lock<std::mutex>& lock);

 private:
  struct Name {
    Endpoint endpoint;
    bool looking_up = false;  // guarded by table_.mutex
  };

  Resolver resolver() const;
  // Makes the name's active endpoints exactly `addresses`: new ones join, absent ones drain.
  // Takes the table's mutex.
  void apply(std::size_t name, const std::vector<std::string>& addresses);
  // On the timer thread: closes drained endpoints, starts a lookup of every name.
  void look_up_all();
  // Destroys the transports of draining endpoints with nothing in flight; their slots go vacant.
  void reap_drained();

  SlotTable& table_;
  std::vector<Name> names_;               // fixed after construction (looking_up: table_.mutex)
  std::condition_variable lookups_done_;  // a name's lookup finished (looking_up cleared)
  std::weak_ptr<NameResolution> self_;    // guarded by table_.mutex
};

}  // namespace sonic::detail
