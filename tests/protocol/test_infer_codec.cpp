// Over 500 lines: one case per field and malformation of the inference messages.
#include <doctest/doctest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "body_bytes.hpp"
#include "grpc_service.pb.h"
#include "protocol/infer_codec.hpp"

using namespace sonic;
using namespace sonic::protocol;

namespace {

// What the receiving side would assemble from the wire bytes of a body.
ReceivedMessage receive(const std::string& wire, std::uint32_t raw_field) {
  MessageReader reader(raw_field, 1u << 30);
  REQUIRE(reader.feed(reinterpret_cast<const std::uint8_t*>(wire.data()), wire.size()).ok());
  REQUIRE(reader.messages().size() == 1);
  return std::move(reader.messages()[0]);
}

std::string frame(const google::protobuf::Message& message) {
  OutgoingBody body;
  body.append_owned(message.SerializeAsString());
  REQUIRE(body.finish(1u << 30).ok());
  return body_bytes(body);
}

std::string bytes_of(const Tensor& t) {
  return std::string(reinterpret_cast<const char*>(t.data()), t.byte_size());
}

}  // namespace

TEST_CASE("an encoded request is a ModelInferRequest to libprotobuf, field for field") {
  std::vector<float> big(100000);
  std::iota(big.begin(), big.end(), 0.f);
  std::vector<std::int64_t> small = {-1, 2, -3};
  auto request = InferRequest("identity", "3")
                     .id("r1")
                     .parameter("priority", std::uint64_t{7})
                     .parameter("timeout", std::int64_t{-5})
                     .parameter("flag", true)
                     .parameter("ratio", 0.25)
                     .parameter("tag", std::string("x"))
                     .input("BIG", Tensor::view(big, {1, 100000}), {{"p", std::int64_t{1}}})
                     .input("SMALL", Tensor::from_vector(small, {3}))
                     .input("TEXT", Tensor::from_strings(std::vector<std::string>{"ab", "c"}, {2}))
                     .output("OUT", {{"classification", std::int64_t{2}}});
  auto body = encode_infer_request(request, 1u << 30).value();
  std::string wire = body_bytes(*body);

  inference::ModelInferRequest pb;
  REQUIRE(pb.ParseFromString(wire.substr(5)));
  CHECK(pb.model_name() == "identity");
  CHECK(pb.model_version() == "3");
  CHECK(pb.id() == "r1");
  CHECK(pb.parameters().at("priority").uint64_param() == 7);
  CHECK(pb.parameters().at("timeout").int64_param() == -5);
  CHECK(pb.parameters().at("flag").bool_param());
  CHECK(pb.parameters().at("ratio").double_param() == 0.25);
  CHECK(pb.parameters().at("tag").string_param() == "x");
  REQUIRE(pb.inputs_size() == 3);
  CHECK(pb.inputs(0).name() == "BIG");
  CHECK(pb.inputs(0).datatype() == "FP32");
  CHECK(pb.inputs(0).shape(1) == 100000);
  CHECK(pb.inputs(0).parameters().at("p").int64_param() == 1);
  CHECK(pb.inputs(1).datatype() == "INT64");
  CHECK(pb.inputs(2).datatype() == "BYTES");
  CHECK_FALSE(pb.inputs(0).has_contents());
  REQUIRE(pb.outputs_size() == 1);
  CHECK(pb.outputs(0).parameters().at("classification").int64_param() == 2);
  REQUIRE(pb.raw_input_contents_size() == 3);
  CHECK(pb.raw_input_contents(0) ==
        std::string(reinterpret_cast<const char*>(big.data()), big.size() * 4));
  CHECK(pb.raw_input_contents(1) == std::string(reinterpret_cast<const char*>(small.data()), 24));

  // The big tensor is sent from the caller's memory, not copied into the body.
  bool references_big = false;
  for (const auto& piece : body->pieces()) {
    references_big |= piece.data == reinterpret_cast<const std::uint8_t*>(big.data());
  }
  CHECK(references_big);
}

