#include "shm_registry.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>

#include "cuda_memory.hpp"
#include "guarded_mapping.hpp"
#include "protocol/invalid.hpp"
#include "protocol/names.hpp"

namespace sonic::server {

namespace {

using protocol::invalid;

// A shared_memory_* parameter as an unsigned number; both integer kinds are accepted.
Result<std::uint64_t> unsigned_parameter(const Parameters& parameters, const char* key,
                                         const std::string& tensor) {
  auto it = parameters.find(key);
  if (it == parameters.end()) return std::uint64_t{0};
  if (const auto* u = std::get_if<std::uint64_t>(&it->second)) return *u;
  if (const auto* i = std::get_if<std::int64_t>(&it->second); i && *i >= 0) {
    return static_cast<std::uint64_t>(*i);
  }
  return invalid("tensor '" + tensor + "': parameter '" + key + "' must be a non-negative integer");
}

std::string errno_text() { return std::strerror(errno); }

bool names_shared_memory(const Parameters& parameters) {
  return parameters.count(protocol::kSharedMemoryRegion) ||
         parameters.count(protocol::kSharedMemoryByteSize);
}

// Closes a descriptor on scope exit.
struct Descriptor {
  int fd;
  ~Descriptor() {
    if (fd >= 0) ::close(fd);
  }
};

// Whether `user` may map the object behind `info` for reading and writing by itself: root
// may; anyone else only an object of their own that they can read and write.
bool may_map(uid_t user, const struct stat& info) {
  if (user == 0) return true;
  return info.st_uid == user && (info.st_mode & S_IRUSR) && (info.st_mode & S_IWUSR);
}

}  // namespace

bool SharedRegion::truncated() const { return guarded && guarded->truncated(); }

bool SharedMemoryRegistry::cuda_supported() { return cuda::available(); }

Result<std::int64_t> SharedMemoryRegistry::scope_of(const ShmClient& client) const {
  if (access_ == SharedMemoryAccess::Any) return kEveryone;
  if (!client.user) {
    return Error(StatusCode::PermissionDenied,
                 "shared memory is for clients on this host: the server cannot tell which local "
                 "user this connection belongs to (another host or network namespace?)");
  }
  return static_cast<std::int64_t>(*client.user);
}

std::int64_t SharedMemoryRegistry::visible_scope(const ShmClient& client) const {
  auto scope = scope_of(client);
  return scope ? *scope : std::numeric_limits<std::int64_t>::min();  // sees nothing
}

Result<void> SharedMemoryRegistry::add(std::int64_t scope, std::shared_ptr<SharedRegion> region) {
  std::lock_guard<std::mutex> lock(mutex_);
  Key key{scope, region->name};
  if (regions_.count(key)) {
    return Error(StatusCode::AlreadyExists,
                 "shared memory region '" + region->name + "' is already registered");
  }
  Usage& mine = by_connection_[region->connection];
  auto refuse = [&](const std::string& what, std::uint64_t limit) {
    if (mine.regions == 0) by_connection_.erase(region->connection);
    return Error(StatusCode::ResourceExhausted,
                 "cannot register shared memory region '" + region->name + "': " + what +
                     " would exceed the server's limit of " + std::to_string(limit));
  };
  if (mine.regions + 1 > limits_.max_connection_shm_regions) {
    return refuse("the regions of this connection", limits_.max_connection_shm_regions);
  }
  if (total_.regions + 1 > limits_.max_shm_regions) {
    return refuse("the regions of all connections", limits_.max_shm_regions);
  }
  if (region->byte_size >
      limits_.max_connection_shm_bytes - std::min(mine.bytes, limits_.max_connection_shm_bytes)) {
    return refuse("the bytes mapped for this connection", limits_.max_connection_shm_bytes);
  }
  if (region->byte_size > limits_.max_shm_bytes - std::min(total_.bytes, limits_.max_shm_bytes)) {
    return refuse("the bytes mapped for all connections", limits_.max_shm_bytes);
  }
  ++mine.regions;
  mine.bytes += region->byte_size;
  ++total_.regions;
  total_.bytes += region->byte_size;
  regions_.emplace(std::move(key), std::move(region));
  return {};
}

void SharedMemoryRegistry::remove_locked(
    std::map<Key, std::shared_ptr<SharedRegion>>::iterator it) {
  const SharedRegion& region = *it->second;
  auto usage = by_connection_.find(region.connection);
  if (usage != by_connection_.end()) {
    --usage->second.regions;
    usage->second.bytes -= region.byte_size;
    if (usage->second.regions == 0) by_connection_.erase(usage);
  }
  --total_.regions;
  total_.bytes -= region.byte_size;
  regions_.erase(it);
}

Result<void> SharedMemoryRegistry::register_system(const ShmClient& client, const std::string& name,
                                                   const std::string& key, std::uint64_t offset,
                                                   std::uint64_t byte_size) {
  if (name.empty()) return invalid("a shared memory region needs a name");
  auto scope = scope_of(client);
  if (!scope) return scope.error();
  {
    // Fail early, before opening anything, for the limits that can be checked now.
    std::lock_guard<std::mutex> lock(mutex_);
    if (regions_.count({*scope, name})) {
      return Error(StatusCode::AlreadyExists,
                   "shared memory region '" + name + "' is already registered");
    }
  }
  if (byte_size == 0) return invalid("shared memory region '" + name + "' has no bytes");
  if (byte_size > limits_.max_connection_shm_bytes || byte_size > limits_.max_shm_bytes) {
    return Error(
        StatusCode::ResourceExhausted,
        "cannot register shared memory region '" + name + "' of " + std::to_string(byte_size) +
            " bytes: over the server's limit of " +
            std::to_string(std::min(limits_.max_connection_shm_bytes, limits_.max_shm_bytes)) +
            " bytes mapped per connection");
  }
  Descriptor object{::shm_open(key.c_str(), O_RDWR, 0)};
  if (object.fd < 0) {
    return invalid("cannot open shared memory key '" + key + "' for region '" + name +
                   "': " + errno_text() + " (is the client on this host?)");
  }
  struct stat info {};
  if (::fstat(object.fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    return invalid("shared memory key '" + key + "' is not a shared memory object");
  }
  // The check is made on the object opened, not on its name: what is mapped is what was
  // checked.
  if (access_ == SharedMemoryAccess::Owner && !may_map(*client.user, info)) {
    return Error(StatusCode::PermissionDenied, "shared memory key '" + key +
                                                   "' is not this client's: user " +
                                                   std::to_string(*client.user) +
                                                   " may register only objects it owns and can "
                                                   "read and write");
  }
  if (info.st_size < 0 || static_cast<std::uint64_t>(info.st_size) < offset ||
      static_cast<std::uint64_t>(info.st_size) - offset < byte_size) {
    return invalid("shared memory key '" + key + "' holds " + std::to_string(info.st_size) +
                   " bytes: region '" + name + "' (offset " + std::to_string(offset) + ", " +
                   std::to_string(byte_size) + " bytes) does not fit");
  }
  // mmap needs a page-aligned offset: map from the page that holds `offset`.
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t skip = offset % page;
  auto mapping = GuardedMapping::map(object.fd, static_cast<std::size_t>(skip + byte_size),
                                     static_cast<off_t>(offset - skip));
  if (!mapping) {
    return Error(mapping.error().code(), "shared memory region '" + name + "' (key '" + key +
                                             "'): " + mapping.error().message());
  }
  auto region = std::make_shared<SharedRegion>();
  region->name = name;
  region->key = key;
  region->offset = offset;
  region->byte_size = byte_size;
  region->base = (*mapping)->data() + skip;
  region->connection = client.connection;
  region->guarded = *mapping;
  region->mapping = *mapping;
  return add(*scope, std::move(region));
}

Result<void> SharedMemoryRegistry::register_cuda(const ShmClient& client, const std::string& name,
                                                 const std::string& raw_handle,
                                                 std::int64_t device_id, std::uint64_t byte_size) {
  if (name.empty()) return invalid("a shared memory region needs a name");
  // Triton built without GPUs answers in these words and code (grpc_server.cc, the #else of
  // TRITON_ENABLE_GPU); a server whose CUDA build finds no usable device answers the same.
  if (!cuda_supported()) {
    return invalid("failed to register CUDA shared memory region: '" + name +
                   "', GPUs not supported (sonic-server: no usable CUDA device, or built "
                   "without CUDA; use system shared memory)");
  }
  if (byte_size == 0) return invalid("CUDA shared memory region '" + name + "' has no bytes");
  auto scope = scope_of(client);
  if (!scope) return scope.error();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (regions_.count({*scope, name})) {
      return Error(StatusCode::AlreadyExists,
                   "shared memory region '" + name + "' is already registered");
    }
  }
  std::uint8_t* pointer = nullptr;
  auto mapping = cuda::open_ipc(raw_handle, device_id, byte_size, &pointer);
  if (!mapping) {
    // Triton: whatever stops the handle from opening is INVALID_ARGUMENT, in these words.
    return invalid("failed to register CUDA shared memory region '" + name +
                   "': " + mapping.error().message());
  }
  auto region = std::make_shared<SharedRegion>();
  region->name = name;
  region->byte_size = byte_size;
  region->cuda = true;
  region->device_id = device_id;
  region->base = pointer;
  region->connection = client.connection;
  region->mapping = std::move(*mapping);
  return add(*scope, std::move(region));
}

void SharedMemoryRegistry::unregister(const ShmClient& client, const std::string& name, bool cuda) {
  const std::int64_t scope = visible_scope(client);
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = regions_.lower_bound({scope, std::string()});
       it != regions_.end() && it->first.first == scope;) {
    bool match = it->second->cuda == cuda && (name.empty() || it->first.second == name);
    if (match) {
      remove_locked(it++);
    } else {
      ++it;
    }
  }
}

