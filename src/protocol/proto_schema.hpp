// The messages and enums of proto/*.proto, read from the FileDescriptorSet protoc compiles at
// build time and embeds in the library: what lets sonic print (proto_json) and parse
// (proto_text) any of its messages without libprotobuf.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sonic/detail/export.hpp"
#include "wire.hpp"

namespace sonic::protocol::schema {

/// How deep messages may nest in what sonic prints or parses (binary, JSON, text format):
/// deeper input is refused before it can exhaust the stack. libprotobuf's default limit is 100;
/// no message of proto/ nests more than a few levels.
constexpr int kMaxNestingDepth = 64;

/// FieldDescriptorProto.Type, as descriptor.proto numbers it.
enum FieldType : int {
  kDouble = 1,
  kFloat = 2,
  kInt64 = 3,
  kUint64 = 4,
  kInt32 = 5,
  kFixed64 = 6,
  kFixed32 = 7,
  kBool = 8,
  kString = 9,
  kGroup = 10,
  kMessage = 11,
  kBytes = 12,
  kUint32 = 13,
  kEnum = 14,
  kSfixed32 = 15,
  kSfixed64 = 16,
  kSint32 = 17,
  kSint64 = 18,
};

/// Strings, bytes and messages travel length-delimited; the other types are scalars, which
/// proto3 packs when repeated.
inline bool is_length_delimited(int type) {
  return type == kString || type == kBytes || type == kMessage || type == kGroup;
}

/// The wire type a field of `type` is written with.
inline wire::WireType wire_type_of(int type) {
  switch (type) {
    case kDouble:
    case kFixed64:
    case kSfixed64: return wire::WireType::Fixed64;
    case kFloat:
    case kFixed32:
    case kSfixed32: return wire::WireType::Fixed32;
    default: return is_length_delimited(type) ? wire::WireType::Len : wire::WireType::Varint;
  }
}

struct MessageSchema;

struct EnumSchema {
  std::map<std::int32_t, std::string> names;
  std::map<std::string, std::int32_t, std::less<>> numbers;
};

struct FieldSchema {
  std::string name;
  std::uint32_t number = 0;
  int type = 0;
  bool repeated = false;
  bool explicit_presence = false;  // proto2 optional, proto3 optional, oneof member
  int oneof_index = -1;            // the oneof it belongs to, or -1
  std::string type_name;           // fully qualified, with a leading dot
  const MessageSchema* message = nullptr;
  const EnumSchema* enumeration = nullptr;
};

struct MessageSchema {
  std::string full_name;            // without the leading dot: "inference.ModelConfig"
  std::vector<FieldSchema> fields;  // in declaration order, as libprotobuf prints them
  bool map_entry = false;

  const FieldSchema* find(std::uint32_t number) const;
  const FieldSchema* find(std::string_view name) const;
};

/// The embedded descriptors themselves: proto/grpc_service.proto and what it imports, as the
/// FileDescriptorSet protoc writes (--descriptor_set_out --include_imports). Static bytes.
SONIC_EXPORT std::string_view descriptor_set();

/// Every message and enum of the embedded descriptors. Built once, on first use; thread-safe.
class Schema {
 public:
  static const Schema& instance();

  /// A message by full name, with a leading dot (".inference.ModelConfig"); null if unknown.
  const MessageSchema* message(const std::string& name) const;

 private:
  Schema();
  void read_file(std::string_view file);
  void read_message(const std::string& scope, std::string_view descriptor, bool proto3);
  void read_enum(const std::string& scope, std::string_view descriptor);

  std::map<std::string, MessageSchema> messages_;
  std::map<std::string, EnumSchema> enums_;
};

}  // namespace sonic::protocol::schema
