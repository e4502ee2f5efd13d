// The message of the InputError a call throws, for tests of bad input.
#pragma once

#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "profiler/base/errors.h"

namespace memprof {

// Fails the test when `call` accepts its input.
inline std::string InputErrorOf(const std::function<void()>& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

}  // namespace memprof
