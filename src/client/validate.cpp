// sonic — checks of a request before it leaves the process.
#include "sonic/validate.hpp"

#include <set>
#include <string>
#include <string_view>

namespace sonic {

Result<void> check_headers(const std::vector<std::pair<std::string, std::string>>& headers) {
  for (const auto& header : headers) {
    const std::string& name = header.first;
    bool token = !name.empty();
    for (char c : name) {
      token = token && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                        c == '.');
    }
    if (!token || name.rfind("grpc-", 0) == 0 || name == "te" || name == "content-type" ||
        name == "user-agent") {
      return Error(StatusCode::InvalidArgument,
                   "header '" + name +
                       "' cannot be sent: names are lower-case letters, digits and '-_.', "
                       "and grpc-*, te, content-type and user-agent are reserved for the protocol");
    }
    if (name.size() < 4 || name.compare(name.size() - 4, 4, "-bin") != 0) {
      for (char c : header.second) {
        if (c < 0x20 || c > 0x7e) {
          return Error(StatusCode::InvalidArgument,
                       "header '" + name +
                           "' has a non-printable value; binary values need a name ending in -bin");
        }
      }
    }
  }
  return {};
}

Result<void> check_request(const InferRequest& request) {
  if (request.model_name().empty()) {
    return Error(StatusCode::InvalidArgument, "request has no model name");
  }
  if (request.timeout().count() < 0) {
    // Zero already means the client's default; a negative one is a mistake, not "no limit".
    return Error(StatusCode::InvalidArgument,
                 "request timeout of " + std::to_string(request.timeout().count()) +
                     " us is negative (zero means ClientOptions::default_timeout)");
  }
  if (auto ok = check_headers(request.headers()); !ok) return ok;
  const auto& inputs = request.inputs();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      if (inputs[j].name == inputs[i].name) {
        return Error(StatusCode::InvalidArgument, "input '" + inputs[i].name + "' given twice");
      }
    }
    // An input whose bytes the caller placed in a shared memory region it names (device
    // memory, say) travels as a descriptor: datatype and shape, no bytes here.
    bool described = inputs[i].tensor.byte_size() == 0 &&
                     inputs[i].parameters.count("shared_memory_region") != 0;
    if (auto ok = inputs[i].tensor.check(); !ok && !described) {
      return Error(StatusCode::InvalidArgument,
                   "input '" + inputs[i].name + "': " + ok.error().message());
    }
  }
  return {};
}

Result<void> validate_request(const ModelMetadata& model, const InferRequest& request) {
  if (auto ok = check_request(request); !ok) return ok;
  for (const auto& in : request.inputs()) {
    const TensorMetadata* spec = model.find_input(in.name);
    if (!spec) {
      std::string known;
      for (const auto& t : model.inputs) known += (known.empty() ? "" : ", ") + t.name;
      return Error(StatusCode::InvalidArgument, "model '" + model.name + "' has no input '" +
                                                    in.name + "' (inputs: " + known + ")");
    }
    if (spec->dtype != in.tensor.dtype()) {
      return Error(StatusCode::InvalidArgument, "input '" + in.name + "' of model '" + model.name +
                                                    "' must be " + to_string(spec->dtype) +
                                                    ", got " + to_string(in.tensor.dtype()));
    }
    const Shape& shape = in.tensor.shape();
    bool fits = shape.size() == spec->shape.size();
    for (std::size_t d = 0; fits && d < shape.size(); ++d) {
      fits = spec->shape[d] < 0 || spec->shape[d] == shape[d];
    }
    if (!fits) {
      return Error(StatusCode::InvalidArgument, "input '" + in.name + "' of model '" + model.name +
                                                    "' must have shape " + to_string(spec->shape) +
                                                    ", got " + to_string(shape));
    }
  }
  for (const auto& out : request.outputs()) {
    if (!model.find_output(out.name)) {
      return Error(StatusCode::InvalidArgument,
                   "model '" + model.name + "' has no output '" + out.name + "'");
    }
  }
  return {};
}

}  // namespace sonic
