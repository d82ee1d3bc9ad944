// The JSON headers of the messages between the server and a stub, apart from tensors
// (stub_tensors.hpp): how a message is read and written, and how a request's sequence
// parameters and an error are put as Triton's Python models expect them. Every function is
// pure: thread-safe, and never blocks.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "sonic/error.hpp"
#include "sonic/model.hpp"
#include "stub_frame.hpp"

namespace sonic::python_backend {

/// A message's header: a JSON object with a string "type". DATA_LOSS for anything else.
Result<nlohmann::json> header_of(const Frame& frame);

/// A stub's "message" field, or the whole header when it has none.
std::string message_of(const nlohmann::json& header);

/// A header as sent to a stub. Strings that are not UTF-8 (a server error quoting a client's
/// bytes) are sent with U+FFFD in their place rather than thrown on.
std::string dump_header(const nlohmann::json& header);

/// The string `key` of a message, `fallback` when absent or null; INVALID_ARGUMENT naming it
/// when it is another type, as a message of a stub is not trusted to have the types it should.
Result<std::string> string_field(const nlohmann::json& message, const char* key,
                                 std::string fallback);

/// A request's parameters as Triton's parameters() gives them: those of its sequence left out,
/// as Triton gives them as correlation_id() and flags() instead.
nlohmann::json parameters_json(const Parameters& parameters);

/// Triton's correlation_id(): the sequence's id, a number or a string; 0 outside a sequence.
nlohmann::json correlation_id_of(const Parameters& parameters);

/// Triton's flags(): TRITONSERVER_REQUEST_FLAG_SEQUENCE_START (1) and _END (2).
std::uint32_t sequence_flags_of(const Parameters& parameters);

/// A response's parameters as the stub sends them (Triton's InferResponse::Parameters(), the
/// JSON text of a dict of bool, int and str), as Triton's python_backend sets them on its
/// response (src/infer_response.cc: a string, an int64 or a bool each): none when absent. An
/// int past int64's range, or any other value, fails the response with Triton's words
/// (INTERNAL "Unsupported value type on parameters"), as text that is no JSON object does.
Result<Parameters> response_parameters_of(const nlohmann::json& response);

/// Sets on a BLS `request` what the stub's InferenceRequest carries besides its tensors, as
/// Triton's BLS passes it on: `parameters` (a JSON object of bool, int and str, as text), the
/// sequence (`correlation_id`, and `flags` START and END) and `timeout` (microseconds it may
/// wait to run: the request's server_timeout). INVALID_ARGUMENT for a field of another shape.
Result<void> apply_bls_options(const nlohmann::json& header, InferRequest& request);

/// An error as a stub receives it: {"message", "code"}, the code by its name.
nlohmann::json error_json(const Error& error);

/// The status code named `name` ("NOT_FOUND"); INTERNAL for a name that is none.
StatusCode code_named(const std::string& name);

}  // namespace sonic::python_backend
