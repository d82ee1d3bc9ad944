// sonic Python bindings — the inbox of an asyncio event loop.
#include "loop_inbox.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace sonic::python {

namespace {

using Owner = std::shared_ptr<LoopInbox>;

/// loop -> a capsule holding the Owner of its inbox. Weak keys: a loop that goes away takes
/// its entry along, and a closed loop's selector has already let go of the reader.
py::object& registry() {
  static auto* inboxes = new py::object(py::module_::import("weakref").attr("WeakKeyDictionary")());
  return *inboxes;
}

/// The inbox found last, and a weak reference to its loop: the registry's lookup is a
/// WeakKeyDictionary.get in Python, a few microseconds; a program runs one loop at a time,
/// usually. A weak reference, not the loop's address: a loop made where a dead one was must
/// not find the dead one's inbox, which its selector does not watch. Guarded by the GIL.
struct LastFound {
  py::object loop;                 // a weakref.ref
  std::weak_ptr<LoopInbox> inbox;  // weak: the cache keeps no inbox, and no fd, alive
};

LastFound& last_found() {
  static auto* last = new LastFound;
  return *last;
}

}  // namespace

LoopInbox::LoopInbox() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

LoopInbox::~LoopInbox() { ::close(wake_fd_); }

std::shared_ptr<LoopInbox> LoopInbox::of(py::handle loop) {
  LastFound& last = last_found();
  if (last.loop && PyWeakref_GetObject(last.loop.ptr()) == loop.ptr()) {
    if (Owner inbox = last.inbox.lock()) return inbox;
  }
  Owner inbox = find_or_make(loop);
  last.loop = py::weakref(loop);
  last.inbox = inbox;
  return inbox;
}

std::shared_ptr<LoopInbox> LoopInbox::find_or_make(py::handle loop) {
  py::object found = registry().attr("get")(loop);
  if (!found.is_none()) return *found.cast<py::capsule>().get_pointer<Owner>();

  Owner inbox(new LoopInbox);
  py::capsule held(new Owner(inbox), [](void* owner) { delete static_cast<Owner*>(owner); });
  // The reader holds the inbox too: jobs posted while the loop runs always find it.
  loop.attr("add_reader")(inbox->wake_fd_, py::cpp_function([inbox] { inbox->drain(); }));
  registry()[loop] = held;
  return inbox;
}

void LoopInbox::post(std::function<void()> job) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
    wake = !wake_pending_;
    wake_pending_ = true;
  }
  // A failed write leaves a full counter (2^64 - 2 wake-ups pending): the loop wakes anyway.
  if (wake) (void)::eventfd_write(wake_fd_, 1);
}

void LoopInbox::drain() {
  // Reset the wake-up before taking the jobs: a job posted after this read writes again.
  eventfd_t pending;
  (void)::eventfd_read(wake_fd_, &pending);
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    batch.swap(jobs_);
    wake_pending_ = false;
  }
  for (auto& job : batch) job();
}

}  // namespace sonic::python
