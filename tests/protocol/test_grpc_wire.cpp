// gRPC's wire: message framing and reassembly, tensor buffers, header conventions.
#include "protocol/grpc_wire.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "body_bytes.hpp"
#include "protocol/compression.hpp"
#include "protocol/wire.hpp"

using namespace std::chrono_literals;
using sonic::protocol::format_grpc_timeout;
using sonic::protocol::MessageReader;
using sonic::protocol::OutgoingBody;
using sonic::protocol::parse_grpc_timeout;

namespace {

std::string framed(const std::string& message) {
  OutgoingBody body;
  body.append_owned(message);
  REQUIRE(body.finish(1 << 30).ok());
  return body_bytes(body);
}

// A message with a string field 1, a varint field 2, raw field 7 twice, and a fixed64 field 9.
std::string sample_message(const std::string& raw_a, const std::string& raw_b) {
  using namespace sonic::protocol::wire;
  std::string m;
  put_string_field(m, 1, "model");
  put_varint_field(m, 2, 300);
  put_len_field(m, 7, raw_a);
  put_fixed64_field(m, 9, 0x1122334455667788ull);
  put_len_field(m, 7, raw_b);
  return m;
}

}  // namespace

TEST_CASE("the 5-byte prefix is big-endian length with a zero compressed flag") {
  std::string bytes = framed(std::string(258, 'x'));
  REQUIRE(bytes.size() == 263);
  CHECK(bytes[0] == 0);
  CHECK(static_cast<unsigned char>(bytes[3]) == 1);
  CHECK(static_cast<unsigned char>(bytes[4]) == 2);
}

TEST_CASE("raw fields are split into their own aligned buffers, whatever the chunking") {
  std::string raw_a(10000, 'a'), raw_b = "tiny";
  raw_a[17] = 'Z';
  std::string message = sample_message(raw_a, raw_b);
  std::string bytes = framed(message) + framed(message);  // two messages back to back
  for (std::size_t chunk :
       {std::size_t{1}, std::size_t{3}, std::size_t{7}, std::size_t{4096}, bytes.size()}) {
    CAPTURE(chunk);
    MessageReader reader(7, 1 << 20);
    for (std::size_t pos = 0; pos < bytes.size(); pos += chunk) {
      REQUIRE(reader
                  .feed(reinterpret_cast<const std::uint8_t*>(bytes.data()) + pos,
                        std::min(chunk, bytes.size() - pos))
                  .ok());
    }
    CHECK(reader.at_boundary());
    REQUIRE(reader.messages().size() == 2);
    for (auto& m : reader.messages()) {
      REQUIRE(m.raw.size() == 2);
      CHECK(std::string(reinterpret_cast<const char*>(m.raw[0].data.get()), m.raw[0].size) ==
            raw_a);
      CHECK(std::string(reinterpret_cast<const char*>(m.raw[1].data.get()), m.raw[1].size) ==
            raw_b);
      CHECK(reinterpret_cast<std::uintptr_t>(m.raw[0].data.get()) % 16 == 0);
      // The envelope is the message without the raw fields, still valid protobuf.
      std::string expected;
      sonic::protocol::wire::put_string_field(expected, 1, "model");
      sonic::protocol::wire::put_varint_field(expected, 2, 300);
      sonic::protocol::wire::put_fixed64_field(expected, 9, 0x1122334455667788ull);
      CHECK(m.envelope == expected);
    }
  }
}

