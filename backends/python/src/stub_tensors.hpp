// Tensors as a stub's messages carry them: a JSON description {"name", "datatype", "shape",
// "buffer"} in the header, the bytes in the frame's buffer it names. Kept apart from the
// conversation so that what a stub may make the server build from its bytes is decided in one
// place.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sonic/error.hpp"
#include "sonic/model.hpp"
#include "stub_frame.hpp"

namespace sonic::python_backend {

/// The descriptions of `tensors`, appending their bytes to `buffers` (not copied: `tensors`
/// must outlive the write of the frame). Never blocks; throws nlohmann::json::exception only
/// when the JSON is dumped with a name that is not UTF-8.
nlohmann::json describe_all(const std::vector<NamedTensor>& tensors,
                            std::vector<ByteRange>& buffers);

/// The tensors a stub described in `list`, over `frame`'s buffers (no copy: they share its
/// storage). INTERNAL naming `who` for a description that does not fit its bytes: the stub,
/// not the request, is at fault. The index of a BYTES tensor's elements (a string_view, 16
/// bytes, an element, built by Tensor::check and by whoever reads the strings) counts against
/// `limits`: the BYTES tensors of one list may hold at most max_buffer_bytes / 16 elements,
/// so that a stub's empty strings (4 bytes each on the wire) cost the server no more than
/// max_message_bytes again; INTERNAL past it, found before any index is built. Thread-safe;
/// never blocks.
Result<std::vector<NamedTensor>> tensors_of(const nlohmann::json& list, const Frame& frame,
                                            const FrameLimits& limits, const std::string& who);

}  // namespace sonic::python_backend
