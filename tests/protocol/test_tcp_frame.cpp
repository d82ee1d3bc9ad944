// The TCP frame codec (proto/tcp_framing.md): what is encoded decodes to the same bytes, in any
// chunking; zstd shrinks what compresses and adaptive mode leaves the rest raw; every lie in a
// frame is an error before any large allocation.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "protocol/tcp_frame.hpp"

using namespace sonic;
using namespace sonic::protocol::tcp;

namespace {

std::string flatten(const OutgoingFrame& frame) {
  std::string out;
  for (const auto& [data, size] : frame.pieces) out.append(static_cast<const char*>(data), size);
  return out;
}

// Feeds `wire` in chunks of `chunk` bytes; returns the frames or the first error.
Result<std::vector<Frame>> read_all(const std::string& wire, std::size_t chunk,
                                    std::size_t max_bytes = 1u << 30) {
  FrameReader reader(max_bytes);
  for (std::size_t at = 0; at < wire.size(); at += chunk) {
    std::size_t n = std::min(chunk, wire.size() - at);
    std::vector<std::uint8_t> copy(wire.begin() + static_cast<std::ptrdiff_t>(at),
                                   wire.begin() + static_cast<std::ptrdiff_t>(at + n));
    if (auto ok = reader.feed(copy.data(), copy.size()); !ok) return ok.error();
  }
  return std::move(reader.frames());
}

std::vector<NamedTensor> payloads() {
  std::mt19937 random(7);
  std::vector<float> noise(50000);
  for (auto& x : noise) x = std::uniform_real_distribution<float>(-1, 1)(random);
  std::vector<float> sparse(48 * 48 * 20, 0.0f);
  for (std::size_t i = 0; i < sparse.size(); i += 97) sparse[i] = 1.5f;
  return {{"noise", Tensor::from_vector(noise, {1, 50000}), {}},
          {"sparse", Tensor::from_vector(sparse, {20, 48, 48}), {}},
          {"empty", Tensor::from_vector(std::vector<std::int32_t>{}, {0}), {}},
          {"tiny", Tensor::from_vector(std::vector<std::uint8_t>{42}, {1}), {}},
          {"text", Tensor::from_strings(std::vector<std::string>{"a", "bc"}, {2}), {}}};
}

void check_same(const Frame& frame, const std::vector<NamedTensor>& tensors) {
  REQUIRE(frame.tensors.size() == tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    CAPTURE(tensors[i].name);
    REQUIRE(frame.tensors[i].size == tensors[i].tensor.byte_size());
    if (frame.tensors[i].size == 0) continue;  // memcmp may not be given a null pointer
    CHECK(std::memcmp(frame.tensors[i].data.get(), tensors[i].tensor.data(),
                      tensors[i].tensor.byte_size()) == 0);
  }
}

// A header with chosen fields, for hostile frames.
std::string header(const char* magic, std::uint8_t version, std::uint8_t kind,
                   std::uint32_t envelope, std::uint32_t tensors, std::uint64_t section) {
  std::string h(magic, 4);
  h.push_back(static_cast<char>(version));
  h.push_back(static_cast<char>(kind));
  h.append(2, '\0');
  h.append(8, '\x01');
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((envelope >> (8 * i)) & 0xff));
  for (int i = 0; i < 4; ++i) h.push_back(static_cast<char>((tensors >> (8 * i)) & 0xff));
  for (int i = 0; i < 8; ++i) h.push_back(static_cast<char>((section >> (8 * i)) & 0xff));
  return h;
}

std::string record(std::uint8_t codec, std::uint64_t stored, std::uint64_t raw) {
  std::string r(1, static_cast<char>(codec));
  r.append(7, '\0');
  for (int i = 0; i < 8; ++i) r.push_back(static_cast<char>((stored >> (8 * i)) & 0xff));
  for (int i = 0; i < 8; ++i) r.push_back(static_cast<char>((raw >> (8 * i)) & 0xff));
  return r;
}

}  // namespace

TEST_CASE("frames round-trip raw, zstd and adaptive, in any chunking") {
  auto tensors = payloads();
  for (ZstdPolicy c :
       {ZstdPolicy{false, 1, false}, ZstdPolicy{true, 1, false}, ZstdPolicy{true, 3, true}}) {
    CAPTURE(c.zstd);
    CAPTURE(c.adaptive);
    auto frame = encode_frame(FrameKind::Request, 77, "envelope bytes", tensors, nullptr, c);
    std::string wire = flatten(frame);
    CHECK(wire.size() == frame.bytes);
    for (std::size_t chunk : {wire.size(), std::size_t{1}, std::size_t{7}, std::size_t{4096}}) {
      auto frames = read_all(wire + wire, chunk);  // two frames back to back
      REQUIRE(frames);
      REQUIRE(frames->size() == 2);
      for (const auto& f : *frames) {
        CHECK(f.kind == FrameKind::Request);
        CHECK(f.id == 77);
        CHECK(f.envelope == "envelope bytes");
        check_same(f, tensors);
      }
    }
  }
}