void SharedMemoryRegistry::drop_connection(std::uint64_t connection) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!by_connection_.count(connection)) return;
  for (auto it = regions_.begin(); it != regions_.end();) {
    if (it->second->connection == connection) {
      remove_locked(it++);
    } else {
      ++it;
    }
  }
}

std::size_t SharedMemoryRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return regions_.size();
}

Result<std::vector<SharedRegion>> SharedMemoryRegistry::status(const ShmClient& client,
                                                               const std::string& name,
                                                               bool cuda) const {
  const std::int64_t scope = visible_scope(client);
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SharedRegion> found;
  for (auto it = regions_.lower_bound({scope, std::string()});
       it != regions_.end() && it->first.first == scope; ++it) {
    if (it->second->cuda == cuda && (name.empty() || it->first.second == name)) {
      found.push_back(*it->second);
    }
  }
  if (!name.empty() && found.empty()) {
    // Triton's GetStatus: NOT_FOUND, saying so when the name is a region of the other kind.
    auto other = regions_.find({scope, name});
    if (other != regions_.end()) {
      return Error(StatusCode::NotFound, "The region named '" + name + "' is registered as " +
                                             (cuda ? "system shared memory, not CUDA"
                                                   : "CUDA shared memory, not system") +
                                             " shared memory");
    }
    return Error(StatusCode::NotFound, std::string("Unable to find ") + (cuda ? "CUDA" : "system") +
                                           " shared memory region: '" + name + "'");
  }
  return found;
}

