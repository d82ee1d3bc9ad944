// gRPC message compression: deflate and gzip messages read as the messages they hold, however
// their bytes arrive; what does not shrink goes uncompressed; and a compressed message cannot
// make the reader hold more than its limit, nor pass for valid when it is not.
#include "protocol/compression.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>

#include "body_bytes.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/wire.hpp"

using sonic::Compression;
using sonic::StatusCode;
using sonic::protocol::compress_message;
using sonic::protocol::MessageReader;
using sonic::protocol::OutgoingBody;

namespace {

constexpr std::uint32_t kRawField = 7;

// A message with a string field, a tensor (raw field 7) of `tensor` and a varint field.
OutgoingBody message_of(const std::string& tensor) {
  using namespace sonic::protocol::wire;
  std::string head;
  put_string_field(head, 1, "identity_fp32");
  put_len_field(head, kRawField, tensor);
  put_varint_field(head, 2, 300);
  OutgoingBody body;
  body.append_owned(head);
  REQUIRE(body.finish(1 << 30).ok());
  return body;
}

// Tensor bytes that compress, as real tensors often do (repeated values, small integers).
std::string compressible(std::size_t bytes) {
  std::string out(bytes, '\0');
  for (std::size_t i = 0; i < bytes; ++i) out[i] = static_cast<char>((i / 64) % 7);
  return out;
}

sonic::Result<void> feed(MessageReader& reader, const std::string& bytes, std::size_t chunk) {
  for (std::size_t at = 0; at < bytes.size(); at += chunk) {
    auto ok = reader.feed(reinterpret_cast<const std::uint8_t*>(bytes.data()) + at,
                          std::min(chunk, bytes.size() - at));
    if (!ok) return ok;
  }
  return {};
}

// The wire bytes of `tensor`'s message compressed with `c`.
std::string compressed_wire(const std::string& tensor, Compression c) {
  auto compressed = compress_message(message_of(tensor), c, 6);
  REQUIRE(compressed.get() != nullptr);
  CHECK(compressed->compressed());
  return body_bytes(*compressed);
}

}  // namespace

TEST_CASE("deflate and gzip messages read as what they hold, whatever the chunking") {
  const std::string tensor = compressible(200000);
  const OutgoingBody plain = message_of(tensor);
  for (Compression c : {Compression::Deflate, Compression::Gzip}) {
    CAPTURE(static_cast<int>(c));
    const std::string one = compressed_wire(tensor, c);
    CHECK(one.size() < plain.size() / 10);
    const std::string two = one + body_bytes(plain) + one;  // a plain one between two
    for (std::size_t chunk : {std::size_t{1}, std::size_t{7}, std::size_t{16384}, two.size()}) {
      CAPTURE(chunk);
      MessageReader reader(kRawField, 1 << 20);
      reader.set_encoding(c);
      REQUIRE(feed(reader, two, chunk).ok());
      CHECK(reader.at_boundary());
      REQUIRE(reader.messages().size() == 3);
      for (const auto& m : reader.messages()) {
        REQUIRE(m.raw.size() == 1);
        CHECK(std::string(reinterpret_cast<const char*>(m.raw[0].data.get()), m.raw[0].size) ==
              tensor);
        std::string envelope;
        sonic::protocol::wire::put_string_field(envelope, 1, "identity_fp32");
        sonic::protocol::wire::put_varint_field(envelope, 2, 300);
        CHECK(m.envelope == envelope);
      }
    }
  }
}

TEST_CASE("a message that would not shrink is sent as it is") {
  std::mt19937 random(7);
  std::string noise(4096, '\0');
  for (char& byte : noise) byte = static_cast<char>(random());
  CHECK(compress_message(message_of(noise), Compression::Gzip, 6).get() == nullptr);
  CHECK(compress_message(message_of(noise), Compression::None, 6).get() == nullptr);
}

TEST_CASE("grpc-encoding names and grpc-accept-encoding lists") {
  using sonic::protocol::accepts;
  using sonic::protocol::parse_encoding;
  CHECK(parse_encoding("gzip") == Compression::Gzip);
  CHECK(parse_encoding("deflate") == Compression::Deflate);
  CHECK(parse_encoding("identity") == Compression::None);
  CHECK_FALSE(parse_encoding("snappy").has_value());
  CHECK(accepts("identity, deflate,gzip", Compression::Gzip));
  CHECK(accepts("identity,deflate", Compression::Deflate));
  CHECK_FALSE(accepts("identity,deflate", Compression::Gzip));
  CHECK_FALSE(accepts("gzipx", Compression::Gzip));
}