TEST_CASE("zstd shrinks sparse tensors; adaptive mode leaves noise raw") {
  auto tensors = payloads();
  std::vector<NamedTensor> sparse{tensors[1]}, noise{tensors[0]};
  auto packed = encode_frame(FrameKind::Response, 1, {}, sparse, nullptr, {true, 1, true});
  CHECK(packed.stored_tensor_bytes * 20 < packed.raw_tensor_bytes);
  auto adaptive = encode_frame(FrameKind::Response, 1, {}, noise, nullptr, {true, 1, true});
  CHECK(adaptive.stored_tensor_bytes == adaptive.raw_tensor_bytes);
  MESSAGE("sparse 48x48x20 FP32: " << packed.raw_tensor_bytes << " -> "
                                   << packed.stored_tensor_bytes << " bytes");
}

TEST_CASE("error, ping and pong frames") {
  auto wire = flatten(encode_error(9, Error(StatusCode::NotFound, "no model 'x'"))) +
              flatten(encode_control(FrameKind::Ping)) + flatten(encode_control(FrameKind::Pong));
  auto frames = read_all(wire, 3);
  REQUIRE(frames);
  REQUIRE(frames->size() == 3);
  CHECK((*frames)[0].id == 9);
  Error e = decode_error((*frames)[0]);
  CHECK(e.code() == StatusCode::NotFound);
  CHECK(e.message() == "no model 'x'");
  CHECK((*frames)[1].kind == FrameKind::Ping);
  CHECK((*frames)[2].kind == FrameKind::Pong);
}

TEST_CASE("an error frame carries its reason after the message, which older peers end at") {
  const Error refused(StatusCode::Unavailable, "model 'm' would answer too late",
                      "WOULD_MISS_DEADLINE");
  auto frames = read_all(flatten(encode_error(4, refused)) +
                             flatten(encode_error(5, Error(StatusCode::Internal, "no reason"))),
                         2);
  REQUIRE(frames);
  Error e = decode_error((*frames)[0]);
  CHECK(e.code() == StatusCode::Unavailable);
  CHECK(e.message() == "model 'm' would answer too late");
  CHECK(e.reason() == "WOULD_MISS_DEADLINE");
  // What a peer that reads the message as a C string (sonic before 0.3) shows.
  CHECK(std::string((*frames)[0].envelope.c_str() + 4) == "model 'm' would answer too late");
  CHECK(decode_error((*frames)[1]).reason().empty());
}

TEST_CASE("a cancel frame names its request and carries nothing else") {
  auto frames = read_all(flatten(encode_cancel(77)), 5);
  REQUIRE(frames);
  REQUIRE(frames->size() == 1);
  CHECK((*frames)[0].kind == FrameKind::Cancel);
  CHECK((*frames)[0].id == 77);
  CHECK((*frames)[0].envelope.empty());
  // One with an envelope is a framing error before its bytes are read.
  CHECK_FALSE(read_all(header("SNCT", 1, 9, 1, 0, 0) + "x", 33));
}

TEST_CASE("metadata frames carry headers; malformed or oversized ones are refused") {
  Headers headers{{"authorization", "Bearer abc.def"}, {"x-site", ""}};
  auto wire = flatten(encode_metadata(headers).value()) + flatten(encode_metadata({}).value());
  auto frames = read_all(wire, 5);
  REQUIRE(frames);
  REQUIRE(frames->size() == 2);
  CHECK((*frames)[0].kind == FrameKind::Metadata);
  CHECK(decode_metadata((*frames)[0]).value() == headers);
  CHECK(decode_metadata((*frames)[1]).value().empty());  // clears what came before
  // A value too big for a frame is refused when encoding; a frame that declares more than the
  // 64 KiB metadata limit is a framing error before its envelope is read.
  CHECK_FALSE(encode_metadata({{"authorization", std::string(70000, 'a')}}));
  auto over = read_all(header("SNCT", 1, 8, 65537, 0, 0), 32);
  CHECK_FALSE(over);
  // Lengths that run past the envelope.
  Frame truncated;
  truncated.kind = FrameKind::Metadata;
  truncated.envelope = std::string(
      "\x05\x00"
      "abc",
      5);  // a 5-byte name, 3 there
  CHECK_FALSE(decode_metadata(truncated));
  truncated.envelope = std::string(
      "\x01\x00"
      "a"
      "\xff\xff\xff\x7f",
      7);  // a 2 GiB value
  CHECK_FALSE(decode_metadata(truncated));
}

