// sonic Python bindings — staging asyncio answers by loop.
#include "loop_delivery.hpp"

#include <utility>
#include <vector>

#include "convert.hpp"

namespace sonic::python {

namespace {

struct Staged {
  py::object loop;
  py::list answers;  // (future, result, error) tuples
};

// Guarded by the GIL. A batch rarely spans more than one loop: a vector is searched.
std::vector<Staged>& staged() {
  static auto* all = new std::vector<Staged>;
  return *all;
}

}  // namespace

void stage_for_loop(py::object loop, py::object future, py::object result, py::object error) {
  auto& all = staged();
  auto it = all.begin();
  while (it != all.end() && !it->loop.is(loop)) ++it;
  if (it == all.end()) it = all.insert(all.end(), Staged{std::move(loop), py::list()});
  it->answers.append(py::make_tuple(std::move(future), std::move(result), std::move(error)));
}

void flush_loop_deliveries() {
  static py::object& deliver = package_attribute("sonic._types", "_deliver_to_futures");
  std::vector<Staged> batch;
  batch.swap(staged());
  for (auto& [loop, answers] : batch) {
    try {
      loop.attr("call_soon_threadsafe")(deliver, answers);
    } catch (py::error_already_set& failure) {
      // A loop closed meanwhile (asyncio.run() returned with a request still cancelling) has
      // no task left to await these: they go. Anything else is reported.
      if (!loop.attr("is_closed")().cast<bool>()) {
        failure.discard_as_unraisable("sonic.Client.ainfer");
      }
    }
  }
}

}  // namespace sonic::python
