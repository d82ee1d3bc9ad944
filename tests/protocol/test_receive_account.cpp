// What a reader holds for its peer is accounted for byte by byte, as it arrives, and given back
// exactly once, whether the message completes, fails, or is dropped half-way; declared lengths
// alone cost nothing; and a message of many empty tensor fields costs no buffer per field.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "protocol/compression.hpp"
#include "protocol/grpc_wire.hpp"
#include "protocol/infer_codec.hpp"
#include "protocol/tcp_frame.hpp"
#include "protocol/wire.hpp"

using namespace sonic;
using namespace sonic::protocol;

namespace {

// Counts what readers report; checks the order the contract states. Admits while `open`.
class CountingAccount final : public ReceiveAccount {
 public:
  bool admit(std::size_t bytes) noexcept override {
    if (!open) return false;
    promised_ += bytes;
    return true;
  }
  void settle(std::size_t bytes) noexcept override {
    if (bytes > promised_) out_of_order_ = true;
    promised_ -= bytes;
  }
  void arriving(std::size_t bytes) noexcept override {
    arriving_ += bytes;
    held_ += bytes;
  }
  void arrived(std::size_t bytes) noexcept override {
    if (bytes > arriving_) out_of_order_ = true;
    arriving_ -= bytes;
  }
  void released(std::size_t bytes) noexcept override {
    if (bytes > held_) out_of_order_ = true;
    held_ -= bytes;
  }
  std::size_t held() const { return held_; }
  std::size_t arriving() const { return arriving_; }
  std::size_t promised() const { return promised_; }
  bool out_of_order() const { return out_of_order_; }
  std::atomic<bool> open{true};

 private:
  std::atomic<std::size_t> promised_{0};
  std::atomic<std::size_t> held_{0};
  std::atomic<std::size_t> arriving_{0};
  std::atomic<bool> out_of_order_{false};
};

std::string prefixed(const std::string& body) {
  std::string out(1, '\0');
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((body.size() >> (8 * i)) & 0xff));
  return out + body;
}

