// The client's metadata cache: one fetcher at a time, answers kept, failures not.
#include "client/metadata_cache.hpp"

#include <doctest/doctest.h>

using sonic::Error;
using sonic::ModelMetadata;
using sonic::ModelRef;
using sonic::StatusCode;
using sonic::detail::MetadataCache;

namespace {

ModelMetadata metadata_of(const std::string& name) {
  ModelMetadata metadata;
  metadata.name = name;
  return metadata;
}

}  // namespace

TEST_CASE("while a model's metadata is unknown, one caller fetches it and the others go on") {
  MetadataCache cache;
  const ModelRef model{"tagger", ""};
  auto first = cache.lookup(model);
  CHECK(first.fetch);
  CHECK(first.known == nullptr);
  auto second = cache.lookup(model);
  CHECK_FALSE(second.fetch);
  CHECK(second.known == nullptr);
  CHECK(cache.lookup(ModelRef{"tagger", "2"}).fetch);  // another version is another model
}

TEST_CASE("fetched metadata is kept and found without a fetch") {
  MetadataCache cache;
  const ModelRef model{"tagger", ""};
  REQUIRE(cache.lookup(model).fetch);
  auto kept = cache.remember(model, metadata_of("tagger"));
  REQUIRE(kept.ok());
  auto found = cache.lookup(model);
  CHECK_FALSE(found.fetch);
  REQUIRE(found.known != nullptr);
  CHECK(found.known->name == "tagger");
  CHECK(found.known == *kept);
}

TEST_CASE("a failed fetch is not kept: the next lookup fetches again") {
  MetadataCache cache;
  const ModelRef model{"tagger", ""};
  REQUIRE(cache.lookup(model).fetch);
  auto failed = cache.remember(model, Error(StatusCode::Unavailable, "server down"));
  CHECK(failed.code() == StatusCode::Unavailable);
  CHECK(cache.lookup(model).fetch);
}

TEST_CASE("a fetch that could not start is forgotten: the next lookup fetches") {
  MetadataCache cache;
  const ModelRef model{"tagger", ""};
  REQUIRE(cache.lookup(model).fetch);
  CHECK_FALSE(cache.lookup(model).fetch);
  cache.forget(model);
  CHECK(cache.lookup(model).fetch);
}
