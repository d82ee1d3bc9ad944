// sonic-perf --streaming: requests sent on one stream (Client::open_stream) instead of one call
// each, their responses matched back to them by request id. A request completes with its last
// response, so its latency runs to that one; a decoupled model's requests ask for Triton's
// empty final response (as Triton's perf_analyzer does), which says where their responses end.
#pragma once

#include <sonic/sonic.hpp>

#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace sonic::perf {

class StreamSender {
 public:
  StreamSender(Client& client, bool decoupled)
      : decoupled_(decoupled),
        stream_(client.open_stream([this](StreamResponse r) { on_response(std::move(r)); })) {}

  /// Ends the stream once every request sent was answered.
  ~StreamSender() {
    stream_.close();
    (void)stream_.wait();  // requests still waiting fail with the stream, in on_response
  }

  /// Sends `request` on the stream; `done` gets its last response. Thread-safe.
  void send(InferRequest request, Callback<InferResult> done) {
    std::string id;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      id = std::to_string(next_id_++);
      waiting_.emplace(id, std::move(done));
    }
    request.id(id);
    if (decoupled_) request.parameter("triton_enable_empty_final_response", true);
    if (auto sent = stream_.send(std::move(request)); !sent) {
      finish(id, sent.error());
    }
  }

 private:
  void on_response(StreamResponse response) {
    if (!response.final) return;
    finish(response.request_id, std::move(response.result));
  }

  void finish(const std::string& id, Result<InferResult> result) {
    Callback<InferResult> done;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = waiting_.find(id);
      if (it == waiting_.end()) return;  // not one of ours (a server that lost the id)
      done = std::move(it->second);
      waiting_.erase(it);
    }
    done(std::move(result));
  }

  std::mutex mutex_;
  std::unordered_map<std::string, Callback<InferResult>> waiting_;
  unsigned long long next_id_ = 0;
  const bool decoupled_;
  InferStream stream_;  // last: destroyed (and waited for) while the rest lives
};

}  // namespace sonic::perf
