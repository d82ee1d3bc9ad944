# sonic_library(NAME SOURCES... [ANCHOR] [INTERNAL]): the shared library sonic::NAME
# (libsonic_NAME.so), versioned, built with hidden visibility (SONIC_EXPORT marks its
# interface), with its public headers under include/ (installed with the CMake package). Callers
# add their own dependencies, kept PRIVATE so that they never reach the user's compile or link.
#
# INTERNAL, for the layers only sonic's own libraries link (protocol, net): installed, since
# those libraries need them at run time, and exported as the link dependencies of the others,
# but without headers or a development link name: users do not build against them.
#
# ANCHOR, for transports and backends: they register themselves (a URL scheme, a backend) from a
# static initialiser, and user code calls none of their symbols, so a linker that drops unreferenced libraries (Debian's
# default --as-needed) would drop it. The library defines sonic_NAME_registration_anchor, and a
# tiny object file referencing it, libsonic_NAME_anchor.o, goes in front of every user's link:
#   - CMake consumers get it as a link option of the target (placed before the libraries);
#   - `-lsonic_NAME` finds libsonic_NAME.so, which is then a linker script listing the anchor
#     object, the library itself and sonic::client, the compiled engine behind the public Client
#     (a plain `-lsonic_grpc` then links a program; installed, and in the build tree under lib/).
function(sonic_library name)
  cmake_parse_arguments(L "ANCHOR;INTERNAL" "" "" ${ARGN})
  set(target sonic_${name})
  add_library(${target} SHARED ${L_UNPARSED_ARGUMENTS})
  add_library(sonic::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${name}
    OUTPUT_NAME ${target}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_include_directories(${target} PUBLIC
      $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
    install(DIRECTORY include/sonic DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  # Undefined symbols are errors when the library links, not when a program loads it. Not with
  # sanitizers: clang links their runtimes into programs only, so a library's references to them
  # stay undefined until the program loads it.
  if(NOT SONIC_SANITIZE)
    target_link_options(${target} PRIVATE LINKER:--no-undefined)
  endif()
  sonic_warnings(${target})
  if(L_INTERNAL)
    install(TARGETS ${target} EXPORT sonicTargets
      LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)
    return()
  endif()
  set(lib_dir ${PROJECT_BINARY_DIR}/lib)
  if(NOT L_ANCHOR)
    install(TARGETS ${target} EXPORT sonicTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    sonic_link_into_lib_dir(${target} ${lib_dir})
    return()
  endif()
  install(TARGETS ${target} EXPORT sonicTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_SKIP)

  set(anchor_name lib${target}_anchor)
  set(anchor_source ${CMAKE_CURRENT_BINARY_DIR}/${anchor_name}.cpp)
  file(WRITE ${anchor_source}
    "// Linked into programs that use ${target}: its reference keeps the library, whose\n"
    "// static initialiser registers it, on the link line.\n"
    "extern \"C\" int ${target}_registration_anchor;\n"
    "extern \"C\" {\n"
    "__attribute__((used)) int* ${target}_registration_anchor_ref = &${target}_registration_anchor;\n"
    "}\n")
  add_library(${target}_anchor OBJECT ${anchor_source})
  set_target_properties(${target}_anchor PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_options(${target}_anchor PRIVATE -fno-sanitize=all)  # no runtime needed
  # A fixed name next to the library: the object file, and the linker script that lists it.
  set(anchor_object ${lib_dir}/${anchor_name}.o)
  add_custom_command(OUTPUT ${anchor_object}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${lib_dir}
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_OBJECTS:${target}_anchor> ${anchor_object}
    DEPENDS ${target}_anchor $<TARGET_OBJECTS:${target}_anchor> VERBATIM)
  add_custom_target(${target}_anchor_file DEPENDS ${anchor_object})
  add_dependencies(${target} ${target}_anchor_file)
  set(script ${lib_dir}/lib${target}.so)
  file(GENERATE OUTPUT ${script} CONTENT
    "/* GNU ld script: the anchor object keeps ${target} linked under --as-needed; sonic_client is the Client's engine. */\nINPUT(${anchor_name}.o $<TARGET_SONAME_FILE_NAME:${target}> $<TARGET_SONAME_FILE_NAME:sonic_client>)\n")
  sonic_link_into_lib_dir(${target} ${lib_dir})
  target_link_options(${target} INTERFACE
    $<BUILD_INTERFACE:${anchor_object}>
    $<INSTALL_INTERFACE:$<INSTALL_PREFIX>/${CMAKE_INSTALL_LIBDIR}/${anchor_name}.o>)
  install(FILES ${anchor_object} ${script} DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# The build tree's lib/ holds each library under its soname, for the linker scripts there.
function(sonic_link_into_lib_dir target lib_dir)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E make_directory ${lib_dir}
    COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_FILE:${target}>
            ${lib_dir}/$<TARGET_SONAME_FILE_NAME:${target}>
    VERBATIM)
endfunction()
