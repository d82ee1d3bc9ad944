// sonic Python bindings — the mailbox of an asyncio event loop.
#include "loop_mailbox.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

namespace sonic::python {

namespace {

using Owner = std::shared_ptr<LoopMailbox>;

/// loop -> a capsule holding the Owner of its mailbox. Weak keys: a loop that goes away takes
/// its entry along, and a closed loop's selector has already let go of the reader.
py::object& registry() {
  static auto* mailboxes =
      new py::object(py::module_::import("weakref").attr("WeakKeyDictionary")());
  return *mailboxes;
}

/// The mailbox found last, and a weak reference to its loop: the registry's lookup is a
/// WeakKeyDictionary.get in Python, a few microseconds; a program runs one loop at a time,
/// usually. A weak reference, not the loop's address: a loop made where a dead one was must
/// not find the dead one's mailbox, which its selector does not watch. Guarded by the GIL.
struct LastFound {
  py::object loop;  // a weakref.ref
  Owner mailbox;
};

LastFound& last_found() {
  static auto* last = new LastFound;
  return *last;
}

/// The mailboxes holding sends: those whose loop's turn has not ended. Weak: a mailbox may go
/// (its loop collected, its last request timed out) before its sends were posted, which its
/// destructor then does. Guarded by the GIL.
std::vector<std::weak_ptr<LoopMailbox>>& holding_sends() {
  static auto* holding = new std::vector<std::weak_ptr<LoopMailbox>>;
  return *holding;
}

}  // namespace

LoopMailbox::LoopMailbox() : wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  if (wake_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
}

// The last owner may be a network thread, without the GIL: flush_callback_ takes it to let go,
// and sends_ posts what it still holds without it.
LoopMailbox::~LoopMailbox() { ::close(wake_fd_); }

std::shared_ptr<LoopMailbox> LoopMailbox::of(py::handle loop) {
  LastFound& last = last_found();
  if (last.loop && PyWeakref_GetObject(last.loop.ptr()) == loop.ptr()) return last.mailbox;
  Owner mailbox = find_or_make(loop);
  last.loop = py::weakref(loop);
  last.mailbox = mailbox;
  return mailbox;
}

std::shared_ptr<LoopMailbox> LoopMailbox::find_or_make(py::handle loop) {
  py::object found = registry().attr("get")(loop);
  if (!found.is_none()) return *found.cast<py::capsule>().get_pointer<Owner>();

  Owner mailbox(new LoopMailbox);
  py::capsule held(new Owner(mailbox), [](void* owner) { delete static_cast<Owner*>(owner); });
  // The reader holds the mailbox too: jobs posted while the loop runs always find it.
  loop.attr("add_reader")(mailbox->wake_fd_, py::cpp_function([mailbox] { mailbox->drain(); }));
  std::weak_ptr<LoopMailbox> weak = mailbox;
  mailbox->flush_callback_ = std::make_unique<Held>(py::cpp_function([weak] {
    if (auto alive = weak.lock()) alive->flush_sends();
  }));
  registry()[loop] = held;
  return mailbox;
}

void LoopMailbox::post(std::function<void()> job) {
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

void LoopMailbox::drain() {
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

void LoopMailbox::flush_at_end_of_turn(py::handle loop) noexcept {
  if (sends_.size() >= kSendsPerWakeup) sends_.flush();
  if (flush_scheduled_ || sends_.empty()) return;
  try {
    loop.attr("call_soon")(flush_callback_->get());
  } catch (py::error_already_set& failure) {
    failure.discard_as_unraisable("sonic.Client.ainfer");
    sends_.flush();
    return;
  }
  flush_scheduled_ = true;
  holding_sends().push_back(weak_from_this());
}

void LoopMailbox::flush_sends() {
  flush_scheduled_ = false;
  auto& holding = holding_sends();
  holding.erase(std::remove_if(holding.begin(), holding.end(),
                               [this](const std::weak_ptr<LoopMailbox>& held) {
                                 auto alive = held.lock();
                                 return !alive || alive.get() == this;
                               }),
                holding.end());
  sends_.flush();
}

void LoopMailbox::flush_all_sends() {
  std::vector<std::weak_ptr<LoopMailbox>> holding;
  holding.swap(holding_sends());
  for (auto& held : holding) {
    if (auto mailbox = held.lock()) {
      mailbox->flush_scheduled_ = false;  // its call_soon may come later: it finds nothing
      mailbox->sends_.flush();
    }
  }
}

}  // namespace sonic::python
