// Test support: the sonic::Error a call is expected to throw.
#pragma once

#include <doctest/doctest.h>

#include <sonic/error.hpp>

namespace sonic::test {

/// Runs `call`, expecting a sonic::Error; returns it (the test fails when nothing is thrown).
template <typename F>
Error expect_error(F&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e;
  }
  FAIL("the call succeeded but an error was expected");
  return Error(StatusCode::Ok, "");
}

}  // namespace sonic::test