Result<OutputTarget> SharedMemoryRegistry::locate(const ShmClient& client,
                                                  const std::string& tensor,
                                                  const Parameters& parameters) const {
  auto name_it = parameters.find(protocol::kSharedMemoryRegion);
  bool has_size = parameters.count(protocol::kSharedMemoryByteSize) != 0;
  if (name_it == parameters.end() || !has_size) {
    return invalid("tensor '" + tensor + "': shared memory needs both '" +
                   protocol::kSharedMemoryRegion + "' and '" + protocol::kSharedMemoryByteSize +
                   "'");
  }
  const auto* name = std::get_if<std::string>(&name_it->second);
  if (!name)
    return invalid("tensor '" + tensor + "': '" + protocol::kSharedMemoryRegion + "' is a string");
  auto size = unsigned_parameter(parameters, protocol::kSharedMemoryByteSize, tensor);
  if (!size) return size.error();
  auto offset = unsigned_parameter(parameters, protocol::kSharedMemoryOffset, tensor);
  if (!offset) return offset.error();
  OutputTarget target;
  target.output = tensor;
  target.offset = *offset;
  target.byte_size = *size;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = regions_.find({visible_scope(client), *name});
    if (it == regions_.end()) {
      // Triton's code and words (SharedMemoryManager::GetMemoryInfo), which its clients and
      // sonic's before the reason existed look for.
      return Error(StatusCode::NotFound,
                   "Unable to find shared memory region: '" + *name + "' (tensor '" + tensor +
                       "'; register it first)",
                   std::string(protocol::reason::kShmRegionNotFound));
    }
    target.region = it->second;
  }
  if (target.offset > target.region->byte_size ||
      target.region->byte_size - target.offset < target.byte_size) {
    return invalid("tensor '" + tensor + "': offset " + std::to_string(target.offset) + " and " +
                   std::to_string(target.byte_size) +
                   " bytes do not fit in shared memory region '" + *name + "' of " +
                   std::to_string(target.region->byte_size) + " bytes");
  }
  return target;
}