TEST_CASE("nested messages of 128 bytes and more keep a length libprotobuf reads") {
  // Tensor headers and parameters are written in place, their length widened once known: each
  // size here crosses a varint width (1, 2 and 3 bytes) for the parameter, its map entry, the
  // tensor header and the output.
  for (std::size_t n : {100u, 127u, 128u, 200u, 16383u, 16384u, 70000u}) {
    CAPTURE(n);
    std::string text(n, 't');
    std::vector<std::int32_t> values(4, 7);
    auto request = InferRequest("m")
                       .parameter(std::string(n, 'k'), text)
                       .input(std::string(n, 'i'), Tensor::view(values, {2, 2}), {{"note", text}})
                       .output(std::string(n, 'o'), {{"note", text}});
    std::string wire = body_bytes(*encode_infer_request(request, 1u << 30).value());
    inference::ModelInferRequest pb;
    REQUIRE(pb.ParseFromString(wire.substr(5)));
    CHECK(pb.parameters().at(std::string(n, 'k')).string_param() == text);
    REQUIRE(pb.inputs_size() == 1);
    CHECK(pb.inputs(0).name() == std::string(n, 'i'));
    CHECK(pb.inputs(0).shape_size() == 2);
    CHECK(pb.inputs(0).parameters().at("note").string_param() == text);
    REQUIRE(pb.outputs_size() == 1);
    CHECK(pb.outputs(0).name() == std::string(n, 'o'));
    CHECK(pb.outputs(0).parameters().at("note").string_param() == text);
    REQUIRE(pb.raw_input_contents_size() == 1);
    CHECK(pb.raw_input_contents(0).size() == 16);
    // The shortest encoding, byte for byte as libprotobuf writes it.
    CHECK(pb.SerializeAsString().size() == wire.size() - 5);
  }
}

