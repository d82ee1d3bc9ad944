#include "script_directory.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

// python/*.py, embedded (CMakeLists.txt: `scripts`).
extern const unsigned char sonic_sonic_python_stub_py[];
extern const unsigned long sonic_sonic_python_stub_py_size;
extern const unsigned char sonic_sonic_stub_channel_py[];
extern const unsigned long sonic_sonic_stub_channel_py_size;
extern const unsigned char sonic_triton_python_backend_utils_py[];
extern const unsigned long sonic_triton_python_backend_utils_py_size;
extern const unsigned char sonic_sonic_pb_config_py[];
extern const unsigned long sonic_sonic_pb_config_py_size;
extern const unsigned char sonic_sonic_pb_metrics_py[];
extern const unsigned long sonic_sonic_pb_metrics_py_size;
extern const unsigned char sonic_sonic_pb_requests_py[];
extern const unsigned long sonic_sonic_pb_requests_py_size;

namespace sonic::python_backend {

namespace fs = std::filesystem;

Result<ScriptDirectory> ScriptDirectory::make() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/sonic-python-XXXXXX";
  if (!::mkdtemp(pattern.data())) {
    return Error(StatusCode::Internal, "cannot make a directory for the Python stub (" + pattern +
                                           "): " + std::strerror(errno));
  }
  ScriptDirectory directory;
  directory.path_ = pattern;
  auto write = [&](const char* name, const unsigned char* bytes, unsigned long size) {
    std::ofstream out(fs::path(pattern) / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes), static_cast<std::streamsize>(size));
    return static_cast<bool>(out);
  };
  struct Script {
    const char* name;
    const unsigned char* bytes;
    unsigned long size;
  };
  const Script scripts[] = {
      {"sonic_python_stub.py", sonic_sonic_python_stub_py, sonic_sonic_python_stub_py_size},
      {"sonic_stub_channel.py", sonic_sonic_stub_channel_py, sonic_sonic_stub_channel_py_size},
      {"triton_python_backend_utils.py", sonic_triton_python_backend_utils_py,
       sonic_triton_python_backend_utils_py_size},
      {"sonic_pb_config.py", sonic_sonic_pb_config_py, sonic_sonic_pb_config_py_size},
      {"sonic_pb_metrics.py", sonic_sonic_pb_metrics_py, sonic_sonic_pb_metrics_py_size},
      {"sonic_pb_requests.py", sonic_sonic_pb_requests_py, sonic_sonic_pb_requests_py_size},
  };
  for (const auto& script : scripts) {
    if (write(script.name, script.bytes, script.size)) continue;
    return Error(StatusCode::Internal, "cannot write the Python stub into " + pattern);
  }
  return directory;
}

ScriptDirectory::ScriptDirectory(ScriptDirectory&& other) noexcept : path_(std::move(other.path_)) {
  other.path_.clear();
}

ScriptDirectory::~ScriptDirectory() {
  std::error_code ignored;
  if (!path_.empty()) fs::remove_all(path_, ignored);
}

}  // namespace sonic::python_backend
