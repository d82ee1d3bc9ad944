// The private directory a Python model's stubs run from: sonic_python_stub.py and
// triton_python_backend_utils.py, embedded in the library and written out at load, so that
// nothing depends on where sonic is installed, and mode 0700, so that no other user can change
// what the stubs run.
#pragma once

#include <string>

#include "sonic/error.hpp"

namespace sonic::python_backend {

/// A directory of the stub's scripts, removed with this object. Owns the directory alone;
/// movable, not copyable. Not thread-safe (used by the load that made it).
class ScriptDirectory {
 public:
  /// Makes one under $TMPDIR (or /tmp) and writes the scripts into it. INTERNAL when it cannot.
  /// Blocks on the file system only.
  static Result<ScriptDirectory> make();

  ScriptDirectory() = default;
  ScriptDirectory(ScriptDirectory&& other) noexcept;
  ScriptDirectory& operator=(ScriptDirectory&&) = delete;
  ScriptDirectory(const ScriptDirectory&) = delete;
  ScriptDirectory& operator=(const ScriptDirectory&) = delete;
  /// Removes the directory; the stubs have read the scripts by then, as they read them as they
  /// start.
  ~ScriptDirectory();

  /// The path of sonic_python_stub.py within it.
  std::string stub() const { return path_ + "/sonic_python_stub.py"; }

 private:
  std::string path_;
};

}  // namespace sonic::python_backend
