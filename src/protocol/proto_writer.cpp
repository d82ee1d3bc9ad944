#include "proto_writer.hpp"

#include <cstring>
#include <stdexcept>

namespace sonic::protocol {

namespace {

const schema::MessageSchema& message_named(std::string_view type) {
  const auto* message = schema::Schema::instance().message("." + std::string(type));
  if (!message) throw std::logic_error("no message " + std::string(type) + " in proto/");
  return *message;
}

}  // namespace

MessageWriter::MessageWriter(std::string_view message_type)
    : message_(&message_named(message_type)) {}

const schema::FieldSchema& MessageWriter::field(std::string_view name,
                                                bool length_delimited) const {
  const schema::FieldSchema* found = message_->find(name);
  if (!found) {
    throw std::logic_error(message_->full_name + " has no field " + std::string(name));
  }
  if (schema::is_length_delimited(found->type) != length_delimited) {
    throw std::logic_error(message_->full_name + "." + std::string(name) +
                           (length_delimited ? " is not length-delimited" : " is not a varint"));
  }
  return *found;
}

MessageWriter& MessageWriter::string(std::string_view name, std::string_view value) {
  const auto& f = field(name, true);
  if (f.type != schema::kString && f.type != schema::kBytes) {
    throw std::logic_error(message_->full_name + "." + std::string(name) + " is a message");
  }
  wire::put_string_field(bytes_, f.number, value);
  return *this;
}

MessageWriter& MessageWriter::number(std::string_view name, std::int64_t value) {
  const auto& f = field(name, false);
  if (schema::wire_type_of(f.type) != wire::WireType::Varint || f.type == schema::kSint32 ||
      f.type == schema::kSint64) {
    throw std::logic_error(message_->full_name + "." + std::string(name) +
                           " is not written as a plain varint");
  }
  wire::put_varint_field(bytes_, f.number, static_cast<std::uint64_t>(value));
  return *this;
}

MessageWriter& MessageWriter::enumerator(std::string_view name, std::string_view value) {
  const auto& f = field(name, false);
  if (f.enumeration) {
    if (auto it = f.enumeration->numbers.find(value); it != f.enumeration->numbers.end()) {
      wire::put_varint_field(bytes_, f.number, static_cast<std::uint64_t>(it->second));
      return *this;
    }
  }
  throw std::logic_error(message_->full_name + "." + std::string(name) + " has no value " +
                         std::string(value));
}

MessageWriter& MessageWriter::packed_floats(std::string_view name,
                                            const std::vector<float>& values) {
  std::string bytes;
  for (float value : values) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    for (int shift = 0; shift < 32; shift += 8) bytes.push_back(static_cast<char>(bits >> shift));
  }
  return packed_bytes(name, bytes, wire::WireType::Fixed32);
}

MessageWriter& MessageWriter::packed_bytes(std::string_view name, const std::string& bytes,
                                           wire::WireType element) {
  const schema::FieldSchema* f = message_->find(name);
  if (!f || !f->repeated || schema::wire_type_of(f->type) != element) {
    throw std::logic_error(message_->full_name + "." + std::string(name) +
                           " is not a repeated field of that wire type");
  }
  if (!bytes.empty()) wire::put_len_field(bytes_, f->number, bytes);
  return *this;
}

MessageWriter& MessageWriter::message(std::string_view name, const MessageWriter& value) {
  const auto& f = field(name, true);
  if (f.message != value.message_) {
    throw std::logic_error(message_->full_name + "." + std::string(name) + " is not a " +
                           value.message_->full_name);
  }
  wire::put_len_field(bytes_, f.number, value.bytes_);
  return *this;
}

MessageWriter MessageWriter::of(std::string_view name) const {
  const auto& f = field(name, true);
  if (!f.message) {
    throw std::logic_error(message_->full_name + "." + std::string(name) + " is not a message");
  }
  return MessageWriter(*f.message);
}

}  // namespace sonic::protocol
