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
#include "protocol/names.hpp"

namespace sonic::server {

namespace {

Error invalid(std::string message) {
  return Error(StatusCode::InvalidArgument, std::move(message));
}

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

}  // namespace

bool SharedMemoryRegistry::cuda_supported() { return cuda::available(); }

Result<void> SharedMemoryRegistry::register_system(const std::string& name, const std::string& key,
                                                   std::uint64_t offset, std::uint64_t byte_size) {
  if (name.empty()) return invalid("a shared memory region needs a name");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (regions_.count(name)) {
      return Error(StatusCode::AlreadyExists,
                   "shared memory region '" + name + "' is already registered");
    }
  }
  int fd = ::shm_open(key.c_str(), O_RDWR, 0);
  if (fd < 0) {
    return invalid("cannot open shared memory key '" + key + "' for region '" + name +
                   "': " + errno_text() + " (is the client on this host?)");
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size < 0 ||
      static_cast<std::uint64_t>(info.st_size) < offset ||
      static_cast<std::uint64_t>(info.st_size) - offset < byte_size || byte_size == 0) {
    ::close(fd);
    return invalid("shared memory key '" + key + "' holds " + std::to_string(info.st_size) +
                   " bytes: region '" + name + "' (offset " + std::to_string(offset) + ", " +
                   std::to_string(byte_size) + " bytes) does not fit");
  }
  // mmap needs a page-aligned offset: map from the page that holds `offset`.
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t skip = offset % page;
  const std::size_t length = static_cast<std::size_t>(skip + byte_size);
  void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                      static_cast<off_t>(offset - skip));
  ::close(fd);
  if (base == MAP_FAILED) {
    return invalid("cannot map shared memory key '" + key + "': " + errno_text());
  }
  auto region = std::make_shared<SharedRegion>();
  region->name = name;
  region->key = key;
  region->offset = offset;
  region->byte_size = byte_size;
  region->base = static_cast<std::uint8_t*>(base) + skip;
  region->mapping = std::shared_ptr<void>(base, [length](void* p) { ::munmap(p, length); });
  std::lock_guard<std::mutex> lock(mutex_);
  if (!regions_.emplace(name, std::move(region)).second) {
    return Error(StatusCode::AlreadyExists,
                 "shared memory region '" + name + "' is already registered");
  }
  return {};
}

Result<void> SharedMemoryRegistry::register_cuda(const std::string& name,
                                                 const std::string& raw_handle,
                                                 std::int64_t device_id, std::uint64_t byte_size) {
  if (name.empty()) return invalid("a shared memory region needs a name");
  if (byte_size == 0) return invalid("CUDA shared memory region '" + name + "' has no bytes");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (regions_.count(name)) {
      return Error(StatusCode::AlreadyExists,
                   "shared memory region '" + name + "' is already registered");
    }
  }
  std::uint8_t* pointer = nullptr;
  auto mapping = cuda::open_ipc(raw_handle, device_id, &pointer);
  if (!mapping) return mapping.error();
  auto region = std::make_shared<SharedRegion>();
  region->name = name;
  region->byte_size = byte_size;
  region->cuda = true;
  region->device_id = device_id;
  region->base = pointer;
  region->mapping = std::move(*mapping);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!regions_.emplace(name, std::move(region)).second) {
    return Error(StatusCode::AlreadyExists,
                 "shared memory region '" + name + "' is already registered");
  }
  return {};
}

void SharedMemoryRegistry::unregister(const std::string& name, bool cuda) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = regions_.begin(); it != regions_.end();) {
    bool match = it->second->cuda == cuda && (name.empty() || it->first == name);
    it = match ? regions_.erase(it) : std::next(it);
  }
}

Result<std::vector<SharedRegion>> SharedMemoryRegistry::status(const std::string& name,
                                                               bool cuda) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<SharedRegion> found;
  for (const auto& [region_name, region] : regions_) {
    if (region->cuda == cuda && (name.empty() || region_name == name)) found.push_back(*region);
  }
  if (!name.empty() && found.empty()) {
    return Error(StatusCode::NotFound, std::string("unable to find ") + (cuda ? "CUDA" : "system") +
                                           " shared memory region '" + name + "'");
  }
  return found;
}

Result<OutputTarget> SharedMemoryRegistry::locate(const std::string& tensor,
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
    auto it = regions_.find(*name);
    if (it == regions_.end()) {
      return Error(StatusCode::InvalidArgument,
                   "unable to find shared memory region '" + *name + "' for tensor '" + tensor +
                       "': register it first",
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

Result<InferRequest> SharedMemoryRegistry::bind_inputs(const InferRequest& request) const {
  bool any = false;
  for (const auto& in : request.inputs()) {
    any = any || in.parameters.count(protocol::kSharedMemoryRegion) ||
          in.parameters.count(protocol::kSharedMemoryByteSize);
  }
  if (!any) return request;
  InferRequest bound(request.model_name(), request.model_version());
  bound.id(request.request_id());
  for (const auto& [key, value] : request.parameters()) bound.parameter(key, value);
  for (const auto& out : request.outputs()) bound.output(out.name, out.parameters);
  for (const auto& in : request.inputs()) {
    if (!in.parameters.count(protocol::kSharedMemoryRegion) &&
        !in.parameters.count(protocol::kSharedMemoryByteSize)) {
      bound.input(in.name, in.tensor, in.parameters);
      continue;
    }
    auto where = locate(in.name, in.parameters);
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
    bound.input(in.name, std::move(tensor));
  }
  return bound;
}

Result<std::vector<OutputTarget>> SharedMemoryRegistry::output_targets(
    const InferRequest& request) const {
  std::vector<OutputTarget> targets;
  for (const auto& out : request.outputs()) {
    if (!out.parameters.count(protocol::kSharedMemoryRegion) &&
        !out.parameters.count(protocol::kSharedMemoryByteSize)) {
      continue;
    }
    auto where = locate(out.name, out.parameters);
    if (!where) return where.error();
    targets.push_back(std::move(*where));
  }
  return targets;
}

Result<void> SharedMemoryRegistry::place_outputs(InferResult& result,
                                                 const std::vector<OutputTarget>& targets) const {
  if (targets.empty()) return {};
  std::vector<NamedTensor> outputs;
  outputs.reserve(result.outputs().size());
  for (const auto& out : result.outputs()) {
    auto target = std::find_if(targets.begin(), targets.end(),
                               [&](const OutputTarget& t) { return t.output == out.name; });
    if (target == targets.end()) {
      outputs.push_back(out);
      continue;
    }
    const std::size_t bytes = out.tensor.byte_size();
    if (bytes > target->byte_size) {
      return Error(StatusCode::InvalidArgument,
                   "output '" + out.name + "' has " + std::to_string(bytes) +
                       " bytes but its shared memory space holds " +
                       std::to_string(target->byte_size),
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
  return {};
}

}  // namespace sonic::server