bool SharedMemoryRegistry::uses_shared_memory(const InferRequest& request) {
  auto named = [](const auto& tensor) { return names_shared_memory(tensor.parameters); };
  return std::any_of(request.inputs().begin(), request.inputs().end(), named) ||
         std::any_of(request.outputs().begin(), request.outputs().end(), named);
}

Result<ShmUse> SharedMemoryRegistry::bind(const ShmClient& client, InferRequest& request) const {
  ShmUse use;
  for (const auto& out : request.outputs()) {
    if (!names_shared_memory(out.parameters)) continue;
    auto where = locate(client, out.name, out.parameters);
    if (!where) return where.error();
    use.outputs.push_back(std::move(*where));
  }
  bool any = std::any_of(request.inputs().begin(), request.inputs().end(),
                         [](const NamedTensor& in) { return names_shared_memory(in.parameters); });
  if (!any) return use;
  InferRequest bound(request.model_name(), request.model_version());
  bound.id(request.request_id());
  for (const auto& [key, value] : request.parameters()) bound.parameter(key, value);
  for (const auto& o : request.outputs()) bound.output(o.name, o.parameters);
  for (const auto& in : request.inputs()) {
    if (!names_shared_memory(in.parameters)) {
      bound.input(in.name, in.tensor, in.parameters);
      continue;
    }
    auto where = locate(client, in.name, in.parameters);
    if (!where) return where.error();
    const DataType dtype = in.tensor.dtype();
    const Shape& shape = in.tensor.shape();
    if (dtype != DataType::Bytes) {
      auto count = element_count(shape);
      if (!count || *count * element_size(dtype) != where->byte_size) {
        return invalid("input '" + in.name + "': " + std::to_string(where->byte_size) +
                       " bytes in shared memory do not fit " + std::string(to_string(dtype)) +
                       " of shape " + to_string(shape));
      }
    }
    const SharedRegion& region = *where->region;
    Tensor tensor;
    if (region.cuda) {
      auto host = std::make_shared<std::vector<std::uint8_t>>(where->byte_size);
      if (auto ok = cuda::to_host(host->data(), region.base + where->offset, where->byte_size,
                                  region.device_id);
          !ok) {
        return ok.error();
      }
      tensor = Tensor::from_shared(dtype, shape, host, host->data(), host->size());
    } else {
      // A view: the region stays mapped while the request (and any output viewing it) lives.
      tensor = Tensor::from_shared(dtype, shape, where->region, region.base + where->offset,
                                   where->byte_size);
    }
    if (auto ok = tensor.check(); !ok) {
      return invalid("input '" + in.name + "' in shared memory: " + ok.error().message());
    }
    use.inputs.push_back(where->region);
    bound.input(in.name, std::move(tensor));
  }
  request = std::move(bound);
  return use;
}

