# pkg-config files next to the CMake package, one per library: `pkg-config --cflags --libs
# sonic-grpc` gives what `g++ app.cpp` needs. Relocatable: paths are relative to the .pc file.
set(sonic_pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH sonic_pc_to_prefix /${sonic_pc_dir} /)
string(REGEX REPLACE "/$" "" sonic_pc_to_prefix "${sonic_pc_to_prefix}")

# sonic_pkg_config(NAME DESCRIPTION REQUIRES LIBS): writes and installs NAME.pc.
function(sonic_pkg_config name description requires libs)
  set(file ${PROJECT_BINARY_DIR}/pkgconfig/${name}.pc)
  file(WRITE ${file}
    "prefix=\${pcfiledir}/${sonic_pc_to_prefix}\n"
    "includedir=\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}\n"
    "libdir=\${prefix}/${CMAKE_INSTALL_LIBDIR}\n\n"
    "Name: ${name}\n"
    "Description: ${description}\n"
    "Version: ${PROJECT_VERSION}\n")
  if(requires)
    file(APPEND ${file} "Requires: ${requires}\n")
  endif()
  file(APPEND ${file} "Cflags: -I\${includedir}\nLibs: ${libs}\n")
  install(FILES ${file} DESTINATION ${sonic_pc_dir})
endfunction()

sonic_pkg_config(sonic "sonic's API (tensors, requests, Client) and the client engine behind it" ""
  "-L\${libdir} -lsonic_client -pthread")
sonic_pkg_config(sonic-executor "sonic's CPU executor (a client's fallback, a server's engine)" sonic
  "-L\${libdir} -lsonic_executor")
if(TARGET sonic_grpc)
  sonic_pkg_config(sonic-grpc "sonic's grpc:// transport" sonic "-L\${libdir} -lsonic_grpc")
endif()
if(TARGET sonic_shm)
  sonic_pkg_config(sonic-shm "sonic's grpc+shm:// transport" sonic-grpc "-L\${libdir} -lsonic_shm")
endif()
if(TARGET sonic_tcp)
  sonic_pkg_config(sonic-tcp "sonic's tcp:// and tcp+zstd:// transports" sonic
    "-L\${libdir} -lsonic_tcp")
endif()
if(TARGET sonic_http)
  sonic_pkg_config(sonic-http "sonic's http:// and https:// transports" sonic
    "-L\${libdir} -lsonic_http")
endif()
if(TARGET sonic_c)
  sonic_pkg_config(sonic-c "sonic's C API (sonic.h)" "" "-L\${libdir} -lsonic_c")
endif()
if(TARGET sonic_server)
  sonic_pkg_config(sonic-server "sonic's inference server library" sonic-executor
    "-L\${libdir} -lsonic_server")
endif()
if(TARGET sonic_repository)
  sonic_pkg_config(sonic-repository "Triton model repositories for sonic's server and fallback"
    sonic-executor "-L\${libdir} -lsonic_repository")
endif()
if(TARGET sonic_onnx)
  sonic_pkg_config(sonic-onnx "sonic's ONNX backend (ONNX Runtime, loaded at run time)" sonic-repository
    "-L\${libdir} -lsonic_onnx")
endif()
if(TARGET sonic_torch)
  sonic_pkg_config(sonic-torch "sonic's TorchScript backend (libtorch)" sonic-repository
    "-L\${libdir} -lsonic_torch")
endif()
