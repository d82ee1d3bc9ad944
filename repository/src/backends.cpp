#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>

#include "sonic/repository/backend.hpp"

namespace sonic::repository {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, Backend> backends;
};

Registry& registry() {
  static Registry r;
  return r;
}

// The library that registers each of Triton's backends sonic has, for the error that says
// which one to link.
std::string library_for(const std::string& backend_or_platform) {
  if (backend_or_platform.find("onnx") != std::string::npos) return " (link sonic::onnx)";
  if (backend_or_platform.find("pytorch") != std::string::npos ||
      backend_or_platform.find("libtorch") != std::string::npos) {
    return " (link sonic::torch)";
  }
  return "";
}

std::string known_backends(const std::map<std::string, Backend>& backends) {
  std::string list;
  for (const auto& [name, _] : backends) list += (list.empty() ? "" : ", ") + name;
  return list.empty() ? "none" : list;
}

}  // namespace

void register_backend(Backend backend) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::string name = backend.name;
  r.backends[name] = std::move(backend);
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, _] : r.backends) names.push_back(name);
  return names;
}

Result<Backend> find_backend(const ModelConfig& config, const std::string& version_directory) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!config.backend.empty()) {
    auto it = r.backends.find(config.backend);
    if (it != r.backends.end()) return it->second;
    return Error(StatusCode::NotFound, "no backend '" + config.backend + "' in this program" +
                                           library_for(config.backend) +
                                           "; it has: " + known_backends(r.backends));
  }
  for (const auto& [name, backend] : r.backends) {
    const auto& platforms = backend.platforms;
    if (!config.platform.empty() &&
        std::find(platforms.begin(), platforms.end(), config.platform) != platforms.end()) {
      return backend;
    }
  }
  if (!config.platform.empty()) {
    return Error(StatusCode::NotFound, "no backend for platform '" + config.platform +
                                           "' in this program" + library_for(config.platform) +
                                           "; it has: " + known_backends(r.backends));
  }
  // Neither named: the backend whose model file is there, as Triton completes a config.
  std::error_code ignored;
  for (const auto& [name, backend] : r.backends) {
    const std::string file = config.default_model_filename.empty() ? backend.default_model_filename
                                                                   : config.default_model_filename;
    if (!version_directory.empty() &&
        std::filesystem::exists(std::filesystem::path(version_directory) / file, ignored)) {
      return backend;
    }
  }
  return Error(StatusCode::InvalidArgument,
               "the config names no backend or platform, and " +
                   (version_directory.empty() ? std::string("no version directory is known")
                                              : version_directory) +
                   " holds no model file a backend of this program reads (backends: " +
                   known_backends(r.backends) + ")");
}

}  // namespace sonic::repository