TEST_CASE("a tensor's rest read in place is taken without a copy, and misplaced bytes still fit") {
  std::string raw_a(100000, 'a'), raw_b(5000, 'b');
  for (std::size_t i = 0; i < raw_a.size(); ++i) raw_a[i] = static_cast<char>('a' + i % 26);
  const std::string bytes = framed(sample_message(raw_a, raw_b));
  const auto* wire = reinterpret_cast<const std::uint8_t*>(bytes.data());
  const std::size_t tensor_start = bytes.find(raw_a.substr(0, 64));
  REQUIRE(tensor_start != std::string::npos);

  MessageReader reader(7, 1 << 20);
  CHECK(reader.tensor_destination().size == 0);  // nothing begun
  const std::size_t head = tensor_start + 1000;  // the envelope and the tensor's first bytes
  REQUIRE(reader.feed(wire, head).ok());
  MessageReader::Destination place = reader.tensor_destination();
  REQUIRE(place.size == raw_a.size() - 1000);

  SUBCASE("bytes read where they go") {
    // The socket writes the next 40,000 bytes there, and they are fed from there.
    std::memcpy(place.data, wire + head, 40000);
    REQUIRE(reader.feed(place.data, 40000).ok());
    CHECK(reader.tensor_destination().data == place.data + 40000);
    REQUIRE(reader.feed(wire + head + 40000, bytes.size() - head - 40000).ok());
  }
  SUBCASE("bytes read there that belong a little further on") {
    // A read that was expected to be the tensor's next bytes brought something else first
    // (a frame header, say): what does belong to the tensor overlaps its place.
    std::memcpy(place.data + 9, wire + head, 30000);
    REQUIRE(reader.feed(place.data + 9, 30000).ok());
    REQUIRE(reader.feed(wire + head + 30000, bytes.size() - head - 30000).ok());
  }
  SUBCASE("the message abandoned: the held buffer stays writable") {
    auto hold = std::move(place.hold);
    reader.abandon();
    std::memset(place.data, 0, place.size);  // ASan: no use after free
    CHECK(hold.use_count() == 1);
    return;
  }
  REQUIRE(reader.messages().size() == 1);
  const auto& message = reader.messages()[0];
  REQUIRE(message.raw.size() == 2);
  CHECK(std::string(reinterpret_cast<const char*>(message.raw[0].data.get()),
                    message.raw[0].size) == raw_a);
  CHECK(std::string(reinterpret_cast<const char*>(message.raw[1].data.get()),
                    message.raw[1].size) == raw_b);
}

TEST_CASE("no place to read into for a compressed message") {
  const std::string message = sample_message(std::string(100000, 'c'), "x");
  OutgoingBody plain;
  plain.append_owned(message);
  REQUIRE(plain.finish(1 << 30).ok());
  auto compressed = sonic::protocol::compress_message(plain, sonic::Compression::Gzip, 1);
  REQUIRE(compressed.get() != nullptr);
  const std::string bytes = body_bytes(*compressed);
  MessageReader reader(7, 1 << 20);
  reader.set_encoding(sonic::Compression::Gzip);
  REQUIRE(reader.feed(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size() - 10).ok());
  CHECK(reader.mid_message());
  CHECK(reader.tensor_destination().size == 0);
}

TEST_CASE("without a raw field the envelope is the whole message") {
  std::string message = sample_message("abc", "def");
  MessageReader reader(0, 1 << 20);
  std::string bytes = framed(message);
  REQUIRE(reader.feed(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()).ok());
  REQUIRE(reader.messages().size() == 1);
  CHECK(reader.messages()[0].envelope == message);
  CHECK(reader.messages()[0].raw.empty());
}

TEST_CASE("an empty message and a partial message") {
  MessageReader reader(7, 100);
  const std::uint8_t empty[] = {0, 0, 0, 0, 0};
  REQUIRE(reader.feed(empty, 5).ok());
  CHECK(reader.messages().size() == 1);
  const std::uint8_t partial[] = {0, 0, 0, 0, 3, 0x08};
  REQUIRE(reader.feed(partial, sizeof partial).ok());
  CHECK_FALSE(reader.at_boundary());
}

