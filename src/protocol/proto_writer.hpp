// A message of proto/ written by field name through the embedded schema (proto_schema.hpp): what
// sonic builds itself (a model's configuration) names its fields, and the schema gives their
// numbers and wire types, so no field number is written by hand beside the .proto files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proto_schema.hpp"
#include "sonic/detail/export.hpp"

namespace sonic::protocol {

/// Appends fields in the order they are written (write them in field-number order for the
/// bytes protobuf itself would make). A field the message does not have, or a value of the
/// wrong kind for it, is a mistake in sonic, not in its input: std::logic_error.
class SONIC_EXPORT MessageWriter {
 public:
  /// A writer of `message_type`, a full name ("inference.ModelConfig").
  explicit MessageWriter(std::string_view message_type);

  /// A string or bytes field.
  MessageWriter& string(std::string_view field, std::string_view value);
  /// A scalar field written as a varint: an integer, a bool, or an enum by number.
  MessageWriter& number(std::string_view field, std::int64_t value);
  /// An enum field by the name of its value ("KIND_CPU").
  MessageWriter& enumerator(std::string_view field, std::string_view value);
  /// A repeated varint field, packed, as proto3 writes it (nothing for no values).
  template <typename Values>
  MessageWriter& packed(std::string_view field, const Values& values) {
    std::string bytes;
    for (auto value : values) wire::put_varint(bytes, static_cast<std::uint64_t>(value));
    return packed_bytes(field, bytes);
  }
  /// A repeated float field, packed (nothing for no values).
  MessageWriter& packed_floats(std::string_view field, const std::vector<float>& values);
  /// A message field: `value` must write the field's message type.
  MessageWriter& message(std::string_view field, const MessageWriter& value);

  /// A writer of the message type of `field`, for message().
  MessageWriter of(std::string_view field) const;

  const std::string& bytes() const noexcept { return bytes_; }

 private:
  explicit MessageWriter(const schema::MessageSchema& message) : message_(&message) {}
  const schema::FieldSchema& field(std::string_view name, bool length_delimited) const;
  MessageWriter& packed_bytes(std::string_view field, const std::string& bytes,
                              wire::WireType element = wire::WireType::Varint);

  const schema::MessageSchema* message_;
  std::string bytes_;
};

}  // namespace sonic::protocol
