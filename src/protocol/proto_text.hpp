// Protobuf text format (what Triton's config.pbtxt files are written in) parsed into the binary
// wire form of a message of proto/, without libprotobuf: the schema comes from the descriptors
// embedded in the library (proto_schema.hpp). Accepts what libprotobuf's TextFormat::Parser
// accepts for these messages, and rejects what it rejects, with the line and column.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/detail/export.hpp"
#include "sonic/error.hpp"

namespace sonic::protocol {

/// What to do with a field name the schema does not know.
struct TextParseOptions {
  /// Called with the message's full name ("inference.ModelConfig") and the field's name; true
  /// skips the field and its value, false makes it an error (libprotobuf's behaviour). Unset:
  /// every unknown field is an error.
  std::function<bool(std::string_view message, std::string_view field)> skip_unknown_field;
};

/// A parsed message: its bytes, and the fields skipped by skip_unknown_field ("Message.field").
struct ParsedText {
  std::string bytes;
  std::vector<std::string> skipped_fields;
};

/// The message of type `message_type` (a full name) that `text` writes, serialized as protobuf
/// serializes it (fields in number order, repeated numbers packed). INVALID_ARGUMENT, whose
/// message begins "LINE:COLUMN: ", for text that is not a valid message of that type (syntax, an
/// unknown field or enum value, a number out of its field's range, a field given twice that is
/// not repeated, two members of one oneof, nesting deeper than 64); NOT_FOUND for an unknown
/// type.
SONIC_EXPORT Result<ParsedText> parse_text_message(std::string_view message_type,
                                                   std::string_view text,
                                                   const TextParseOptions& options = {});

}  // namespace sonic::protocol