Result<void> SharedMemoryRegistry::check_intact(const ShmUse& use) {
  std::shared_ptr<SharedRegion> shrunk;
  for (const auto& region : use.inputs) {
    if (region->truncated()) shrunk = region;
  }
  for (const auto& target : use.outputs) {
    if (target.region->truncated()) shrunk = target.region;
  }
  if (!shrunk) return {};
  {
    // The region holds zeros now, not the client's memory: nobody may use it again.
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = regions_.begin(); it != regions_.end(); ++it) {
      if (it->second == shrunk) {
        remove_locked(it);
        break;
      }
    }
  }
  return invalid("shared memory region '" + shrunk->name + "' (key '" + shrunk->key +
                 "') shrank below its registered size while the server used it; it was "
                 "unregistered");
}

Result<void> SharedMemoryRegistry::complete(const ShmUse& use, InferResult& result) {
  // Outputs that still view an input's region (an identity model's do) are copied now, while
  // a region shrunk under us faults into zeros instead of failing the socket write later.
  auto views_input = [&](const Tensor& tensor) {
    return std::any_of(use.inputs.begin(), use.inputs.end(), [&](const auto& region) {
      return tensor.data() >= region->base && tensor.data() < region->base + region->byte_size;
    });
  };
  std::vector<NamedTensor> outputs;
  outputs.reserve(result.outputs().size());
  for (const auto& out : result.outputs()) {
    auto target = std::find_if(use.outputs.begin(), use.outputs.end(),
                               [&](const OutputTarget& t) { return t.output == out.name; });
    if (target == use.outputs.end()) {
      if (out.tensor.byte_size() > 0 && views_input(out.tensor)) {
        outputs.push_back({out.name,
                           Tensor::copy_bytes(out.tensor.dtype(), out.tensor.shape(),
                                              out.tensor.data(), out.tensor.byte_size()),
                           out.parameters});
      } else {
        outputs.push_back(out);
      }
      continue;
    }
    const std::size_t bytes = out.tensor.byte_size();
    if (bytes > target->byte_size) {
      // Triton's code and words (its gRPC response allocator), which its clients look for.
      return Error(StatusCode::Internal,
                   "shared memory size specified with the request for output '" + out.name + "' (" +
                       std::to_string(target->byte_size) + " bytes) should be at least " +
                       std::to_string(bytes) + " bytes to hold the results",
                   std::string(protocol::reason::kShmOutputTooSmall));
    }
    std::uint8_t* destination = target->region->base + target->offset;
    if (target->region->cuda) {
      if (auto ok =
              cuda::to_device(destination, out.tensor.data(), bytes, target->region->device_id);
          !ok) {
        return ok.error();
      }
    } else if (bytes > 0 && destination != out.tensor.data()) {
      std::memmove(destination, out.tensor.data(), bytes);
    }
    Parameters where;
    where[protocol::kSharedMemoryRegion] = target->region->name;
    where[protocol::kSharedMemoryByteSize] = static_cast<std::int64_t>(bytes);
    if (target->offset)
      where[protocol::kSharedMemoryOffset] = static_cast<std::int64_t>(target->offset);
    outputs.push_back({out.name,
                       Tensor::view_bytes(out.tensor.dtype(), out.tensor.shape(), nullptr, 0),
                       std::move(where)});
  }
  result = InferResult(result.model_name(), result.model_version(), result.request_id(),
                       std::move(outputs), result.parameters());
  // The model, the copies and the writes above read and wrote the regions: whatever of them
  // shrank under us held zeros, and the request fails.
  return check_intact(use);
}

}  // namespace sonic::server