Result<void> feed(MessageReader& reader, const std::string& bytes) {
  return reader.feed(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

// A ModelInferRequest: model name, and `tensors` raw fields of `bytes` bytes each.
std::string request_body(int tensors, std::size_t bytes) {
  std::string body;
  wire::put_string_field(body, 1, "identity_fp32");
  for (int i = 0; i < tensors; ++i)
    wire::put_len_field(body, kRawInputField, std::string(bytes, 'x'));
  return body;
}

}  // namespace

TEST_CASE("a whole message: held while its tensors live, released once they are freed") {
  auto account = std::make_shared<CountingAccount>();
  std::vector<ReceivedMessage> messages;
  {
    MessageReader reader(kRawInputField, 1 << 20, account);
    REQUIRE(feed(reader, prefixed(request_body(3, 1000))));
    messages = std::move(reader.messages());
  }
  REQUIRE(messages.size() == 1);
  // The envelope is decoded at once and counted released; the tensors stay held.
  CHECK(account->held() == 3000);
  CHECK(account->arriving() == 0);
  messages.clear();
  CHECK(account->held() == 0);
  CHECK_FALSE(account->out_of_order());
}

TEST_CASE("a declared length costs nothing until its bytes arrive") {
  auto account = std::make_shared<CountingAccount>();
  std::string body = request_body(1, 100 << 20);  // one 100 MiB tensor, of which a little comes
  std::string start = prefixed(body).substr(0, 64 * 1024);
  MessageReader reader(kRawInputField, 200 << 20, account);
  REQUIRE(feed(reader, start));
  CHECK(reader.mid_message());
  CHECK(account->held() <= start.size());
  CHECK(account->arriving() == account->held());
  reader.abandon();  // dropped half-way: everything given back, in order
  CHECK(account->held() == 0);
  CHECK(account->arriving() == 0);
  CHECK(account->promised() == 0);
  CHECK_FALSE(account->out_of_order());
}

TEST_CASE("a message the account does not admit waits, its bytes kept, until admitted") {
  auto account = std::make_shared<CountingAccount>();
  account->open = false;
  MessageReader reader(kRawInputField, 1 << 20, account);
  const std::string wire_bytes = prefixed(request_body(2, 3000));
  REQUIRE(feed(reader, wire_bytes.substr(0, 1000)));
  CHECK(reader.waiting_admission());
  CHECK(reader.kept_bytes() == 995);             // everything after the 5-byte prefix
  CHECK(account->held() == 995);                 // kept bytes are memory too
  CHECK(reader.tensor_destination().size == 0);  // nothing may be read into place meanwhile
  REQUIRE(reader.retry_admission());
  CHECK_FALSE(*reader.retry_admission());
  account->open = true;
  auto admitted = reader.retry_admission();
  REQUIRE(admitted);
  CHECK(*admitted);
  CHECK_FALSE(reader.waiting_admission());
  CHECK(account->promised() == wire_bytes.size() - 5);
  REQUIRE(feed(reader, wire_bytes.substr(1000)));
  REQUIRE(reader.messages().size() == 1);
  CHECK(reader.messages()[0].raw.size() == 2);
  CHECK(account->promised() == 0);
  reader.messages().clear();
  CHECK(account->held() == 0);
  CHECK_FALSE(account->out_of_order());
}

TEST_CASE("a TCP frame the account does not admit waits, its bytes kept, until admitted") {
  auto account = std::make_shared<CountingAccount>();
  account->open = false;
  std::vector<float> values(1000, 2.5f);
  std::vector<NamedTensor> tensors{{"x", Tensor::view(values, {1000}), {}}};
  std::string wire_bytes;
  for (const auto& [data, size] :
       tcp::encode_frame(tcp::FrameKind::Request, 5, "envelope", tensors, nullptr, {}).pieces) {
    wire_bytes.append(static_cast<const char*>(data), size);
  }
  std::vector<std::uint8_t> bytes(wire_bytes.begin(), wire_bytes.end());
  {
    tcp::FrameReader reader(1 << 20, account);
    REQUIRE(reader.feed(bytes.data(), 100));
    CHECK(reader.waiting_admission());
    CHECK(account->held() == 100 - tcp::kHeaderBytes);
    account->open = true;
    auto admitted = reader.retry_admission();
    REQUIRE(admitted);
    CHECK(*admitted);
    REQUIRE(reader.feed(bytes.data() + 100, bytes.size() - 100));
    REQUIRE(reader.frames().size() == 1);
    CHECK(reader.frames()[0].tensors.size() == 1);
    CHECK(account->promised() == 0);
    // Waiting again when the reader goes: what it kept is given back.
    account->open = false;
    REQUIRE(reader.feed(bytes.data(), 200));
    CHECK(reader.waiting_admission());
  }
  CHECK(account->held() == 0);
  CHECK(account->arriving() == 0);
  CHECK(account->promised() == 0);
  CHECK_FALSE(account->out_of_order());
}

TEST_CASE("a failing message gives back what it held") {
  auto account = std::make_shared<CountingAccount>();
  MessageReader reader(kRawInputField, 1 << 20, account);
  // A whole tensor, then a key of field 0: malformed after 1000 bytes were taken.
  std::string body = request_body(1, 1000) + std::string(1, '\0') + "padding";
  auto result = feed(reader, prefixed(body));
  REQUIRE_FALSE(result);
  MESSAGE(result.error().message());
  CHECK(account->held() == 0);
  CHECK(account->arriving() == 0);
  CHECK_FALSE(account->out_of_order());
  CHECK_FALSE(feed(reader, "more"));  // a failed reader takes nothing more
}

TEST_CASE("empty tensor fields need no buffer each, and their number is bounded") {
  auto account = std::make_shared<CountingAccount>();
  // As many empty raw fields as allowed: accepted, each without an allocation of its own.
  {
    MessageReader reader(kRawInputField, 1 << 20, account);
    REQUIRE(
        feed(reader, prefixed(request_body(static_cast<int>(MessageReader::kMaxRawFields), 0))));
    REQUIRE(reader.messages().size() == 1);
    const auto& raw = reader.messages()[0].raw;
    CHECK(raw.size() == MessageReader::kMaxRawFields);
    for (const auto& r : raw) REQUIRE_FALSE(r.data);
  }
  // One more, and the message is refused (a 4 MiB message of them once cost 176 MiB).
  MessageReader reader(kRawInputField, 1 << 20, account);
  auto result =
      feed(reader, prefixed(request_body(static_cast<int>(MessageReader::kMaxRawFields) + 1, 0)));
  REQUIRE_FALSE(result);
  CHECK(result.error().code() == StatusCode::ResourceExhausted);
  CHECK(account->held() == 0);
}

TEST_CASE("TCP frames: held as they arrive, released when freed, refused frames give back") {
  auto account = std::make_shared<CountingAccount>();
  std::vector<float> values(10000, 1.5f);
  std::vector<NamedTensor> tensors{{"x", Tensor::view(values, {10000}), {}}};
  std::string wire_bytes;
  for (const auto& [data, size] :
       tcp::encode_frame(tcp::FrameKind::Request, 5, "envelope", tensors, nullptr, {}).pieces) {
    wire_bytes.append(static_cast<const char*>(data), size);
  }
  std::vector<std::uint8_t> bytes(wire_bytes.begin(), wire_bytes.end());
  {
    tcp::FrameReader reader(1 << 20, account);
    REQUIRE(reader.feed(bytes.data(), bytes.size()));
    REQUIRE(reader.frames().size() == 1);
    CHECK(account->held() == values.size() * sizeof(float));
    reader.frames().clear();
    CHECK(account->held() == 0);
    // Half a frame, then the reader is gone.
    REQUIRE(reader.feed(bytes.data(), bytes.size() / 3));
    CHECK(account->held() > 0);
  }
  CHECK(account->held() == 0);
  CHECK(account->arriving() == 0);
  CHECK_FALSE(account->out_of_order());
}

TEST_CASE("a compressed message is admitted for what it may inflate to, held as it inflates") {
  const std::string body = request_body(2, 50000);  // zeros of 'x': it shrinks a lot
  OutgoingBody plain;
  plain.append_owned(body);
  REQUIRE(plain.finish(1 << 30).ok());
  auto compressed = compress_message(plain, Compression::Gzip, 6);
  REQUIRE(compressed.get() != nullptr);
  std::string wire_bytes;
  for (const auto& piece : compressed->pieces()) {
    wire_bytes.append(reinterpret_cast<const char*>(compressed->piece_data(piece)), piece.size);
  }
  const std::size_t length = wire_bytes.size() - 5;

  auto account = std::make_shared<CountingAccount>();
  std::vector<ReceivedMessage> messages;
  {
    MessageReader reader(kRawInputField, 1 << 20, account);
    reader.set_encoding(Compression::Gzip);
    REQUIRE(feed(reader, wire_bytes.substr(0, 5 + length / 2)));
    // Nothing says how large it is: what it may inflate to is promised until it ends.
    CHECK(account->promised() == std::min<std::size_t>(1 << 20, length * kMaxInflateRatio));
    REQUIRE(feed(reader, wire_bytes.substr(5 + length / 2)));
    messages = std::move(reader.messages());
  }
  REQUIRE(messages.size() == 1);
  CHECK(account->promised() == 0);
  CHECK(account->held() == 100000);  // its tensors, inflated
  messages.clear();
  CHECK(account->held() == 0);
  CHECK_FALSE(account->out_of_order());
}