TEST_CASE("compressed messages that lie are errors, and a bomb stops at the limit") {
  auto read = [](const std::string& bytes, Compression encoding, std::size_t limit) {
    MessageReader reader(kRawField, limit);
    reader.set_encoding(encoding);
    return feed(reader, bytes, 4096);
  };
  const std::string good = compressed_wire(compressible(100000), Compression::Gzip);

  // Flagged compressed on a call that named no encoding (gRPC: a protocol error).
  CHECK(read(good, Compression::None, 1 << 20).code() == StatusCode::Internal);
  // The other algorithm's bytes, garbage, a stream cut short, bytes after its end.
  CHECK(read(good, Compression::Deflate, 1 << 20).code() == StatusCode::Internal);
  std::string garbage = good;
  for (std::size_t i = 20; i < 40; ++i) garbage[i] = static_cast<char>(~garbage[i]);
  CHECK(read(garbage, Compression::Gzip, 1 << 20).code() == StatusCode::Internal);
  std::string cut = good.substr(0, good.size() - 10);
  const std::size_t cut_length = cut.size() - 5;
  for (int i = 0; i < 4; ++i) cut[1 + i] = static_cast<char>(cut_length >> (8 * (3 - i)));
  CHECK(read(cut, Compression::Gzip, 1 << 20).code() == StatusCode::Internal);
  std::string longer = good + "xx";
  const std::size_t longer_length = longer.size() - 5;
  for (int i = 0; i < 4; ++i) longer[1 + i] = static_cast<char>(longer_length >> (8 * (3 - i)));
  CHECK(read(longer, Compression::Gzip, 1 << 20).code() == StatusCode::Internal);
  CHECK(read(std::string("\x01\x00\x00\x00\x00", 5), Compression::Gzip, 1 << 20).code() ==
        StatusCode::Internal);

  // 64 MiB of zeros in a few dozen KiB: refused by its tensor's length, past the 1 MiB limit.
  const std::string bomb = compressed_wire(std::string(64 << 20, '\0'), Compression::Gzip);
  CHECK(bomb.size() < 128 * 1024);
  CHECK(read(bomb, Compression::Gzip, 1 << 20).code() == StatusCode::ResourceExhausted);
  // 64 MiB of small fields: refused as it inflates past the limit.
  std::string fields;
  for (int i = 0; i < (32 << 20); ++i) fields += "\x10\x01";  // field 2, varint 1
  OutgoingBody many;
  many.append_owned(fields);
  REQUIRE(many.finish(1u << 31).ok());
  auto packed = compress_message(many, Compression::Deflate, 6);
  REQUIRE(packed.get() != nullptr);
  CHECK(read(body_bytes(*packed), Compression::Deflate, 1 << 20).code() ==
        StatusCode::ResourceExhausted);
}

TEST_CASE("inflate_bound: a ratio, a floor of 1 MiB within deflate's own, the size limit") {
  using sonic::protocol::inflate_bound;
  using sonic::protocol::inflated_past_bound;
  constexpr std::size_t kGiB = std::size_t{1} << 30, kMiB = std::size_t{1} << 20;
  CHECK(inflate_bound(64 << 10, 256, kGiB) == (64u << 10) * 256);  // by its ratio: 16 MiB
  CHECK(inflate_bound(2048, 256, kGiB) == kMiB);                   // the floor
  CHECK(inflate_bound(100, 256, kGiB) == 100 * 1032);              // within deflate's 1032:1 still
  CHECK(inflate_bound(64 << 10, 256, kMiB) == kMiB);               // the size limit
  CHECK(inflate_bound(64 << 10, 5000, kGiB) == (64u << 10) * 1032);
  CHECK(inflated_past_bound(64 << 10, 256, kGiB).code() == StatusCode::InvalidArgument);
  CHECK(inflated_past_bound(64 << 10, 256, kMiB).code() == StatusCode::ResourceExhausted);
}

TEST_CASE("a compressed message past its ratio stops where the bound is, INVALID_ARGUMENT") {
  // 64 MiB of zeros in a few dozen KiB: past 256 times its size long before its end.
  const std::string bomb = compressed_wire(std::string(64 << 20, '\0'), Compression::Gzip);
  MessageReader reader(sonic::protocol::RawFieldPath{kRawField}, std::size_t{512} << 20);
  reader.set_encoding(Compression::Gzip);
  reader.set_inflate_ratio(256);
  auto fed = feed(reader, bomb, 16384);
  REQUIRE_FALSE(fed.ok());
  CHECK(fed.error().code() == StatusCode::InvalidArgument);
  CHECK(std::string(fed.error().message()).find("256 times") != std::string::npos);
  // It stopped at the bound: what it inflated is its bound, not 64 MiB.
  CHECK(reader.inflated_bytes() <= (bomb.size() - 5) * 256);
  // The same message within a ratio it stays under is read whole.
  MessageReader lenient(sonic::protocol::RawFieldPath{kRawField}, std::size_t{512} << 20);
  lenient.set_encoding(Compression::Gzip);
  CHECK(feed(lenient, bomb, 16384).ok());
  CHECK(lenient.messages().size() == 1);
}
