// Tests of the .npy reader and writer used by sonic-infer (examples/infer/npy.hpp).
// Over 500 lines: one case per dtype, version and malformation of the format.
#include "npy.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

using sonic::DataType;
using sonic::Shape;
using sonic::StatusCode;
using sonic::Tensor;

namespace {

using Bytes = std::vector<std::uint8_t>;

// ---- Files written by numpy 1.24 (np.save, or numpy.lib.format.write_array for versions 2.0
// ---- and 3.0), pasted byte for byte.

/// np.arange(6, dtype='<i4').reshape(2, 3)
const std::uint8_t kNumpyInt32[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x69, 0x34, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32, 0x2c, 0x20,
    0x33, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00,
    0x04, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,
};
/// np.array([1.5, -2.25, 3e38], dtype='<f4')
const std::uint8_t kNumpyFloat32[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x34, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x33, 0x2c, 0x29,
    0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x10, 0xc0, 0xe6, 0xb1, 0x61, 0x7f,
};
/// np.array([[True, False], [False, True]])
const std::uint8_t kNumpyBool[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73,
    0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x7c, 0x62, 0x31, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f,
    0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46,
    0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20,
    0x28, 0x32, 0x2c, 0x20, 0x32, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x01, 0x00, 0x00, 0x01,
};
/// np.array([1, -2.5, 65504], dtype='<f2')
const std::uint8_t kNumpyFloat16[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73,
    0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x32, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f,
    0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46,
    0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20,
    0x28, 0x33, 0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x00, 0x3c, 0x00, 0xc1, 0xff, 0x7b,
};
/// np.float64(-0.125) (a 0-d array)
const std::uint8_t kNumpyScalar[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x66, 0x38, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x29, 0x2c, 0x20,
    0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xbf,
};
/// np.array([b'ab', b'', b'xyz'])
const std::uint8_t kNumpyBytes[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x7c, 0x53, 0x33, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x33, 0x2c, 0x29,
    0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0x61, 0x62, 0x00, 0x00, 0x00, 0x00, 0x78, 0x79, 0x7a,
};
/// np.zeros((0, 3), dtype='<u2')
const std::uint8_t kNumpyEmpty[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x01, 0x00, 0x76, 0x00, 0x7b, 0x27, 0x64, 0x65, 0x73, 0x63,
    0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x75, 0x32, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f, 0x72, 0x74,
    0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61, 0x6c, 0x73,
    0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x30, 0x2c, 0x20,
    0x33, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
};
/// np.array([-1, 2**62], dtype='<i8'), format version 2.0
const std::uint8_t kNumpyInt64V2[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x02, 0x00, 0x74, 0x00, 0x00, 0x00, 0x7b, 0x27, 0x64, 0x65,
    0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x3c, 0x69, 0x38, 0x27, 0x2c, 0x20, 0x27, 0x66, 0x6f,
    0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a, 0x20, 0x46, 0x61,
    0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27, 0x3a, 0x20, 0x28, 0x32,
    0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40,
};
/// np.array([0, 7, 255], dtype='|u1'), format version 3.0
const std::uint8_t kNumpyUInt8V3[] = {
    0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 0x03, 0x00, 0x74, 0x00, 0x00, 0x00, 0x7b, 0x27, 0x64,
    0x65, 0x73, 0x63, 0x72, 0x27, 0x3a, 0x20, 0x27, 0x7c, 0x75, 0x31, 0x27, 0x2c, 0x20, 0x27,
    0x66, 0x6f, 0x72, 0x74, 0x72, 0x61, 0x6e, 0x5f, 0x6f, 0x72, 0x64, 0x65, 0x72, 0x27, 0x3a,
    0x20, 0x46, 0x61, 0x6c, 0x73, 0x65, 0x2c, 0x20, 0x27, 0x73, 0x68, 0x61, 0x70, 0x65, 0x27,
    0x3a, 0x20, 0x28, 0x33, 0x2c, 0x29, 0x2c, 0x20, 0x7d, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20,
    0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x20, 0x0a, 0x00, 0x07, 0xff,
};

template <std::size_t N>
Bytes bytes_of(const std::uint8_t (&array)[N]) {
  return Bytes(array, array + N);
}

/// The little-endian bytes of some values (the test hosts are little-endian, as sonic assumes).
template <typename T>
Bytes le_bytes(std::initializer_list<T> values) {
  Bytes out(values.size() * sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

/// A .npy file with a header as given: no padding, no newline, exactly `header` as the text.
Bytes raw_npy(int major, int minor, const std::string& header, const Bytes& data) {
  Bytes out = {0x93,
               'N',
               'U',
               'M',
               'P',
               'Y',
               static_cast<std::uint8_t>(major),
               static_cast<std::uint8_t>(minor)};
  std::size_t len_bytes = major == 1 ? 2 : 4;
  for (std::size_t i = 0; i < len_bytes; ++i) {
    out.push_back(static_cast<std::uint8_t>(header.size() >> (8 * i)));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// A version 1.0 .npy file with this dict text, padded as numpy pads it.
Bytes npy_file(const std::string& dict, const Bytes& data) {
  std::string header = dict;
  std::size_t total = 10 + header.size() + 1;
  header.append((total + 63) / 64 * 64 - total, ' ');
  header += '\n';
  return raw_npy(1, 0, header, data);
}

/// A dict as numpy writes it.
std::string dict(const std::string& descr, const std::string& shape, const char* order = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
}

/// How parse_npy failed on some bytes: thrown is false when it did not.
struct Rejection {
  bool thrown = false;
  StatusCode code = StatusCode::Ok;
  std::string message;
};

Rejection rejection(const Bytes& file) {
  try {
    (void)sonic::tools::parse_npy(file.data(), file.size());
  } catch (const sonic::Error& e) {
    return {true, e.code(), e.message()};
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// parse_npy must throw sonic::Error(InvalidArgument) for `file`, with `needle` in its message.
#define CHECK_REJECTED(file, needle)                                                          \
  do {                                                                                        \
    const Bytes& file_ = (file);                                                              \
    CHECK_THROWS_AS((void)sonic::tools::parse_npy(file_.data(), file_.size()), sonic::Error); \
    Rejection r_ = rejection(file_);                                                          \
    CHECK(r_.code == StatusCode::InvalidArgument);                                            \
    CHECK_MESSAGE(contains(r_.message, needle), "message: " << r_.message);                   \
  } while (0)

Tensor parse(const Bytes& file) { return sonic::tools::parse_npy(file.data(), file.size()); }

/// A directory of its own under the system's temporary directory, removed with its files.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "sonic_npy_XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    REQUIRE(::mkdtemp(buffer.data()) != nullptr);
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

/// The bytes of a tensor, for exact comparisons (NaN payloads and signed zeros included).
Bytes tensor_bytes(const Tensor& t) { return Bytes(t.data(), t.data() + t.byte_size()); }

/// Writes values of type T with write_npy, reads them back with read_npy, and compares.
template <typename T>
void check_round_trip(const TempDir& dir, std::vector<T> values, const Shape& shape) {
  DataType type = sonic::datatype_of<T>;
  CAPTURE(sonic::to_string(type));
  CAPTURE(sonic::to_string(shape));
  Tensor original = Tensor::from_vector(values, shape);
  std::string path = dir.file(std::string(sonic::to_string(type)) + ".npy");
  sonic::tools::write_npy(path, original);
  Tensor back = sonic::tools::read_npy(path);
  CHECK(back.dtype() == type);
  CHECK(back.shape() == shape);
  CHECK(tensor_bytes(back) == tensor_bytes(original));
  if constexpr (!std::is_same_v<T, sonic::Float16>) {
    CHECK(back.as<T>().to_vector() == values);
  } else {
    auto view = back.as<sonic::Float16>();
    REQUIRE(view.size() == values.size());
    for (std::size_t i = 0; i < values.size(); ++i) CHECK(view[i].bits == values[i].bits);
  }
  // The in-memory writer and reader agree with the file ones.
  Bytes encoded = sonic::tools::npy_bytes(original);
  CHECK(tensor_bytes(parse(encoded)) == tensor_bytes(original));
  CHECK(encoded.size() % 64 == original.byte_size() % 64);  // data starts at a multiple of 64
}

}  // namespace

TEST_CASE("files written by numpy parse with their datatype, shape and values") {
  SUBCASE("int32 2x3") {
    Tensor t = parse(bytes_of(kNumpyInt32));
    CHECK(t.dtype() == DataType::Int32);
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.as<std::int32_t>().to_vector() == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5});
    auto header = sonic::tools::parse_npy_header(kNumpyInt32, sizeof kNumpyInt32);
    CHECK(header.descr == "<i4");
    CHECK(header.data_offset == 128);
    CHECK(header.data_bytes == 24);
    CHECK(header.major_version == 1);
  }
  SUBCASE("float32") {
    Tensor t = parse(bytes_of(kNumpyFloat32));
    CHECK(t.dtype() == DataType::Fp32);
    CHECK(t.shape() == Shape{3});
    CHECK(t.as<float>().to_vector() == std::vector<float>{1.5f, -2.25f, 3e38f});
  }
  SUBCASE("bool 2x2") {
    Tensor t = parse(bytes_of(kNumpyBool));
    CHECK(t.dtype() == DataType::Bool);
    CHECK(t.shape() == Shape{2, 2});
    CHECK(tensor_bytes(t) == Bytes{1, 0, 0, 1});
  }
  SUBCASE("float16") {
    Tensor t = parse(bytes_of(kNumpyFloat16));
    CHECK(t.dtype() == DataType::Fp16);
    auto v = t.as<sonic::Float16>();
    REQUIRE(v.size() == 3);
    CHECK(v[0].bits == 0x3c00);  // 1
    CHECK(v[1].bits == 0xc100);  // -2.5
    CHECK(v[2].bits == 0x7bff);  // 65504, the largest half
  }
  SUBCASE("a 0-d array is a scalar of shape []") {
    Tensor t = parse(bytes_of(kNumpyScalar));
    CHECK(t.dtype() == DataType::Fp64);
    CHECK(t.shape().empty());
    CHECK(t.as<double>().to_vector() == std::vector<double>{-0.125});
  }
  SUBCASE("byte strings become BYTES") {
    Tensor t = parse(bytes_of(kNumpyBytes));
    CHECK(t.dtype() == DataType::Bytes);
    CHECK(t.shape() == Shape{3});
    CHECK(t.to_strings() == std::vector<std::string>{"ab", "", "xyz"});
  }
  SUBCASE("an empty array") {
    Tensor t = parse(bytes_of(kNumpyEmpty));
    CHECK(t.dtype() == DataType::UInt16);
    CHECK(t.shape() == Shape{0, 3});
    CHECK(t.byte_size() == 0);
  }
  SUBCASE("format version 2.0") {
    Tensor t = parse(bytes_of(kNumpyInt64V2));
    CHECK(t.dtype() == DataType::Int64);
    CHECK(t.as<std::int64_t>().to_vector() == std::vector<std::int64_t>{-1, std::int64_t{1} << 62});
    CHECK(sonic::tools::parse_npy_header(kNumpyInt64V2, sizeof kNumpyInt64V2).major_version == 2);
  }
  SUBCASE("format version 3.0") {
    Tensor t = parse(bytes_of(kNumpyUInt8V3));
    CHECK(t.dtype() == DataType::UInt8);
    CHECK(t.as<std::uint8_t>().to_vector() == std::vector<std::uint8_t>{0, 7, 255});
  }
}

TEST_CASE("the writer produces the same bytes as numpy") {
  std::vector<std::int32_t> ints = {0, 1, 2, 3, 4, 5};
  CHECK(sonic::tools::npy_bytes(Tensor::view(ints, {2, 3})) == bytes_of(kNumpyInt32));
  std::vector<float> floats = {1.5f, -2.25f, 3e38f};
  CHECK(sonic::tools::npy_bytes(Tensor::view(floats, {3})) == bytes_of(kNumpyFloat32));
  Bytes bools = {1, 0, 0, 1};
  CHECK(sonic::tools::npy_bytes(Tensor::view_bytes(DataType::Bool, {2, 2}, bools.data(),
                                                   bools.size())) == bytes_of(kNumpyBool));
  std::vector<double> scalar = {-0.125};
  CHECK(sonic::tools::npy_bytes(Tensor::view(scalar, {})) == bytes_of(kNumpyScalar));
  std::vector<std::uint16_t> none;
  CHECK(sonic::tools::npy_bytes(Tensor::view(none, {0, 3})) == bytes_of(kNumpyEmpty));
  std::vector<std::string> strings = {"ab", "", "xyz"};
  Bytes encoded = sonic::detail::encode_bytes_elements(strings);
  CHECK(sonic::tools::npy_bytes(Tensor::view_bytes(DataType::Bytes, {3}, encoded.data(),
                                                   encoded.size())) == bytes_of(kNumpyBytes));
}

TEST_CASE("every supported datatype round-trips through a file") {
  TempDir dir;
  check_round_trip<std::uint8_t>(dir, {0, 1, 127, 255}, {2, 2});
  check_round_trip<std::uint16_t>(dir, {0, 1, 65535}, {3});
  check_round_trip<std::uint32_t>(dir, {0, 7, 4294967295u}, {1, 3});
  check_round_trip<std::uint64_t>(dir, {0, 18446744073709551615ull}, {2, 1});
  check_round_trip<std::int8_t>(dir, {-128, -1, 0, 127}, {4});
  check_round_trip<std::int16_t>(dir, {-32768, 0, 32767}, {3});
  check_round_trip<std::int32_t>(dir, {std::numeric_limits<std::int32_t>::min(), -1, 0, 42},
                                 {2, 2});
  check_round_trip<std::int64_t>(
      dir, {std::numeric_limits<std::int64_t>::min(), 0, std::numeric_limits<std::int64_t>::max()},
      {1, 1, 3});
  check_round_trip<sonic::Float16>(dir, {{0x3c00}, {0x8000}, {0x7bff}, {0x0001}}, {4});
  check_round_trip<float>(dir, {0.5f, -1e-30f, 3.4e38f, 0.0f, 1.0f, 2.0f}, {2, 3});
  check_round_trip<double>(dir, {0.1, -2.5e300, 4.9e-324}, {3});
  check_round_trip<double>(dir, {7.25}, {});    // 0-d
  check_round_trip<float>(dir, {}, {4, 0, 2});  // no elements
  check_round_trip<std::int32_t>(dir, std::vector<std::int32_t>(5000, -3), {50, 100});

  SUBCASE("BOOL") {
    Bytes bools = {1, 0, 1, 1, 0, 0};
    Tensor original = Tensor::view_bytes(DataType::Bool, {3, 2}, bools.data(), bools.size());
    sonic::tools::write_npy(dir.file("bool.npy"), original);
    Tensor back = sonic::tools::read_npy(dir.file("bool.npy"));
    CHECK(back.dtype() == DataType::Bool);
    CHECK(back.shape() == Shape{3, 2});
    CHECK(tensor_bytes(back) == bools);
  }
  SUBCASE("BYTES as |S<n>: inner NULs survive, trailing NULs do not (as in numpy)") {
    std::vector<std::string> strings = {"hello", "", std::string("a\0b", 3), "wide string",
                                        std::string("z\0", 2)};
    Bytes encoded = sonic::detail::encode_bytes_elements(strings);
    Tensor original = Tensor::view_bytes(DataType::Bytes, {5}, encoded.data(), encoded.size());
    sonic::tools::write_npy(dir.file("bytes.npy"), original);
    CHECK(sonic::tools::parse_npy_header(sonic::tools::npy_bytes(original).data(),
                                         sonic::tools::npy_bytes(original).size())
              .descr == "|S11");
    Tensor back = sonic::tools::read_npy(dir.file("bytes.npy"));
    CHECK(back.dtype() == DataType::Bytes);
    CHECK(back.shape() == Shape{5});
    strings.back() = "z";
    CHECK(back.to_strings() == strings);
  }
  SUBCASE("BF16 has no numpy type and is refused") {
    std::vector<sonic::BFloat16> values = {sonic::BFloat16::from_float(1.0f)};
    Tensor t = Tensor::view(values, {1});
    CHECK_THROWS_AS(sonic::tools::write_npy(dir.file("bf16.npy"), t), sonic::Error);
    try {
      sonic::tools::write_npy(dir.file("bf16.npy"), t);
    } catch (const sonic::Error& e) {
      CHECK(e.code() == StatusCode::InvalidArgument);
      CHECK(contains(e.message(), "bfloat16"));
    }
  }
  SUBCASE("a tensor whose bytes do not fit its shape is refused") {
    std::vector<float> three = {1, 2, 3};
    CHECK_THROWS_AS(sonic::tools::write_npy(dir.file("bad.npy"), Tensor::view(three, {2, 2})),
                    sonic::Error);
  }
}

TEST_CASE("the reader accepts headers numpy would, and unaligned data") {
  // A header without padding puts the int32 data at an odd offset: the reader copies it so
  // that typed access still works.
  Bytes file = raw_npy(1, 0, "{'shape':(2,),'fortran_order':False,'descr':'<i4'}\n",
                       le_bytes<std::int32_t>({-7, 9}));
  REQUIRE(sonic::tools::parse_npy_header(file.data(), file.size()).data_offset % 4 != 0);
  CHECK(parse(file).as<std::int32_t>().to_vector() == std::vector<std::int32_t>{-7, 9});
  TempDir dir;
  write_file(dir.file("odd.npy"), file);
  CHECK(sonic::tools::read_npy(dir.file("odd.npy")).as<std::int32_t>().to_vector() ==
        std::vector<std::int32_t>{-7, 9});
  // Double quotes, extra blanks and one-byte types with any byte order are fine too.
  CHECK(parse(npy_file("{ \"descr\" : \"<u1\" , \"fortran_order\" : False , \"shape\" : ( 2 , ) }",
                       {3, 4}))
            .shape() == Shape{2});
  CHECK(parse(npy_file(dict("|i1", "(1,)"), {0xff})).as<std::int8_t>()[0] == -1);
  CHECK(parse(npy_file(dict(">u1", "(1,)"), {5})).dtype() == DataType::UInt8);
  // Version 2.0 and 3.0 headers, written by hand.
  CHECK(parse(raw_npy(2, 0, dict("<u2", "(1,)") + "\n", {1, 2})).as<std::uint16_t>()[0] == 0x0201);
  CHECK(parse(raw_npy(3, 0, dict("<u2", "(1,)") + "\n", {1, 2})).as<std::uint16_t>()[0] == 0x0201);
}

TEST_CASE("malformed preambles are rejected") {
  CHECK_REJECTED(Bytes{}, "bad magic");
  CHECK_REJECTED((Bytes{'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0, 0, 0}), "bad magic");  // an .npz
  CHECK_REJECTED((Bytes{0x93, 'N', 'U', 'M', 'P', 'X', 1, 0, 0, 0}), "bad magic");
  CHECK_REJECTED((Bytes{0x93, 'N', 'U', 'M'}), "truncated");
  CHECK_REJECTED((Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1}), "truncated");
  CHECK_REJECTED((Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0x76}), "truncated");
  CHECK_REJECTED((Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0x76, 0, 0}), "truncated");
  CHECK_REJECTED(raw_npy(4, 0, dict("<f4", "(0,)"), {}), "unsupported format version 4.0");
  CHECK_REJECTED(raw_npy(1, 1, dict("<f4", "(0,)"), {}), "unsupported format version 1.1");
  CHECK_REJECTED(raw_npy(0, 0, dict("<f4", "(0,)"), {}), "unsupported format version 0.0");
}

TEST_CASE("headers that are too long or cut short are rejected without reading past the end") {
  // The header length promises more than the file holds.
  Bytes file = npy_file(dict("<f4", "(1,)"), le_bytes<float>({1}));
  file.resize(60);
  CHECK_REJECTED(file, "truncated");
  CHECK_REJECTED((Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 0xc8, 0x00, '{'}), "header needs 200");
  // A version 2 header length of 4 GiB - 1, and one just over the limit.
  CHECK_REJECTED((Bytes{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0xff, 0xff, 0xff, 0xff, '{'}),
                 "too long");
  CHECK_REJECTED(raw_npy(2, 0, std::string(sonic::tools::kNpyMaxHeaderBytes + 1, ' '), {}),
                 "too long");
  // Every prefix of a good file is an error, never a crash or an over-read.
  for (const Bytes& good : {bytes_of(kNumpyInt32), bytes_of(kNumpyBytes), bytes_of(kNumpyInt64V2),
                            bytes_of(kNumpyScalar)}) {
    for (std::size_t n = 0; n < good.size(); ++n) {
      CAPTURE(n);
      Rejection r = rejection(Bytes(good.begin(), good.begin() + static_cast<long>(n)));
      CHECK(r.thrown);
      CHECK(r.code == StatusCode::InvalidArgument);
    }
  }
}

TEST_CASE("malformed header dicts are rejected with the reason") {
  Bytes four = le_bytes<float>({1});
  CHECK_REJECTED(npy_file("['descr', '<f4']", four), "does not start with '{'");
  CHECK_REJECTED(npy_file("{'descr': '<f4', 'fortran_order': False}", four), "no 'shape'");
  CHECK_REJECTED(npy_file("{'fortran_order': False, 'shape': (1,)}", four), "no 'descr'");
  CHECK_REJECTED(npy_file("{'descr': '<f4', 'shape': (1,)}", four), "no 'fortran_order'");
  CHECK_REJECTED(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", four),
                 "unexpected key 'x'");
  CHECK_REJECTED(
      npy_file("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", four),
      "'descr' twice");
  CHECK_REJECTED(
      npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (1,)}", four),
      "'shape' twice");
  CHECK_REJECTED(npy_file("{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", four),
                 "expected ',' or '}'");
  CHECK_REJECTED(npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)", four),
                 "expected ',' or '}'");
  CHECK_REJECTED(npy_file(dict("<f4", "(1,)") + " x", four), "after the header dict");
  CHECK_REJECTED(npy_file("{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", four),
                 "expected ':'");
  CHECK_REJECTED(npy_file("{'descr': '<f4", four), "unterminated string");
  CHECK_REJECTED(npy_file("{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (1,)}", four),
                 "escape");
  CHECK_REJECTED(npy_file("{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", four),
                 "expected a string");
  CHECK_REJECTED(npy_file(dict("<f4", "(1,)", "1"), four), "True or False");
  CHECK_REJECTED(npy_file(dict("<f4", "(1,)", "None"), four), "True or False");
  // Non-ASCII text in a version 1.0 header.
  CHECK_REJECTED(npy_file(dict("<f4", "(1,)") + "\xc3\xa9", four), "not ASCII");
}

TEST_CASE("unsupported element types are rejected, naming the descr") {
  Bytes four = le_bytes<float>({1});
  CHECK_REJECTED(npy_file(dict(">f4", "(1,)"), four), "big-endian");
  CHECK_REJECTED(npy_file(dict(">i8", "(1,)"), Bytes(8)), "'>i8' is big-endian");
  CHECK_REJECTED(npy_file(dict("<f4", "(1,)", "True"), four), "fortran_order");
  CHECK_REJECTED(npy_file(dict("<c8", "(1,)"), Bytes(8)), "unsupported descr '<c8'");
  CHECK_REJECTED(npy_file(dict("<f16", "(1,)"), Bytes(16)), "unsupported descr '<f16'");
  CHECK_REJECTED(npy_file(dict("|O", "(1,)"), Bytes(8)), "unsupported descr '|O'");
  CHECK_REJECTED(npy_file(dict("<U3", "(1,)"), Bytes(12)), "unsupported descr '<U3'");
  CHECK_REJECTED(npy_file(dict("<M8[s]", "(1,)"), Bytes(8)), "unsupported descr '<M8[s]'");
  CHECK_REJECTED(npy_file(dict("|V4", "(1,)"), four), "unsupported descr '|V4'");
  CHECK_REJECTED(npy_file(dict("", "(1,)"), four), "''");
  CHECK_REJECTED(npy_file(dict("f4", "(1,)"), four), "byte order");
  CHECK_REJECTED(npy_file(dict("|f4", "(1,)"), four), "little-endian");
  CHECK_REJECTED(npy_file(dict("=f4", "(1,)"), four), "little-endian");
  CHECK_REJECTED(npy_file(dict("<S3", "(1,)"), Bytes(3)), "|S<n>");
  CHECK_REJECTED(npy_file(dict("|S0", "(1,)"), {}), "width");
  CHECK_REJECTED(npy_file(dict("|S99999999999", "(1,)"), {}), "'|S99999999999'");
  CHECK_REJECTED(npy_file("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}", four),
                 "structured");
  // Bytes that are not printable are escaped in the message.
  CHECK_REJECTED(npy_file(dict("<\x01\x7f", "(1,)"), four), "'<\\x01\\x7f'");
  // A BOOL byte other than 0 or 1.
  CHECK_REJECTED(npy_file(dict("|b1", "(3,)"), {0, 1, 2}), "BOOL element 2 holds 2");
}

TEST_CASE("shapes that are malformed, absurd or do not match the data are rejected") {
  Bytes four = le_bytes<float>({1});
  CHECK_REJECTED(npy_file(dict("<f4", "(1)"), four), "(n,)");
  CHECK_REJECTED(npy_file(dict("<f4", "[1]"), four), "must be a tuple");
  CHECK_REJECTED(npy_file(dict("<f4", "(-1,)"), four), "negative");
  CHECK_REJECTED(npy_file(dict("<f4", "('1',)"), four), "expected a dimension");
  CHECK_REJECTED(npy_file(dict("<f4", "(1.0,)"), four), "expected ',' or ')'");
  CHECK_REJECTED(npy_file(dict("<f4", "(1,,)"), four), "expected a dimension");
  CHECK_REJECTED(npy_file(dict("<f4", "(99999999999999999999,)"), four), "too large");
  CHECK_REJECTED(npy_file(dict("<f4", "(9223372036854775808,)"), four), "too large");
  // The product overflows: found by arithmetic, nothing is allocated.
  CHECK_REJECTED(npy_file(dict("<f4", "(4294967296, 4294967296, 4294967296)"), four), "too large");
  CHECK_REJECTED(npy_file(dict("<f8", "(4611686018427387904,)"), four), "too large");
  // Huge but representable: the file simply does not hold that much.
  CHECK_REJECTED(npy_file(dict("<f4", "(1000000000000,)"), four),
                 "needs 4000000000000 data bytes but the file has 4 (truncated)");
  CHECK_REJECTED(npy_file(dict("|S1000000", "(1000000,)"), {}), "(truncated)");
  std::string many = "(";
  for (int i = 0; i < 65; ++i) many += "1, ";
  CHECK_REJECTED(npy_file(dict("<f4", many + ")"), four), "more than 64 dimensions");
  // Data shorter or longer than the shape says.
  CHECK_REJECTED(npy_file(dict("<f4", "(2,)"), four), "needs 8 data bytes but the file has 4");
  CHECK_REJECTED(npy_file(dict("<f4", "(1,)"), Bytes(5)), "needs 4 data bytes but the file has 5");
  CHECK_REJECTED(npy_file(dict("<f4", "()"), Bytes{}), "needs 4 data bytes but the file has 0");
  Bytes extra = bytes_of(kNumpyInt32);
  extra.push_back(0);
  CHECK_REJECTED(extra, "needs 24 data bytes but the file has 25");
}

TEST_CASE("corrupting any byte of a header gives a parse or an InvalidArgument, nothing else") {
  const Bytes good = bytes_of(kNumpyInt32);
  const std::uint8_t replacements[] = {0,   ' ', '\'', '"', '(', ')',  ',', ':',
                                       '{', '}', '9',  '-', 'x', 0x80, 0xff};
  int parsed = 0, rejected = 0;
  for (std::size_t pos = 0; pos < 128; ++pos) {
    for (std::uint8_t value : replacements) {
      Bytes file = good;
      file[pos] = value;
      CAPTURE(pos);
      CAPTURE(static_cast<int>(value));
      try {
        Tensor t = parse(file);
        CHECK(t.check().ok());
        ++parsed;
      } catch (const sonic::Error& e) {
        CHECK(e.code() == StatusCode::InvalidArgument);
        ++rejected;
      }
    }
  }
  CHECK(parsed > 0);  // e.g. padding turned into other blanks
  CHECK(rejected > 0);
}

TEST_CASE("read_npy and write_npy report file problems") {
  TempDir dir;
  SUBCASE("a missing file") {
    CHECK_THROWS_AS(sonic::tools::read_npy(dir.file("missing.npy")), sonic::Error);
    try {
      sonic::tools::read_npy(dir.file("missing.npy"));
    } catch (const sonic::Error& e) {
      CHECK(e.code() == StatusCode::NotFound);
      CHECK(contains(e.message(), "missing.npy"));
    }
  }
  SUBCASE("a directory") {
    CHECK_THROWS_AS(sonic::tools::read_npy(dir.file("")), sonic::Error);
    try {
      sonic::tools::read_npy(dir.file(""));
    } catch (const sonic::Error& e) {
      CHECK(e.code() == StatusCode::InvalidArgument);
      CHECK(contains(e.message(), "not a regular file"));
    }
  }
  SUBCASE("a malformed file: the message names the file and the problem") {
    Bytes bad = npy_file(dict(">f4", "(1,)"), Bytes(4));
    write_file(dir.file("bad.npy"), bad);
    CHECK_THROWS_AS(sonic::tools::read_npy(dir.file("bad.npy")), sonic::Error);
    try {
      sonic::tools::read_npy(dir.file("bad.npy"));
    } catch (const sonic::Error& e) {
      CHECK(e.code() == StatusCode::InvalidArgument);
      CHECK(contains(e.message(), "bad.npy"));
      CHECK(contains(e.message(), "big-endian"));
    }
  }
  SUBCASE("an empty file") {
    write_file(dir.file("empty.npy"), {});
    CHECK_THROWS_AS(sonic::tools::read_npy(dir.file("empty.npy")), sonic::Error);
  }
  SUBCASE("a file numpy wrote, read from disk") {
    write_file(dir.file("f4.npy"), bytes_of(kNumpyFloat32));
    Tensor t = sonic::tools::read_npy(dir.file("f4.npy"));
    CHECK(t.as<float>().to_vector() == std::vector<float>{1.5f, -2.25f, 3e38f});
  }
  SUBCASE("writing into a directory that does not exist") {
    std::vector<float> one = {1};
    CHECK_THROWS_AS(sonic::tools::write_npy(dir.file("no/such/dir.npy"), Tensor::view(one, {1})),
                    sonic::Error);
  }
}
