#include "region_pool.hpp"

#include <algorithm>
#include <utility>

namespace sonic::shm {

std::shared_ptr<Lease> RegionPool::acquire(std::size_t bytes) {
  std::size_t size = min_region_bytes_;
  while (size < bytes) size *= 2;
  std::unique_lock<std::mutex> lock(mutex_);
  // The smallest free region that fits: big regions stay for big requests.
  Entry* best = nullptr;
  for (auto& e : entries_) {
    if (!e.lent && e.region->size() >= bytes &&
        (!best || e.region->size() < best->region->size())) {
      best = &e;
    }
  }
  if (!best) {
    // Make room by dropping free regions too small to serve, then create one.
    while (bytes_ + size > max_bytes_) {
      auto smallest =
          std::min_element(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
            if (a.lent != b.lent) return !a.lent;
            return a.region->size() < b.region->size();
          });
      if (smallest == entries_.end() || smallest->lent) return nullptr;  // all lent: at the limit
      bytes_ -= smallest->region->size();
      if (smallest->registered) evicted_.push_back(smallest->region->name());
      entries_.erase(smallest);
    }
    lock.unlock();
    auto created = SystemRegion::create(size);
    if (!created) return nullptr;
    lock.lock();
    bytes_ += size;
    entries_.push_back(Entry{std::move(*created), false, false});
    best = &entries_.back();
  }
  best->lent = true;
  auto lease = std::shared_ptr<Lease>(
      new Lease{best->region.get(), shared_from_this(), best->registered}, [](Lease* l) {
        l->pool->give_back(l->region);
        delete l;
      });
  return lease;
}

void RegionPool::give_back(SystemRegion* region) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : entries_) {
    if (e.region.get() == region) e.lent = false;
  }
}

void RegionPool::mark_registered(const Lease& lease) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : entries_) {
    if (e.region.get() == lease.region) e.registered = true;
  }
}

void RegionPool::forget_registrations() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& e : entries_) e.registered = false;
}

std::vector<std::string> RegionPool::registered_names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& e : entries_) {
    if (e.registered) names.push_back(e.region->name());
  }
  return names;
}

std::vector<std::string> RegionPool::take_evicted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(evicted_, {});
}

std::size_t RegionPool::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace sonic::shm
