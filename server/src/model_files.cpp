#include "model_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace sonic::server {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kFilePrefix = "file:";
// The most files one load may send: a model directory holds a few (a model file per version, a
// config, labels, a Python model's modules); many tiny ones would cost inodes, not bytes.
constexpr std::size_t kMaxFiles = 4096;

// A descriptor closed when it goes.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

Error system_error(const std::string& what, int error) {
  return Error(StatusCode::Internal, what + ": " + std::strerror(error));
}

// Writes `bytes` at `relative` (normal, within the directory) under the directory `top`. Each
// directory on the way is opened without following a link, so nothing lands outside `top` even
// if the tree changed under it; the file is made new.
Result<void> write_file(const std::string& top, const std::string& name, const fs::path& relative,
                        const std::string& bytes) {
  std::vector<std::string> parts;
  for (const auto& part : relative) parts.push_back(part.string());
  auto directory =
      std::make_unique<Fd>(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (directory->get() < 0) return system_error("cannot open " + top, errno);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    if (::mkdirat(directory->get(), parts[i].c_str(), 0700) != 0 && errno != EEXIST) {
      return system_error("cannot make the directory of '" + name + "'", errno);
    }
    auto next = std::make_unique<Fd>(::openat(directory->get(), parts[i].c_str(),
                                              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next->get() < 0) {
      if (errno == ENOTDIR || errno == ELOOP) {
        // Triton's words (model_repository_manager.cc, its LocalizeRepoAgent).
        return Error(StatusCode::InvalidArgument,
                     "Invalid file parameter '" + name + "', directory has been created as a file");
      }
      return system_error("cannot open the directory of '" + name + "'", errno);
    }
    directory = std::move(next);
  }
  Fd file(::openat(directory->get(), parts.back().c_str(),
                   O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (file.get() < 0) return system_error("cannot write '" + name + "'", errno);
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::write(file.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return system_error("cannot write '" + name + "'", n < 0 ? errno : ENOSPC);
    done += static_cast<std::size_t>(n);
  }
  return {};
}

// The path a file parameter names, normal and relative, or Triton's refusal of one that would
// leave the model directory `top` (an absolute path is refused too: Triton would join it under
// the directory, which surprises more than it helps).
Result<fs::path> path_within(const std::string& top, const std::string& name) {
  const fs::path given(name.substr(kFilePrefix.size()));
  const fs::path normal = given.lexically_normal();
  const bool leaves = given.empty() || given.is_absolute() || normal.empty() || normal == "." ||
                      *normal.begin() == "..";
  if (!leaves && !normal.has_filename()) {
    return Error(StatusCode::InvalidArgument,
                 "Invalid file parameter '" + name + "': it names a directory, not a file");
  }
  if (leaves) {
    const fs::path shown =
        given.is_absolute() ? normal : (fs::path(top) / given).lexically_normal();
    // Triton's words (model_repository_manager.cc, its LocalizeRepoAgent).
    return Error(StatusCode::InvalidArgument, "Invalid file parameter '" + name +
                                                  "' with normalized path '" + shown.string() +
                                                  "' must stay within model directory.");
  }
  return normal;
}

}  // namespace

ModelFiles::~ModelFiles() {
  if (root_.empty()) return;
  std::error_code ignored;
  fs::remove_all(root_, ignored);
}

std::unique_lock<std::mutex> ModelFiles::turn(const std::string& model) {
  std::shared_ptr<std::mutex> turn;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& slot = turns_[model];
    if (!slot) slot = std::make_shared<std::mutex>();
    turn = slot;
  }
  // The map keeps the mutex for as long as the server lives: one per model name loaded.
  return std::unique_lock<std::mutex>(*turn);
}

Result<std::string> ModelFiles::new_directory() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (root_.empty()) {
    std::error_code error;
    std::string pattern = (fs::temp_directory_path(error) / "sonic-server-XXXXXX").string();
    if (error) return system_error("no temporary directory", error.value());
    if (::mkdtemp(pattern.data()) == nullptr) {
      return system_error("cannot make a private directory in " + pattern, errno);
    }
    root_ = pattern;
  }
  const std::string directory = root_ + "/" + std::to_string(++made_);
  if (::mkdir(directory.c_str(), 0700) != 0) {
    return system_error("cannot make " + directory, errno);
  }
  return directory;
}

Result<std::string> ModelFiles::write(const std::string& model,
                                      const std::map<std::string, std::string>& files) {
  if (files.size() > kMaxFiles) {
    return Error(StatusCode::ResourceExhausted,
                 "the load of '" + model + "' sends " + std::to_string(files.size()) +
                     " files, more than this server takes (" + std::to_string(kMaxFiles) + ")");
  }
  std::size_t total = 0;
  for (const auto& file : files) total += file.second.size();
  if (total > max_bytes_) {
    return Error(StatusCode::ResourceExhausted,
                 "the files sent with the load of '" + model + "' hold " + std::to_string(total) +
                     " bytes, more than this server's message limit of " +
                     std::to_string(max_bytes_) + " bytes (--max-message-bytes)");
  }
  auto directory = new_directory();
  if (!directory) return directory.error();
  for (const auto& [name, bytes] : files) {
    auto relative = path_within(*directory, name);
    Result<void> written =
        relative ? write_file(*directory, name, *relative, bytes) : Result<void>(relative.error());
    if (!written) {
      discard(*directory);
      return written.error();
    }
  }
  return directory;
}

void ModelFiles::settle(const std::string& model, const std::string& directory) {
  std::string before;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = in_use_.find(model);
    if (it != in_use_.end()) before = std::move(it->second);
    if (directory.empty()) {
      if (it != in_use_.end()) in_use_.erase(it);
    } else {
      in_use_[model] = directory;
    }
  }
  if (!before.empty() && before != directory) discard(before);
}

void ModelFiles::discard(const std::string& directory) {
  std::error_code ignored;
  fs::remove_all(directory, ignored);
}

}  // namespace sonic::server