TEST_CASE("ModelStreamInferResponse: libprotobuf reads what the server sends, and back") {
  std::vector<std::int32_t> values = {1, -2, 3};
  std::vector<float> big(1000, 0.5f);  // borrowed: referenced, not copied
  InferResult result(
      "m", "1", "r7",
      {{"A", Tensor::from_vector(values, {3}), {}}, {"B", Tensor::view(big, {1, 1000}), {}}});
  result.set_parameter(kFinalResponse, false);
  auto body = encode_stream_infer_response(result, 1 << 20).value();
  std::string wire = body_bytes(*body);
  inference::ModelStreamInferResponse pb;
  REQUIRE(pb.ParseFromString(wire.substr(5)));
  CHECK(pb.error_message().empty());
  const auto& r = pb.infer_response();
  CHECK(r.id() == "r7");
  CHECK_FALSE(r.parameters().at(kFinalResponse).bool_param());
  REQUIRE(r.raw_output_contents_size() == 2);
  CHECK(r.raw_output_contents(0) == std::string(reinterpret_cast<const char*>(values.data()), 12));
  CHECK(r.raw_output_contents(1).size() == 4000);
  CHECK(pb.SerializeAsString().size() == wire.size() - 5);

  // The client's reader and decoder: the tensors go from the wire into buffers of their own
  // once, whether the bytes come whole or one at a time; the envelope keeps none of them.
  for (std::size_t chunk : {wire.size(), std::size_t{1}, std::size_t{7}}) {
    CAPTURE(chunk);
    MessageReader reader(kStreamResponseRawField, 1 << 20);
    for (std::size_t at = 0; at < wire.size(); at += chunk) {
      const std::size_t n = std::min(chunk, wire.size() - at);
      REQUIRE(reader.feed(reinterpret_cast<const std::uint8_t*>(wire.data()) + at, n));
    }
    REQUIRE(reader.messages().size() == 1);
    ReceivedMessage message = std::move(reader.messages().front());
    REQUIRE(message.raw.size() == 2);
    CHECK(message.raw[1].size == 4000);
    CHECK(message.envelope.size() + message.outer.size() < 200);
    const std::uint8_t* tensor_bytes = message.raw[1].data.get();
    std::string failed_id;
    auto decoded = decode_stream_infer_response(std::move(message), &failed_id);
    REQUIRE(decoded.ok());
    CHECK(decoded->request_id() == "r7");
    CHECK(decoded->output("A").as<std::int32_t>().to_vector() == values);
    CHECK(decoded->output("B").as<float>()[999] == 0.5f);
    CHECK(decoded->output("B").data() == tensor_bytes);  // the reader's buffer, not a copy
    CHECK(std::get<bool>(decoded->parameters().at(kFinalResponse)) == false);
  }

  // A failed request: error_message and its id; no code on the wire.
  auto error = encode_stream_error(Error(StatusCode::InvalidArgument, "bad input"),
                                   InferRequest("m", "1").id("r8"), {{kFinalResponse, true}});
  inference::ModelStreamInferResponse failed;
  REQUIRE(failed.ParseFromString(body_bytes(*error).substr(5)));
  CHECK(failed.error_message() == "bad input");
  CHECK(failed.infer_response().id() == "r8");
  CHECK(failed.infer_response().model_name() == "m");
  MessageReader failed_reader(kStreamResponseRawField, 1 << 20);
  const std::string failed_wire = body_bytes(*error);
  REQUIRE(failed_reader.feed(reinterpret_cast<const std::uint8_t*>(failed_wire.data()),
                             failed_wire.size()));
  std::string failed_id;
  auto refused =
      decode_stream_infer_response(std::move(failed_reader.messages().front()), &failed_id);
  CHECK(refused.code() == StatusCode::Unknown);
  CHECK(refused.error().message() == "bad input");
  CHECK(failed_id == "r8");

  // The empty last response of a decoupled model's request.
  inference::ModelStreamInferResponse last;
  REQUIRE(
      last.ParseFromString(body_bytes(*encode_stream_final(InferRequest("m").id("r9"))).substr(5)));
  CHECK(last.error_message().empty());
  CHECK(last.infer_response().outputs_size() == 0);
  CHECK(last.infer_response().parameters().at(kFinalResponse).bool_param());

  // A field that runs past the infer_response holding it is malformed, however it is cut.
  const std::string overrun = std::string("\0\0\0\0\x07\x12\x02\x1a\x05", 9) + "abc";
  for (std::size_t chunk : {overrun.size(), std::size_t{1}}) {
    MessageReader broken(kStreamResponseRawField, 1 << 20);
    bool broke = false;
    for (std::size_t at = 0; at < overrun.size() && !broke; at += chunk) {
      broke = !broken.feed(reinterpret_cast<const std::uint8_t*>(overrun.data()) + at,
                           std::min(chunk, overrun.size() - at));
    }
    CHECK(broke);
  }
}

TEST_CASE("request round trip: client encoder to server decoder") {
  std::vector<std::int32_t> a(16);
  std::iota(a.begin(), a.end(), -8);
  auto request =
      InferRequest("simple").id("abc").input("INPUT0", Tensor::view(a, {1, 16})).output("OUTPUT1");
  auto decoded = decode_infer_request(
      receive(body_bytes(*encode_infer_request(request, 1 << 20).value()), kRawInputField));
  REQUIRE(decoded.ok());
  CHECK(decoded->model_name() == "simple");
  CHECK(decoded->request_id() == "abc");
  REQUIRE(decoded->inputs().size() == 1);
  CHECK(decoded->inputs()[0].tensor.shape() == Shape{1, 16});
  CHECK(decoded->inputs()[0].tensor.as<std::int32_t>().to_vector() == a);
  REQUIRE(decoded->outputs().size() == 1);
  CHECK(decoded->outputs()[0].name == "OUTPUT1");
}

