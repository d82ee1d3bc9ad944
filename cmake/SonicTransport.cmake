# sonic_transport_library(NAME SOURCES...): the transport NAME as the shared library
# sonic::NAME (libsonic_NAME.so), with its public headers under include/ and its private ones
# under src/, installed with the package. Callers add their own dependencies, kept private so
# that they never reach the user's compile or link.
#
# A transport registers its URL scheme from a static initialiser, and user code calls none of
# its symbols, so the linker must be told to keep it: users get an undefined reference to its
# anchor (sonic_NAME_transport_anchor), and --no-as-needed because Debian's toolchain drops
# unreferenced shared libraries.
function(sonic_transport_library name)
  set(target sonic_${name})
  add_library(${target} SHARED ${ARGN})
  add_library(sonic::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME ${target}
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE src)
  target_link_options(${target} INTERFACE
    "LINKER:--no-as-needed" "LINKER:-u,${target}_transport_anchor")
  sonic_warnings(${target})
  install(TARGETS ${target} EXPORT sonicTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY include/sonic DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