TEST_CASE("hostile input is an error, never a crash or a huge allocation") {
  auto feed = [](std::size_t limit, std::uint32_t raw_field, const std::string& bytes) {
    MessageReader reader(raw_field, limit);
    return reader.feed(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  };
  // Over the size limit: refused from the prefix alone.
  auto big = feed(1000, 7, std::string("\x00\x7f\xff\xff\xff", 5));
  CHECK(big.code() == sonic::StatusCode::ResourceExhausted);
  // Compressed on a call that named no grpc-encoding (a protocol error, says gRPC).
  CHECK(feed(1000, 7, std::string("\x01\x00\x00\x00\x01\x08", 6)).code() ==
        sonic::StatusCode::Internal);
  CHECK(feed(1000, 7, std::string("\x02\x00\x00\x00\x00", 5)).code() ==
        sonic::StatusCode::Internal);
  // A raw field claiming more bytes than the message holds (a lying length).
  CHECK(feed(1000, 7, std::string("\x00\x00\x00\x00\x03\x3a\x7f\x00", 8)).code() ==
        sonic::StatusCode::Internal);
  // A string field running past the message end.
  CHECK(feed(1000, 0, std::string("\x00\x00\x00\x00\x02\x0a\x05", 7)).code() ==
        sonic::StatusCode::Internal);
  // Field number zero, and the unsupported group wire type.
  CHECK_FALSE(feed(1000, 0, std::string("\x00\x00\x00\x00\x02\x00\x00", 7)).ok());
  CHECK_FALSE(feed(1000, 0, std::string("\x00\x00\x00\x00\x01\x0b", 6)).ok());
  // A varint longer than ten bytes.
  CHECK_FALSE(
      feed(1000, 0,
           std::string("\x00\x00\x00\x00\x0c\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 17))
          .ok());
  // A fixed64 cut by the message end.
  CHECK_FALSE(feed(1000, 0, std::string("\x00\x00\x00\x00\x03\x09\x01\x02", 8)).ok());
}

TEST_CASE("a message whole in one chunk reads as it does a byte at a time") {
  // Whole messages take a field-at-a-time path; any doubt goes to the byte-wise reader, so
  // both must agree on every outcome, good or bad.
  using namespace sonic::protocol::wire;
  std::string two_bytes_key;  // field 20: a key of two bytes
  put_varint_field(two_bytes_key, 20, 1);
  std::string empty_raw;
  put_len_field(empty_raw, 7, "");
  put_string_field(empty_raw, 1, "m");
  const std::string messages[] = {
      sample_message(std::string(3000, 'a'), "b"),
      sample_message("", ""),
      two_bytes_key,
      empty_raw,
      std::string("\x3a\x7f\x00", 3),              // a raw field longer than the message
      std::string("\x0a\x05", 2),                  // a string field past the end
      std::string("\x00\x00", 2),                  // field number zero
      std::string("\x0b", 1),                      // a group
      std::string("\x80\x80\x80\x80\x10\x01", 6),  // field number 2^29, above the largest
      std::string("\x09\x01\x02", 3),              // a fixed64 cut short
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),  // varint > 10 bytes
  };
  for (const auto& message : messages) {
    CAPTURE(message.size());
    const std::string bytes = framed(message) + framed("");
    MessageReader whole(7, 1 << 20), bytewise(7, 1 << 20);
    auto whole_result =
        whole.feed(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
    sonic::Result<void> bytewise_result;
    for (std::size_t i = 0; i < bytes.size() && bytewise_result.ok(); ++i) {
      bytewise_result = bytewise.feed(reinterpret_cast<const std::uint8_t*>(bytes.data()) + i, 1);
    }
    REQUIRE(whole_result.code() == bytewise_result.code());
    CHECK(whole_result.ok() == bytewise_result.ok());
    REQUIRE(whole.messages().size() == bytewise.messages().size());
    for (std::size_t m = 0; m < whole.messages().size(); ++m) {
      const auto& a = whole.messages()[m];
      const auto& b = bytewise.messages()[m];
      CHECK(a.envelope == b.envelope);
      REQUIRE(a.raw.size() == b.raw.size());
      for (std::size_t r = 0; r < a.raw.size(); ++r) {
        REQUIRE(a.raw[r].size == b.raw[r].size);
        if (a.raw[r].size > 0) {
          CHECK(std::memcmp(a.raw[r].data.get(), b.raw[r].data.get(), a.raw[r].size) == 0);
        }
      }
    }
  }
}

TEST_CASE("an outgoing body over the limit is refused before sending") {
  OutgoingBody body;
  std::string big(2000, 'x');
  body.append_borrowed(big.data(), big.size());
  auto r = body.finish(1999);
  CHECK(r.code() == sonic::StatusCode::ResourceExhausted);
  CHECK(r.error().message().find("max_message_bytes") != std::string::npos);
}

TEST_CASE("large borrowed runs are referenced, small ones copied") {
  OutgoingBody body;
  std::string large(100000, 'L'), small(10, 's');
  body.append_owned(std::string("head"));
  body.append_borrowed(large.data(), large.size());
  body.append_borrowed(small.data(), small.size());
  REQUIRE(body.finish(1 << 20).ok());
  int referenced = 0;
  for (const auto& piece : body.pieces()) {
    if (piece.data) {
      ++referenced;
      CHECK(piece.data == reinterpret_cast<const std::uint8_t*>(large.data()));
    }
  }
  CHECK(referenced == 1);
  CHECK(body.size() == 5 + 4 + large.size() + small.size());
  CHECK(body_bytes(body).substr(5) == "head" + large + small);
}

TEST_CASE("a stream's body: messages appended in order, and forgotten once sent") {
  // The HTTP/2 layer sends a body by promising bytes (`reserved`) and then walking its pieces;
  // this does both at once, as a socket that takes everything would.
  auto send_all = [](OutgoingBody& body) {
    body.reserved = body.size();
    body.piece_index = body.pieces().size();
    body.piece_offset = 0;
  };
  auto message = [](const std::string& text, const std::string* tensor,
                    std::shared_ptr<const void> owner) {
    auto m = std::make_shared<OutgoingBody>();
    m->append_owned(text);
    if (tensor) m->append_borrowed(tensor->data(), tensor->size());
    REQUIRE(m->finish(1 << 30).ok());
    if (owner) m->keep_alive(std::move(owner));
    return m;
  };
  const std::string tensor(4096, 'T');  // borrowed, not copied
  auto owner = std::make_shared<int>(7);

  OutgoingBody stream;
  stream.open = true;
  stream.append_message(*message("first", nullptr, nullptr));
  stream.append_message(*message("second", &tensor, owner));
  CHECK(body_bytes(stream) == framed("first") + framed("second" + tensor));
  CHECK(owner.use_count() == 2);  // the stream keeps what its messages borrow from
  CHECK_FALSE(stream.drained());

  // Not all sent: nothing is forgotten.
  stream.reserved = 3;
  stream.compact();
  CHECK(stream.size() == framed("first").size() + framed("second" + tensor).size());

  // All sent, while a write still references the tensor: the bytes go, the owner stays.
  send_all(stream);
  stream.in_flight_writes = 1;
  stream.append_message(*message("third", nullptr, nullptr));
  CHECK(body_bytes(stream) == framed("third"));
  CHECK(stream.reserved == 0);
  CHECK(owner.use_count() == 2);

  // All sent and no write references it: the owner is let go too.
  send_all(stream);
  stream.in_flight_writes = 0;
  stream.compact();
  CHECK(stream.size() == 0);
  CHECK(stream.pieces().empty());
  CHECK(owner.use_count() == 1);
}

TEST_CASE("tensor buffers: small from the allocator, large on huge page boundaries, all usable") {
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{4} << 20,
                            (std::size_t{40} << 20) + 3, std::size_t{64} << 20}) {
    CAPTURE(bytes);
    auto buffer = sonic::protocol::allocate_tensor_buffer(bytes);
    REQUIRE(static_cast<bool>(buffer));
    auto address = reinterpret_cast<std::uintptr_t>(buffer.get());
    CHECK(address % alignof(std::max_align_t) == 0);
    if (bytes > (std::size_t{32} << 20)) CHECK(address % (std::size_t{2} << 20) == 0);
    if (bytes > 0) {
      // Every page is writable and keeps what was written; the block is freed with the last owner.
      for (std::size_t i = 0; i < bytes; i += 4096) buffer.get()[i] = static_cast<std::uint8_t>(i);
      buffer.get()[bytes - 1] = 0x5a;
      CHECK(buffer.get()[bytes - 1] == 0x5a);
      if (bytes > 8192) CHECK(buffer.get()[8192] == static_cast<std::uint8_t>(8192));
    }
  }
}

TEST_CASE("grpc-timeout has at most 8 digits, rounds up, and parses back") {
  CHECK(format_grpc_timeout(1500ns) == "1500n");
  CHECK(format_grpc_timeout(250ms) == "250000u");
  CHECK(format_grpc_timeout(2s) == "2000000u");
  CHECK(format_grpc_timeout(1234567891ns) == "1234568u");
  CHECK(format_grpc_timeout(0ns) == "1n");
  CHECK(format_grpc_timeout(std::chrono::hours(200000)).size() <= 9);
  for (std::chrono::nanoseconds d :
       {std::chrono::nanoseconds(1ns), std::chrono::nanoseconds(999us),
        std::chrono::nanoseconds(3s), std::chrono::nanoseconds(90min)}) {
    auto parsed = parse_grpc_timeout(format_grpc_timeout(d));
    REQUIRE(parsed.has_value());
    CHECK(*parsed >= d);
  }
  CHECK(parse_grpc_timeout("10S") == std::chrono::nanoseconds(10s));
  CHECK_FALSE(parse_grpc_timeout("").has_value());
  CHECK_FALSE(parse_grpc_timeout("10").has_value());
  CHECK_FALSE(parse_grpc_timeout("123456789S").has_value());
  CHECK_FALSE(parse_grpc_timeout("1x").has_value());
  CHECK_FALSE(parse_grpc_timeout("-1S").has_value());
}

TEST_CASE("grpc-message percent-encoding round-trips and tolerates bad escapes") {
  std::string text = "model 'x' 100% \xc3\xa9\n";
  std::string encoded = sonic::protocol::percent_encode(text);
  CHECK(encoded == "model 'x' 100%25 %C3%A9%0A");
  CHECK(sonic::protocol::percent_decode(encoded) == text);
  CHECK(sonic::protocol::percent_decode("50%") == "50%");
  CHECK(sonic::protocol::percent_decode("%zz") == "%zz");
}

TEST_CASE("HTTP statuses and stream resets map to gRPC codes as the spec says") {
  using sonic::StatusCode;
  CHECK(sonic::protocol::status_from_http(404) == StatusCode::Unimplemented);
  CHECK(sonic::protocol::status_from_http(503) == StatusCode::Unavailable);
  CHECK(sonic::protocol::status_from_http(401) == StatusCode::Unauthenticated);
  CHECK(sonic::protocol::status_from_http(500) == StatusCode::Unknown);
  CHECK(sonic::protocol::error_from_reset(7).code() == StatusCode::Unavailable);
  CHECK(sonic::protocol::error_from_reset(8).code() == StatusCode::Cancelled);
  CHECK(sonic::protocol::error_from_reset(1).code() == StatusCode::Internal);
}

TEST_CASE("binary metadata is base64 with padding") {
  CHECK(sonic::protocol::base64_encode("") == "");
  CHECK(sonic::protocol::base64_encode("f") == "Zg==");
  CHECK(sonic::protocol::base64_encode("fo") == "Zm8=");
  CHECK(sonic::protocol::base64_encode("foo") == "Zm9v");
  CHECK(sonic::protocol::base64_encode(std::string("\0\xff\x10", 3)) == "AP8Q");
}

TEST_CASE("grpc-status parses digits only; anything else is UNKNOWN") {
  using sonic::StatusCode;
  CHECK(sonic::protocol::parse_grpc_status("0") == StatusCode::Ok);
  CHECK(sonic::protocol::parse_grpc_status("14") == StatusCode::Unavailable);
  CHECK(sonic::protocol::parse_grpc_status("") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_status("1x") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_status("99") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_status("99999999999") == StatusCode::Unknown);
  CHECK(sonic::protocol::parse_grpc_timeout("99999999H").has_value());  // clamped, no overflow
}

TEST_CASE("base64 decodes with or without padding and refuses junk") {
  using sonic::protocol::base64_decode;
  CHECK(base64_decode("Zm9v") == std::optional<std::string>("foo"));
  CHECK(base64_decode("Zm8=") == std::optional<std::string>("fo"));
  CHECK(base64_decode("Zm8") == std::optional<std::string>("fo"));  // gRPC may drop padding
  CHECK(base64_decode("AP8Q") == std::optional<std::string>(std::string("\0\xff\x10", 3)));
  CHECK(base64_decode("") == std::optional<std::string>(""));
  CHECK_FALSE(base64_decode("Z").has_value());
  CHECK_FALSE(base64_decode("Zm9v!").has_value());
  for (std::string s : {"", "a", "ab", "abc", "abcd", "\xff\xfe\xfd\xfc\xfb"}) {
    CHECK(base64_decode(sonic::protocol::base64_encode(s)) == std::optional<std::string>(s));
  }
}

TEST_CASE("an error's reason travels in a google.rpc.Status, and only sonic's domain counts") {
  using namespace sonic;
  Error error(StatusCode::InvalidArgument, "unable to find shared memory region 'r'",
              "SHM_REGION_NOT_FOUND");
  std::string status = protocol::encode_status_details(error);
  CHECK(protocol::reason_from_status_details(status) == "SHM_REGION_NOT_FOUND");
  // Hand-built: Status { code = 3; details = [Any { type_url, ErrorInfo { reason, domain } }] }
  // with another domain's reason first, and an unrelated detail type.
  auto any = [](const std::string& type, const std::string& value) {
    std::string a;
    protocol::wire::put_string_field(a, 1, type);
    protocol::wire::put_len_field(a, 2, value);
    return a;
  };
  auto info = [](const std::string& reason, const std::string& domain) {
    std::string i;
    protocol::wire::put_string_field(i, 1, reason);
    protocol::wire::put_string_field(i, 2, domain);
    return i;
  };
  std::string other;
  protocol::wire::put_varint_field(other, 1, 3);
  protocol::wire::put_len_field(
      other, 3, any("type.googleapis.com/google.rpc.ErrorInfo", info("QUOTA", "googleapis.com")));
  protocol::wire::put_len_field(other, 3, any("type.googleapis.com/google.rpc.RetryInfo", "x"));
  CHECK(protocol::reason_from_status_details(other).empty());
  protocol::wire::put_len_field(
      other, 3,
      any("type.googleapis.com/google.rpc.ErrorInfo", info("SHM_OUTPUT_TOO_SMALL", "sonic")));
  CHECK(protocol::reason_from_status_details(other) == "SHM_OUTPUT_TOO_SMALL");
  CHECK(protocol::reason_from_status_details("\x1a\x10truncated").empty());
  CHECK(
      protocol::encode_status_details(Error(StatusCode::Internal, "no reason")).find("ErrorInfo") ==
      std::string::npos);
}