TEST_CASE("every datatype round-trips raw through request and response") {
  for (DataType type : kAllDataTypes) {
    CAPTURE(to_string(type));
    Tensor t = type == DataType::Bytes
                   ? Tensor::from_strings(std::vector<std::string>{"x", "", "long string"}, {3})
                   : [&] {
                       std::vector<std::uint8_t> bytes(6 * element_size(type));
                       for (std::size_t i = 0; i < bytes.size(); ++i)
                         bytes[i] = static_cast<std::uint8_t>(i * 37 + 1);
                       if (type == DataType::Bool) {
                         for (auto& b : bytes) b &= 1;
                       }
                       return Tensor::copy_bytes(type, {2, 3}, bytes.data(), bytes.size());
                     }();
    InferResult result("m", "1", "id", {{"OUT", t, {}}});
    auto wire = body_bytes(*encode_infer_response(result, 1 << 20).value());
    auto back = decode_infer_response(receive(wire, kRawOutputField));
    REQUIRE(back.ok());
    const Tensor& out = back->output("OUT");
    CHECK(out.dtype() == type);
    CHECK(out.shape() == t.shape());
    CHECK(bytes_of(out) == bytes_of(t));

    auto request = decode_infer_request(receive(
        body_bytes(*encode_infer_request(InferRequest("m").input("IN", t), 1 << 20).value()),
        kRawInputField));
    REQUIRE(request.ok());
    CHECK(bytes_of(request->inputs()[0].tensor) == bytes_of(t));
  }
}

TEST_CASE("typed contents are accepted for every datatype that has them") {
  inference::ModelInferRequest pb;
  pb.set_model_name("m");
  auto add = [&](const char* name, const char* type, std::initializer_list<std::int64_t> shape) {
    auto* in = pb.add_inputs();
    in->set_name(name);
    in->set_datatype(type);
    for (auto d : shape) in->add_shape(d);
    return in->mutable_contents();
  };
  auto* i32 = add("I32", "INT32", {3});
  for (int v : {-1, 2, 3}) i32->add_int_contents(v);
  auto* i8 = add("I8", "INT8", {2});
  for (int v : {-100, 100}) i8->add_int_contents(v);
  auto* i64 = add("I64", "INT64", {2});
  for (auto v : {std::int64_t{1} << 40, std::int64_t{-2}}) i64->add_int64_contents(v);
  auto* u16 = add("U16", "UINT16", {2});
  for (unsigned v : {65535u, 1u}) u16->add_uint_contents(v);
  add("U64", "UINT64", {1})->add_uint64_contents(~0ull);
  auto* f32 = add("F32", "FP32", {1, 2});
  for (float v : {1.5f, -2.f}) f32->add_fp32_contents(v);
  add("F64", "FP64", {1})->add_fp64_contents(3.25);
  auto* b = add("B", "BOOL", {3});
  for (bool v : {true, false, true}) b->add_bool_contents(v);
  auto* s = add("S", "BYTES", {2});
  for (const char* text : {"hi", ""}) s->add_bytes_contents(text);

  auto decoded = decode_infer_request(receive(frame(pb), kRawInputField));
  REQUIRE_MESSAGE(decoded.ok(), (decoded.ok() ? "" : decoded.error().message()));
  auto input = [&](const char* name) { return decoded->find_input(name)->tensor; };
  CHECK(input("I32").as<std::int32_t>().to_vector() == std::vector<std::int32_t>{-1, 2, 3});
  CHECK(input("I8").as<std::int8_t>().to_vector() == std::vector<std::int8_t>{-100, 100});
  CHECK(input("I64").as<std::int64_t>().to_vector() == std::vector<std::int64_t>{1ll << 40, -2});
  CHECK(input("U16").as<std::uint16_t>().to_vector() == std::vector<std::uint16_t>{65535, 1});
  CHECK(input("U64").as<std::uint64_t>()[0] == ~0ull);
  CHECK(input("F32").as<float>().to_vector() == std::vector<float>{1.5f, -2.f});
  CHECK(input("F64").as<double>()[0] == 3.25);
  CHECK(input("B").as<bool>().to_vector() == std::vector<bool>{true, false, true});
  CHECK(input("S").to_strings() == std::vector<std::string>{"hi", ""});
}

