# sonic_warnings(target): the project's warning set, on every target it compiles.
function(sonic_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual)
  if(SONIC_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# sonic_tsan_asio(target): GCC warns (-Wtsan) in every translation unit that includes asio.hpp
# under ThreadSanitizer, about Asio's std::atomic_thread_fence, which TSan does not model.
function(sonic_tsan_asio target)
  if(SONIC_SANITIZE MATCHES "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -Wno-tsan)
  endif()
endfunction()
