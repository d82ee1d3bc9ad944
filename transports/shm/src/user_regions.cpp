#include "user_regions.hpp"

#include <map>
#include <mutex>

#include "sonic/shm/region.hpp"
#include "system_region.hpp"

namespace sonic::shm {

namespace {

struct Directory {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<const UserRegion>> by_name;

  // Drops entries whose regions are gone (guarded by mutex).
  void prune() {
    for (auto it = by_name.begin(); it != by_name.end();) {
      it = it->second.expired() ? by_name.erase(it) : std::next(it);
    }
  }
};

Directory& directory() {
  static Directory* instance = new Directory;  // never destroyed: buffers may outlive statics
  return *instance;
}

}  // namespace

void publish(const std::shared_ptr<const UserRegion>& region) {
  auto& d = directory();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.prune();
  d.by_name[region->name] = region;
}

std::shared_ptr<const UserRegion> find_region(const std::string& name) {
  auto& d = directory();
  std::lock_guard<std::mutex> lock(d.mutex);
  auto it = d.by_name.find(name);
  return it == d.by_name.end() ? nullptr : it->second.lock();
}

std::shared_ptr<const UserRegion> region_holding(const void* data, std::size_t bytes,
                                                 std::size_t* offset) {
  auto* p = static_cast<const std::uint8_t*>(data);
  if (!p) return nullptr;
  auto& d = directory();
  std::lock_guard<std::mutex> lock(d.mutex);
  for (const auto& [name, weak] : d.by_name) {
    auto region = weak.lock();
    if (!region || region->cuda) continue;
    if (p >= region->base && p - region->base <= static_cast<std::ptrdiff_t>(region->size) &&
        bytes <= region->size - static_cast<std::size_t>(p - region->base)) {
      *offset = static_cast<std::size_t>(p - region->base);
      return region;
    }
  }
  return nullptr;
}

// ---- SharedBuffer ----

struct SharedBuffer::Region {
  std::unique_ptr<SystemRegion> memory;
  UserRegion entry;
};

SharedBuffer::SharedBuffer(std::size_t bytes) : region_(std::make_shared<Region>()) {
  region_->memory = SystemRegion::create(bytes == 0 ? 1 : bytes).value();
  region_->entry.name = region_->memory->name();
  region_->entry.key = region_->memory->key();
  region_->entry.base = region_->memory->data();
  region_->entry.size = region_->memory->size();
  // The entry shares the buffer's lifetime: the directory forgets it when the buffer goes.
  publish(std::shared_ptr<const UserRegion>(region_, &region_->entry));
}

std::uint8_t* SharedBuffer::data() const noexcept { return region_->memory->data(); }
std::size_t SharedBuffer::size() const noexcept { return region_->memory->size(); }
const std::string& SharedBuffer::name() const noexcept { return region_->entry.name; }

Tensor SharedBuffer::tensor(DataType type, Shape shape, std::size_t offset) const {
  auto count = element_count(shape);
  std::size_t bytes = count ? *count * element_size(type) : 0;
  if (!count || type == DataType::Bytes || offset > size() || bytes > size() - offset) {
    throw Error(StatusCode::InvalidArgument,
                "a " + std::string(to_string(type)) + " tensor of shape " + to_string(shape) +
                    " at offset " + std::to_string(offset) + " does not fit in shared buffer '" +
                    name() + "' of " + std::to_string(size()) + " bytes");
  }
  return Tensor::from_shared(type, std::move(shape), region_, data() + offset, bytes);
}

}  // namespace sonic::shm