TEST_CASE("malformed requests are INVALID_ARGUMENT naming the tensor") {
  auto decode = [](const inference::ModelInferRequest& pb) {
    return decode_infer_request(receive(frame(pb), kRawInputField));
  };
  inference::ModelInferRequest pb;
  pb.set_model_name("m");
  auto* in = pb.add_inputs();
  in->set_name("X");
  in->set_datatype("FP32");
  in->add_shape(4);

  SUBCASE("byte size that does not fit the shape") {
    pb.add_raw_input_contents(std::string(12, '\0'));
    auto r = decode(pb);
    CHECK(r.code() == StatusCode::InvalidArgument);
    CHECK(r.error().message().find("'X'") != std::string::npos);
  }
  SUBCASE("unknown datatype") {
    in->set_datatype("FLOAT");
    pb.add_raw_input_contents(std::string(16, '\0'));
    CHECK(decode(pb).error().message().find("FLOAT") != std::string::npos);
  }
  SUBCASE("negative dimension") {
    in->set_shape(0, -4);
    pb.add_raw_input_contents(std::string(16, '\0'));
    CHECK(decode(pb).code() == StatusCode::InvalidArgument);
  }
  SUBCASE("raw and typed contents together") {
    in->mutable_contents()->add_fp32_contents(1);
    pb.add_raw_input_contents(std::string(16, '\0'));
    auto r = decode(pb);
    CHECK(r.code() == StatusCode::InvalidArgument);
    // Triton's words (src/grpc/infer_handler.cc), which its grpc_explicit_*_content_client
    // examples look for.
    CHECK(r.error().message() ==
          "contents field must not be specified when using raw_input_contents for 'X' for "
          "model 'm'");
  }
  SUBCASE("typed contents for an input in shared memory") {
    in->mutable_contents()->add_fp32_contents(1);
    auto* parameters = in->mutable_parameters();
    (*parameters)["shared_memory_region"].set_string_param("region");
    (*parameters)["shared_memory_byte_size"].set_int64_param(16);
    auto r = decode(pb);
    CHECK(r.code() == StatusCode::InvalidArgument);
    CHECK(r.error().message() ==
          "unexpected 'content' provided when using shared memory for input tensor 'X' for "
          "model 'm'");
  }
  SUBCASE("more raw contents than inputs") {
    pb.add_raw_input_contents(std::string(16, '\0'));
    pb.add_raw_input_contents(std::string(16, '\0'));
    CHECK(decode(pb).code() == StatusCode::InvalidArgument);
  }
  SUBCASE("FP16 in typed contents") {
    in->set_datatype("FP16");
    in->mutable_contents()->add_fp32_contents(1);
    CHECK(decode(pb).error().message().find("raw") != std::string::npos);
  }
  SUBCASE("typed contents with too few elements") {
    in->mutable_contents()->add_fp32_contents(1);
    CHECK(decode(pb).code() == StatusCode::InvalidArgument);
  }
  SUBCASE("typed contents with more elements than the shape: not decoded past it") {
    for (int i = 0; i < 100; ++i) in->mutable_contents()->add_fp32_contents(1);
    CHECK(decode(pb).code() == StatusCode::InvalidArgument);
  }
  SUBCASE("typed contents whose shape declares more than the cap") {
    in->set_datatype("INT64");
    in->set_shape(0, 100000000);  // 800 MB decoded, from a few bytes of shape
    in->mutable_contents()->add_int64_contents(1);
    CHECK(decode(pb).error().message().find("raw contents") != std::string::npos);
  }
  // A 2-byte field that decodes to a tensor object, a dimension, a parameter: bounded counts,
  // so that a message of them cannot decode to many times its size.
  SUBCASE("more tensors than any model has") {
    for (int i = 0; i < 4096; ++i) pb.add_inputs();
    CHECK(decode(pb).error().message().find("4096 tensors") != std::string::npos);
  }
  SUBCASE("more dimensions than any tensor has") {
    for (int i = 0; i < 64; ++i) in->add_shape(1);
    CHECK(decode(pb).code() == StatusCode::InvalidArgument);
  }
  SUBCASE("more parameters than the limit") {
    for (int i = 0; i < 1025; ++i)
      (*pb.mutable_parameters())["p" + std::to_string(i)].set_bool_param(true);
    CHECK(decode(pb).code() == StatusCode::InvalidArgument);
  }
  SUBCASE("a message that is not protobuf at all") {
    std::string junk = std::string("\x00\x00\x00\x00\x04", 5) + "\xff\xff\xff\xff";
    MessageReader reader(kRawInputField, 100);
    auto fed = reader.feed(reinterpret_cast<const std::uint8_t*>(junk.data()), junk.size());
    if (fed.ok() && !reader.messages().empty()) {
      CHECK_FALSE(decode_infer_request(std::move(reader.messages()[0])).ok());
    }
  }
}

