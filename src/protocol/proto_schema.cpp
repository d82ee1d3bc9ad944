#include "proto_schema.hpp"

#include "wire.hpp"

// The FileDescriptorSet protoc compiled from proto/*.proto (generated at build time).
extern const unsigned char sonic_protocol_descriptors[];
extern const unsigned long sonic_protocol_descriptors_size;

namespace sonic::protocol::schema {

namespace {

using wire::WireType;

// Calls visit(field, bytes) for each length-delimited field, and visit(field, {}) with the
// value in `varint` for varints. The descriptors are our own build output: trusted input.
template <typename Visit>
void each(std::string_view bytes, Visit&& visit, std::uint64_t* varint = nullptr) {
  wire::Reader r(bytes);
  std::uint32_t field;
  WireType type;
  while (!r.done() && r.tag(field, type)) {
    if (type == WireType::Len) {
      std::string_view value;
      if (!r.bytes(value)) return;
      visit(field, value);
    } else if (type == WireType::Varint && varint) {
      if (!r.varint(*varint)) return;
      visit(field, std::string_view());
    } else if (!r.skip(type)) {
      return;
    }
  }
}

std::string name_of(std::string_view descriptor) {
  std::string name;
  each(descriptor, [&](std::uint32_t field, std::string_view value) {
    if (field == 1) name = std::string(value);
  });
  return name;
}

FieldSchema read_field(std::string_view descriptor, bool proto3) {
  FieldSchema f;
  bool proto3_optional = false;
  std::uint64_t v = 0;
  each(
      descriptor,
      [&](std::uint32_t field, std::string_view value) {
        switch (field) {
          case 1: f.name = std::string(value); break;
          case 3: f.number = static_cast<std::uint32_t>(v); break;
          case 4: f.repeated = v == 3; break;  // LABEL_REPEATED
          case 5: f.type = static_cast<int>(v); break;
          case 6: f.type_name = std::string(value); break;
          case 9: f.oneof_index = static_cast<int>(v); break;
          case 17: proto3_optional = v != 0; break;
        }
      },
      &v);
  f.explicit_presence = !proto3 || f.oneof_index >= 0 || proto3_optional;
  return f;
}

}  // namespace

const FieldSchema* MessageSchema::find(std::uint32_t number) const {
  for (const auto& f : fields) {
    if (f.number == number) return &f;
  }
  return nullptr;
}

const FieldSchema* MessageSchema::find(std::string_view name) const {
  for (const auto& f : fields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const Schema& Schema::instance() {
  static const Schema schema;
  return schema;
}

const MessageSchema* Schema::message(const std::string& name) const {
  auto it = messages_.find(name);
  return it == messages_.end() ? nullptr : &it->second;
}

std::string_view descriptor_set() {
  return {reinterpret_cast<const char*>(sonic_protocol_descriptors),
          sonic_protocol_descriptors_size};
}

Schema::Schema() {
  each(descriptor_set(), [&](std::uint32_t field, std::string_view file) {
    if (field == 1) read_file(file);
  });
  for (auto& [name, message] : messages_) {
    for (auto& f : message.fields) {
      if (f.type == kMessage || f.type == kGroup) {
        auto it = messages_.find(f.type_name);
        f.message = it == messages_.end() ? nullptr : &it->second;
      } else if (f.type == kEnum) {
        auto it = enums_.find(f.type_name);
        f.enumeration = it == enums_.end() ? nullptr : &it->second;
      }
    }
  }
}

void Schema::read_file(std::string_view file) {
  std::string package;
  bool proto3 = false;
  each(file, [&](std::uint32_t field, std::string_view value) {
    if (field == 2) package = std::string(value);
    if (field == 12) proto3 = value == "proto3";
  });
  std::string scope = package.empty() ? "" : "." + package;
  each(file, [&](std::uint32_t field, std::string_view value) {
    if (field == 4) read_message(scope, value, proto3);
    if (field == 5) read_enum(scope, value);
  });
}

void Schema::read_message(const std::string& scope, std::string_view descriptor, bool proto3) {
  std::string full = scope + "." + name_of(descriptor);
  MessageSchema& message = messages_[full];
  message.full_name = full.substr(1);
  each(descriptor, [&](std::uint32_t field, std::string_view value) {
    if (field == 2) message.fields.push_back(read_field(value, proto3));
    if (field == 3) read_message(full, value, proto3);
    if (field == 4) read_enum(full, value);
    if (field == 7) {  // MessageOptions { bool map_entry = 7; }
      std::uint64_t v = 0;
      each(
          value,
          [&](std::uint32_t option, std::string_view) {
            if (option == 7) message.map_entry = v != 0;
          },
          &v);
    }
  });
}

void Schema::read_enum(const std::string& scope, std::string_view descriptor) {
  EnumSchema& e = enums_[scope + "." + name_of(descriptor)];
  each(descriptor, [&](std::uint32_t field, std::string_view value) {
    if (field != 2) return;
    std::uint64_t number = 0;
    std::string value_name;
    each(
        value,
        [&](std::uint32_t f, std::string_view text) {
          if (f == 1) value_name = std::string(text);
        },
        &number);
    e.names.emplace(static_cast<std::int32_t>(number), value_name);
    e.numbers.emplace(std::move(value_name), static_cast<std::int32_t>(number));
  });
}

}  // namespace sonic::protocol::schema