TEST_CASE("hostile frames are errors, never crashes or huge allocations") {
  auto fails = [](const std::string& wire, std::size_t max = 1u << 30) {
    auto frames = read_all(wire, wire.size() ? wire.size() : 1, max);
    if (frames) return false;
    MESSAGE(frames.error().message());
    return true;
  };
  CHECK(fails(header("HTTP", 1, 1, 0, 0, 0)));                 // wrong magic
  CHECK(fails(header("SNCT", 2, 1, 0, 0, 0)));                 // unknown version
  CHECK(fails(header("SNCT", 1, 10, 0, 0, 0)));                // unknown kind
  CHECK(fails(header("SNCT", 1, 1, 0xffffffff, 0, 0)));        // envelope over the limit
  CHECK(fails(header("SNCT", 1, 1, 0, 100000, 100000 * 24)));  // too many tensors
  CHECK(fails(header("SNCT", 1, 4, 0, 1, 24)));                // a ping with tensors
  std::string flagged = header("SNCT", 1, 4, 0, 0, 0);         // a ping with a flag set
  flagged[6] = 1;
  CHECK(fails(flagged));
  std::string compress_response = header("SNCT", 1, 1, 0, 0, 0);  // the one flag, on a request
  compress_response[6] = 1;
  CHECK_FALSE(fails(compress_response));
  CHECK(fails(header("SNCT", 1, 1, 0, 2, 10)));          // section shorter than records
  CHECK(fails(header("SNCT", 1, 4, 0, 0, 1ull << 40)));  // a ping with a section
  CHECK(fails(header("SNCT", 1, 1, 0, 1, 24 + 100) + record(0, 100, 50)));   // raw, lengths differ
  CHECK(fails(header("SNCT", 1, 1, 0, 1, 24 + 100) + record(5, 100, 100)));  // unknown codec
  CHECK(fails(header("SNCT", 1, 1, 0, 1, 24 + 16) + record(1, 16, 1ull << 30) +
              std::string(16, 'z')));  // zstd garbage claiming 1 GiB: refused before allocating
  CHECK(fails(header("SNCT", 1, 1, 0, 1, 24 + 1000) + record(1, 1000, 10)));  // over the bound
  CHECK(fails(header("SNCT", 1, 1, 0, 1, 24) + record(1, 0, 10)));  // empty zstd, non-empty tensor
  std::string reserved = record(0, 1, 1);
  reserved[3] = 1;
  CHECK(fails(header("SNCT", 1, 1, 0, 1, 25) + reserved + "x"));  // reserved bytes set
  // A zstd tensor whose data is damaged after its header.
  std::vector<float> zeros(10000, 0.0f);
  zeros[5000] = 3;
  std::vector<NamedTensor> t{{"z", Tensor::view(zeros, {10000}), {}}};
  std::string good = flatten(encode_frame(FrameKind::Request, 1, {}, t, nullptr, {true, 1, false}));
  REQUIRE(read_all(good, good.size()));
  std::string damaged = good;
  damaged[damaged.size() - 6] ^= 0x5a;
  damaged[damaged.size() - 9] ^= 0x33;
  CHECK(fails(damaged));
  // Truncation is no frame yet, not an error: only the end of the connection tells.
  auto partial = read_all(good.substr(0, good.size() - 1), 64);
  REQUIRE(partial);
  CHECK(partial->empty());
}

TEST_CASE("frames too big to take are skipped and refused; the stream goes on") {
  const std::string ping = flatten(encode_control(FrameKind::Ping));
  auto refused_then_ping = [&](const std::string& big, std::size_t max) {
    auto frames = read_all(big + ping, 7, max);
    REQUIRE(frames);
    REQUIRE(frames->size() == 2);
    const Frame& first = (*frames)[0];
    REQUIRE(first.refused);
    MESSAGE(first.refused->message());
    CHECK(first.refused->code() == StatusCode::ResourceExhausted);
    CHECK(first.id == 77);
    CHECK(first.tensors.empty());
    CHECK((*frames)[1].kind == FrameKind::Ping);
  };
  std::string section = header("SNCT", 1, 1, 0, 1, 24 + 1000) + record(0, 1000, 1000);
  std::memcpy(&section[8], "\x4d\0\0\0\0\0\0\0", 8);  // id 77
  // A section declared over the maximum message size: skipped as it comes.
  refused_then_ping(section + std::string(1000, 'x'), 500);
  // zstd data that decodes to more than the maximum, in a frame whose section fits: refused
  // before anything is allocated or decompressed for it.
  std::string bomb = header("SNCT", 1, 1, 0, 2, 48 + 120) + record(0, 100, 100) +
                     std::string(100, 'a') + record(1, 20, 600) + std::string(20, 'z');
  std::memcpy(&bomb[8], "\x4d\0\0\0\0\0\0\0", 8);
  refused_then_ping(bomb, 500);
}
