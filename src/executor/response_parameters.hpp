// sonic — where the response parameters a model attaches (sonic::set_response_parameters) wait
// until the executor puts them on the model's responses.
#pragma once

#include <cstddef>
#include <string_view>
#include <thread>
#include <vector>

#include "sonic/model.hpp"
#include "sonic/request.hpp"

namespace sonic::detail {

/// The response parameters of the requests whose model function runs on this thread, while it
/// runs: the executor opens one around each call of a model's function, naming the requests it
/// computes, and takes each request's parameters as it makes that request's response. Scopes
/// nest (a model's own calls of other models, such as BLS and ensemble steps, run on the
/// thread of the execution that makes them); set_response_parameters() finds the innermost
/// scope that names its request. Used on one thread only: the one that opened it.
///
/// Opening one allocates nothing: it runs around every execution, and parameters are rare
/// (their storage is made on the first attach).
class ResponseParametersScope {
 public:
  /// One request: the model computes it alone.
  explicit ResponseParametersScope(const InferRequest& request);
  /// The requests of one execution; `requests` outlives the scope.
  explicit ResponseParametersScope(const std::vector<const InferRequest*>& requests);
  ~ResponseParametersScope();
  ResponseParametersScope(const ResponseParametersScope&) = delete;
  ResponseParametersScope& operator=(const ResponseParametersScope&) = delete;

  /// The parameters attached to `request` since the last take; none on another thread than the
  /// scope's (a decoupled model's respond() called elsewhere), or for a request it does not
  /// name.
  Parameters take(const InferRequest& request);

  /// set_response_parameters(): into the innermost scope of this thread that names `request`.
  static Result<void> attach(const InferRequest& request, Parameters parameters);

 private:
  ResponseParametersScope(const InferRequest* const* requests, std::size_t count);
  /// The index of `request` among the scope's, or count_.
  std::size_t find(const InferRequest& request) const;

  const InferRequest* single_ = nullptr;  // the one request, for the one-request constructor
  const InferRequest* const* requests_;
  std::size_t count_;
  std::vector<Parameters> parameters_;  // by request index, made on the first attach
  ResponseParametersScope* outer_;
  std::thread::id thread_;
};

/// A sequence step's parameters, on their way from the model's call (which the sequence batcher
/// makes with a request of its own making) to the step's result, which the batcher makes right
/// after, on the same thread: held by the one, taken by the other.
void hold_step_parameters(Parameters parameters);
Parameters take_step_parameters();

/// Whether `name` is a response parameter sonic's servers set themselves, which a model may not.
bool reserved_response_parameter(std::string_view name);

}  // namespace sonic::detail