TEST_CASE("lying responses are INTERNAL errors, never crashes") {
  inference::ModelInferResponse pb;
  pb.set_model_name("m");
  auto* out = pb.add_outputs();
  out->set_name("Y");
  out->set_datatype("INT32");
  out->add_shape(1000000);
  pb.add_raw_output_contents(std::string(8, '\0'));  // claims a million elements, carries two
  auto r = decode_infer_response(receive(frame(pb), kRawOutputField));
  CHECK(r.code() == StatusCode::Internal);
  CHECK(r.error().message().find("'Y'") != std::string::npos);

  inference::ModelInferResponse strings;
  auto* s = strings.add_outputs();
  s->set_name("S");
  s->set_datatype("BYTES");
  s->add_shape(1);
  strings.add_raw_output_contents(
      std::string("\xff\x00\x00\x00"
                  "ab",
                  6));  // element length lies
  CHECK(decode_infer_response(receive(frame(strings), kRawOutputField)).code() ==
        StatusCode::Internal);
}

namespace {

// A response with output A in shared memory and output B raw; `raw_for_a` adds an empty raw
// entry in A's place (index-aligned senders) or, when not empty, a lying one.
inference::ModelInferResponse mixed_response(bool aligned, const std::string& raw_for_a = {}) {
  inference::ModelInferResponse pb;
  auto* a = pb.add_outputs();
  a->set_name("A");
  a->set_datatype("FP32");
  a->add_shape(4);
  (*a->mutable_parameters())["shared_memory_region"].set_string_param("r");
  (*a->mutable_parameters())["shared_memory_byte_size"].set_int64_param(16);
  auto* b = pb.add_outputs();
  b->set_name("B");
  b->set_datatype("INT8");
  b->add_shape(3);
  if (aligned) pb.add_raw_output_contents(raw_for_a);
  pb.add_raw_output_contents(std::string("\x01\x02\x03", 3));
  return pb;
}

}  // namespace

TEST_CASE("shared memory tensors carry no raw bytes; both raw layouts are read") {
  // Encoding: an input placed in a region sends its header and parameters, no bytes.
  std::vector<float> four{1, 2, 3, 4};
  std::vector<std::int8_t> three{1, 2, 3};
  Parameters where;
  where[kSharedMemoryRegion] = std::string("r");
  where[kSharedMemoryByteSize] = std::int64_t{16};
  InferRequest request = InferRequest("m")
                             .input("A", Tensor::view(four, {4}), where)
                             .input("B", Tensor::view(three, {3}));
  auto body = encode_infer_request(request, 1u << 30);
  REQUIRE(body);
  inference::ModelInferRequest pb;
  std::string wire = body_bytes(**body);
  REQUIRE(pb.ParseFromString(wire.substr(5)));
  REQUIRE(pb.raw_input_contents_size() == 1);  // only B's
  CHECK(pb.raw_input_contents(0) == std::string("\x01\x02\x03", 3));
  CHECK(pb.inputs(0).parameters().at("shared_memory_region").string_param() == "r");

  // Decoding: raw entries only for the tensors not in shared memory, or one per tensor.
  for (bool aligned : {false, true}) {
    CAPTURE(aligned);
    auto r = decode_infer_response(receive(frame(mixed_response(aligned)), kRawOutputField));
    REQUIRE(r);
    CHECK(r->output("A").byte_size() == 0);  // its bytes are in the region
    CHECK(r->find_output("A")->parameters.count("shared_memory_region") == 1);
    CHECK(bytes_of(r->output("B")) == std::string("\x01\x02\x03", 3));
  }
  // Raw bytes for a tensor said to be in shared memory: a lie.
  auto lying = decode_infer_response(
      receive(frame(mixed_response(true, std::string(16, 'x'))), kRawOutputField));
  CHECK(lying.code() == StatusCode::Internal);
}

