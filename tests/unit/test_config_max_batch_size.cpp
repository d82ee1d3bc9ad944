// The client reads a model's max_batch_size from its configuration as the server answers it
// (ModelConfig in protobuf's JSON mapping) to size merged batches and chunks. Only the
// top-level field counts: the same words in a name, a parameter or a nested message do not.
#include <doctest/doctest.h>

#include <optional>

#include "client/model_config_json.hpp"

using sonic::detail::config_max_batch_size;

TEST_CASE("max_batch_size is read from the configuration's own field") {
  CHECK(config_max_batch_size(R"({"name":"m","max_batch_size":8})") == 8);
  CHECK(config_max_batch_size(R"({"name":"m","maxBatchSize":4})") == 4);  // lowerCamelCase
  CHECK(config_max_batch_size(R"({ "max_batch_size" : 16 , "input": []})") == 16);
  CHECK(config_max_batch_size(R"({"max_batch_size":"32"})") == 32);  // proto3 JSON's quoted int
  CHECK(config_max_batch_size(R"({"name":"m"})") == 0);              // proto3 leaves out a zero
}

TEST_CASE("the same words elsewhere in the configuration are not its max_batch_size") {
  CHECK(config_max_batch_size(R"({"name":"max_batch_size","max_batch_size":8})") == 8);
  CHECK(config_max_batch_size(
            R"({"parameters":{"max_batch_size":{"string_value":"2"}},"max_batch_size":16})") == 16);
  CHECK(config_max_batch_size(R"({"name":"a\"max_batch_size\":3","max_batch_size":5})") == 5);
  CHECK(config_max_batch_size(
            R"({"sequence_batching":{"max_batch_size":7},"input":[{"name":"maxBatchSize"}]})") ==
        0);
}

TEST_CASE("a configuration that cannot be read gives no max_batch_size") {
  CHECK(config_max_batch_size("") == std::nullopt);
  CHECK(config_max_batch_size("not json") == std::nullopt);
  CHECK(config_max_batch_size(R"({"max_batch_size":)") == std::nullopt);
  CHECK(config_max_batch_size(R"({"max_batch_size":-1})") == std::nullopt);
  CHECK(config_max_batch_size(R"({"max_batch_size":99999999999})") == std::nullopt);
  CHECK(config_max_batch_size(R"({"name":"unterminated)") == std::nullopt);
}
