# cmake -P script: misuse.cpp compiles as written, and fails to compile for each MISUSE case
# with a message that names the mistake.
file(MAKE_DIRECTORY ${WORK_DIR})
set(flags -std=c++17 -Wall -Wextra -Werror -I${INCLUDE_DIR} -fsyntax-only ${SOURCE})
execute_process(COMMAND ${COMPILER} ${flags} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "misuse.cpp must compile without MISUSE:\n${err}")
endif()
foreach(misuse 1 2 3)
  execute_process(COMMAND ${COMPILER} ${flags} -DMISUSE=${misuse} RESULT_VARIABLE rc
                  ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "misuse.cpp compiled with MISUSE=${misuse}: the mistake went unnoticed")
  endif()
  if(NOT err MATCHES "temporary")
    message(FATAL_ERROR "MISUSE=${misuse} failed without naming the mistake:\n${err}")
  endif()
endforeach()
message(STATUS "every misuse of misuse.cpp is a compile error")