TEST_CASE("Triton's answer to outputs in shared memory: one empty entry each, no parameters") {
  // As Triton's gRPC response allocator builds it: an output and a raw entry for every output,
  // the entry empty where the output went to the region the request named.
  inference::ModelInferResponse pb;
  for (const char* name : {"A", "B"}) {
    auto* out = pb.add_outputs();
    out->set_name(name);
    out->set_datatype("INT32");
    out->add_shape(2);
  }
  pb.add_raw_output_contents("");
  pb.add_raw_output_contents(std::string("\x01\0\0\0\x02\0\0\0", 8));
  const std::string wire = frame(pb);

  Parameters where;
  where[kSharedMemoryRegion] = std::string("r");
  where[kSharedMemoryByteSize] = std::int64_t{8};
  where[kSharedMemoryOffset] = std::int64_t{64};
  InferRequest request = InferRequest("m").output("A", where).output("B");
  auto placed = outputs_in_shared_memory(request);
  REQUIRE(placed.size() == 1);

  auto r = decode_infer_response(receive(wire, kRawOutputField), &placed);
  REQUIRE(r);
  const NamedTensor* a = r->find_output("A");
  REQUIRE(a);
  CHECK(a->tensor.byte_size() == 0);  // in the region: the request's placement says where
  CHECK(std::get<std::string>(a->parameters.at(kSharedMemoryRegion)) == "r");
  CHECK(std::get<std::int64_t>(a->parameters.at(kSharedMemoryOffset)) == 64);
  CHECK(bytes_of(r->output("B")) == std::string("\x01\0\0\0\x02\0\0\0", 8));

  // Without the request's placement an empty entry is a lie about A's 8 bytes.
  CHECK(decode_infer_response(receive(wire, kRawOutputField)).code() == StatusCode::Internal);
  // A server that ignored the placement and sent A inline is read inline.
  pb.set_raw_output_contents(0, std::string("\x07\0\0\0\x08\0\0\0", 8));
  auto inline_a = decode_infer_response(receive(frame(pb), kRawOutputField), &placed);
  REQUIRE(inline_a);
  CHECK(bytes_of(inline_a->output("A")) == std::string("\x07\0\0\0\x08\0\0\0", 8));
  CHECK(inline_a->find_output("A")->parameters.empty());
}

TEST_CASE(
    "a response places outputs in shared memory as Triton does: an empty entry, no "
    "parameters") {
  Parameters where;
  where[kSharedMemoryRegion] = std::string("r");
  where[kSharedMemoryByteSize] = std::int64_t{8};
  std::vector<std::int32_t> b{1, 2};
  InferResult result(
      "m", "1", "",
      {{"A", Tensor::descriptor(DataType::Int32, {2}), where}, {"B", Tensor::view(b, {2}), {}}});
  auto body = encode_infer_response(result, 1u << 20);
  REQUIRE(body);
  inference::ModelInferResponse pb;
  REQUIRE(pb.ParseFromString(body_bytes(**body).substr(5)));
  REQUIRE(pb.outputs_size() == 2);
  REQUIRE(pb.raw_output_contents_size() == 2);  // Triton's clients index them by output
  CHECK(pb.raw_output_contents(0).empty());
  CHECK(pb.raw_output_contents(1) == std::string("\x01\0\0\0\x02\0\0\0", 8));
  CHECK(pb.outputs(0).parameters().empty());
}
