#!/usr/bin/env bash
# Builds NVIDIA Triton's C++ client libraries (libgrpcclient, libhttpclient) and their C++
# examples from source on Debian 12 with Debian's packages only, no network past apt:
#
#   scripts/triton-cpp-examples-build.sh CLIENT_GIT COMMON_GIT OUT
#
# then scripts/triton-cpp-examples.sh BUILD OUT/build/examples runs them against sonic-server.
#
# CLIENT_GIT, COMMON_GIT: git directories of triton-inference-server/client and /common (bare
# mirrors do); OUT: a new folder (sources, shims and build; the examples land in OUT/build/examples).
# Needs: apt-get install cmake ninja-build g++ libgrpc++-dev protobuf-compiler-grpc
#   libprotobuf-dev libcurl4-openssl-dev rapidjson-dev googletest libopencv-core-dev
#   libopencv-imgproc-dev libopencv-imgcodecs-dev libopencv-highgui-dev
set -eu
client_git=$1 common_git=$2 out=$(realpath -m "$3")
mkdir -p "$out/client" "$out/common" "$out/shim"
git -C "$client_git" archive HEAD | tar x -C "$out/client"
git -C "$common_git" archive HEAD | tar x -C "$out/common"

# 1. Both repositories ask for CMake 3.31.8; Debian 12 has 3.25.1, which builds them.
for f in client/src/c++/CMakeLists.txt client/src/c++/library/CMakeLists.txt \
         client/src/c++/examples/CMakeLists.txt common/CMakeLists.txt \
         common/protobuf/CMakeLists.txt common/src/test/CMakeLists.txt \
         common/src/test/triton_json/CMakeLists.txt common/src/test/logging/CMakeLists.txt; do
  sed -i -E 's/cmake_minimum_required ?\(VERSION 3\.31\.8\)/cmake_minimum_required(VERSION 3.25)/' \
    "$out/$f"
done

# 2. Debian's libprotobuf-dev has no CMake package config; Triton asks for
#    find_package(Protobuf CONFIG). Answer with CMake's FindProtobuf module.
cat >"$out/shim/protobuf-config.cmake" <<'EOF'
find_package(Protobuf MODULE REQUIRED)
set(protobuf_FOUND TRUE)
EOF
cat >"$out/shim/protobuf-config-version.cmake" <<'EOF'
set(PACKAGE_VERSION "3.21.12")
set(PACKAGE_VERSION_COMPATIBLE TRUE)
EOF
# 3. Debian's OpenCVConfig.cmake comes only with libopencv-dev (every module, 67 packages);
#    image_client uses core, imgproc and imgcodecs.
cat >"$out/shim/OpenCVConfig.cmake" <<'EOF'
set(OpenCV_FOUND TRUE)
set(OpenCV_VERSION 4.6.0)
set(OpenCV_INCLUDE_DIRS /usr/include/opencv4)
set(OpenCV_LIBS opencv_core opencv_imgproc opencv_imgcodecs)
EOF

# 4. common/src/test is added unconditionally and fetches googletest: Debian's source of it.
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -G Ninja -S "$out/client/src/c++" -B "$out/build" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DTRITON_ENABLE_CC_GRPC=ON -DTRITON_ENABLE_CC_HTTP=ON \
  -DTRITON_ENABLE_EXAMPLES=ON -DTRITON_ENABLE_GPU=OFF -DTRITON_ENABLE_TESTS=OFF \
  -DTRITON_REPO_ORGANIZATION=https://github.com/triton-inference-server \
  -DFETCHCONTENT_FULLY_DISCONNECTED=ON \
  -DFETCHCONTENT_SOURCE_DIR_REPO-COMMON="$out/common" \
  -DFETCHCONTENT_SOURCE_DIR_GOOGLETEST=/usr/src/googletest \
  -DProtobuf_DIR="$out/shim" -DOpenCV_DIR="$out/shim" -DPython_EXECUTABLE=/usr/bin/python3

# 5. The shared libraries link with -Wl,--version-script=libXclient.ldscript, a path relative to
#    the link's folder: build/library with Makefiles, build/ with Ninja. Put a copy there too.
cp "$out/build/library/libgrpcclient.ldscript" "$out/build/library/libhttpclient.ldscript" \
  "$out/build/"

# Only the libraries and examples (the default target also builds common's tests and gtest).
targets=(grpcclient httpclient image_client ensemble_image_client reuse_infer_objects_client)
for f in "$out"/client/src/c++/examples/simple_*.cc; do
  case $f in *cudashm*) ;; *) targets+=("$(basename "$f" .cc)") ;; esac
done
cmake --build "$out/build" -j"${JOBS:-2}" --target "${targets[@]}"
