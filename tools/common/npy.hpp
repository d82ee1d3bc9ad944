// sonic-infer — reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
// Over 500 lines: one format's reader and writer, with every check a hostile file needs.
//
// A .npy file is a 6-byte magic "\x93NUMPY", a major and minor version byte, the header length
// (2 bytes little-endian in version 1, 4 bytes in versions 2 and 3), a Python dict literal such
// as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and ended by
// a newline, and then the raw elements in row-major order.
//
// Supported element types: |b1 BOOL, |u1 <u2 <u4 <u8, |i1 <i2 <i4 <i8, <f2 FP16, <f4 FP32,
// <f8 FP64, and |S<n> (fixed-width byte strings) for BYTES. Anything else (big-endian data,
// Fortran order, complex, unicode, object or structured dtypes) is rejected with an error that
// names the problem. Every malformed file is a sonic::Error(InvalidArgument): the reader checks
// sizes before it allocates and never trusts a length it has not compared with the input.
// Over 500 lines: one format's reader and writer, every dtype and version beside the others.
#pragma once

#include <sonic/error.hpp>
#include <sonic/tensor.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace sonic::tools {

/// Longest header (the dict text) accepted. numpy writes well under 1 KiB even for 64
/// dimensions and refuses more than 10000 bytes by default; 64 KiB is generous and bounds work.
inline constexpr std::size_t kNpyMaxHeaderBytes = 64 * 1024;
/// Most dimensions accepted (numpy 2 allows 64).
inline constexpr std::size_t kNpyMaxDims = 64;

/// What a .npy header says, after validation.
struct NpyHeader {
  int major_version = 1;
  int minor_version = 0;
  std::string descr;  ///< as written, e.g. "<f4" or "|S5"
  DataType dtype = DataType::Fp32;
  std::size_t item_size = 0;      ///< bytes per element in the file (the n of |S<n> for BYTES)
  Shape shape;                    ///< empty for a 0-d (scalar) array
  std::size_t element_count = 0;  ///< product of the shape
  std::size_t data_offset = 0;    ///< where the elements start
  std::size_t data_bytes = 0;     ///< element_count * item_size
};

namespace detail {

/// The first six bytes of every .npy file.
inline constexpr char kNpyMagic[] = "\x93NUMPY";
inline constexpr std::size_t kNpyMagicSize = 6;

/// Throws the InvalidArgument error of a malformed file.
[[noreturn]] inline void npy_fail(const std::string& message) {
  throw Error(StatusCode::InvalidArgument, message);
}

/// Text from a file, quoted and made safe to print: non-printable bytes become \xNN and long
/// text is cut, so an error message never carries raw binary.
inline std::string npy_quote(std::string_view text, std::size_t limit = 40) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > limit) out += "...";
  return out + "'";
}

/// "(2, 3)", "(3,)" or "()": a shape as numpy writes it in a header.
inline std::string npy_shape_text(const Shape& shape) {
  std::string text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  if (shape.size() == 1) text += ',';
  return text + ")";
}

/// The element type of a descr string ("<f4", "|u1", "|S7"); throws for anything unsupported.
inline void npy_parse_descr(const std::string& descr, NpyHeader& header) {
  std::string shown = npy_quote(descr);
  char order = descr.empty() ? '\0' : descr[0];
  char kind = descr.size() < 2 ? '\0' : descr[1];
  std::string_view digits =
      descr.size() < 2 ? std::string_view() : std::string_view(descr).substr(2);
  auto unsupported = [&shown]() {
    npy_fail("unsupported descr " + shown +
             " (supported: |b1, |u1, <u2, <u4, <u8, |i1, <i2, <i4, <i8, <f2, <f4, <f8, |S<n>)");
  };
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    npy_fail("descr " + shown + " does not start with a byte order ('<', '>', '|' or '=')");
  }
  std::size_t size = 0;
  for (char c : digits) {
    if (c < '0' || c > '9' || size > 0xffffffffu) unsupported();
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  if (kind == 'S') {
    if (order != '|') npy_fail("byte strings need descr '|S<n>', got " + shown);
    if (size == 0 || size > 0xffffffffu) npy_fail("byte string width out of range in " + shown);
    header.dtype = DataType::Bytes;
    header.item_size = size;
    return;
  }
  DataType type;
  if (kind == 'b' && size == 1) {
    type = DataType::Bool;
  } else if (kind == 'u' && size == 1) {
    type = DataType::UInt8;
  } else if (kind == 'u' && size == 2) {
    type = DataType::UInt16;
  } else if (kind == 'u' && size == 4) {
    type = DataType::UInt32;
  } else if (kind == 'u' && size == 8) {
    type = DataType::UInt64;
  } else if (kind == 'i' && size == 1) {
    type = DataType::Int8;
  } else if (kind == 'i' && size == 2) {
    type = DataType::Int16;
  } else if (kind == 'i' && size == 4) {
    type = DataType::Int32;
  } else if (kind == 'i' && size == 8) {
    type = DataType::Int64;
  } else if (kind == 'f' && size == 2) {
    type = DataType::Fp16;
  } else if (kind == 'f' && size == 4) {
    type = DataType::Fp32;
  } else if (kind == 'f' && size == 8) {
    type = DataType::Fp64;
  } else {
    unsupported();
  }
  if (size > 1 && order == '>') {
    npy_fail("descr " + shown +
             " is big-endian; only little-endian data is supported (convert "
             "with arr.astype(arr.dtype.newbyteorder('<')))");
  }
  if (size > 1 && order != '<') {
    npy_fail("descr " + shown + " has no explicit little-endian byte order '<'");
  }
  header.dtype = type;
  header.item_size = size;
}

/// A strict parser of the header dict: exactly the keys 'descr', 'fortran_order' and 'shape',
/// with a string, a boolean and a tuple of non-negative integers, as numpy writes them.
class NpyDictParser {
 public:
  explicit NpyDictParser(std::string_view text) : text_(text) {}

  void parse(NpyHeader& header) {
    bool have_descr = false, have_order = false, have_shape = false;
    bool fortran_order = false;
    skip_space();
    expect('{', "the header does not start with '{'");
    skip_space();
    while (peek() != '}') {
      std::string key = parse_string("a key");
      skip_space();
      expect(':', "expected ':' after key " + npy_quote(key));
      skip_space();
      if (key == "descr") {
        if (have_descr) npy_fail("header has key 'descr' twice");
        have_descr = true;
        if (peek() == '[') {
          npy_fail("structured dtypes (a list as 'descr') are not supported");
        }
        header.descr = parse_string("the 'descr' value");
      } else if (key == "fortran_order") {
        if (have_order) npy_fail("header has key 'fortran_order' twice");
        have_order = true;
        fortran_order = parse_bool();
      } else if (key == "shape") {
        if (have_shape) npy_fail("header has key 'shape' twice");
        have_shape = true;
        header.shape = parse_shape();
      } else {
        npy_fail("unexpected key " + npy_quote(key) + " in the header");
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != '}') {
        fail_here("expected ',' or '}'");
      }
    }
    ++pos_;  // '}'
    skip_space();
    if (pos_ != text_.size()) fail_here("unexpected text after the header dict");
    if (!have_descr) npy_fail("header has no 'descr'");
    if (!have_order) npy_fail("header has no 'fortran_order'");
    if (!have_shape) npy_fail("header has no 'shape'");
    if (fortran_order) {
      npy_fail(
          "fortran_order is True: column-major arrays are not supported (save "
          "np.ascontiguousarray(arr) instead)");
    }
  }

 private:
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  [[noreturn]] void fail_here(const std::string& what) const {
    npy_fail("malformed header: " + what + " at offset " + std::to_string(pos_) + " in " +
             npy_quote(text_, 80));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c, const std::string& what) {
    if (peek() != c || pos_ >= text_.size()) fail_here(what);
    ++pos_;
  }

  /// A Python string literal in single or double quotes, without escape sequences.
  std::string parse_string(const char* what) {
    char quote = peek();
    if (quote != '\'' && quote != '"') fail_here(std::string("expected a string as ") + what);
    std::size_t start = ++pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') fail_here("escape sequences in strings are not supported");
      ++pos_;
    }
    if (pos_ >= text_.size()) fail_here("unterminated string");
    std::string value(text_.substr(start, pos_ - start));
    ++pos_;
    return value;
  }

  bool parse_bool() {
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail_here("'fortran_order' must be True or False");
  }

  /// "(2, 3)", "(3,)" or "()": a tuple (a bare "(3)" is an int in Python, so it is refused).
  Shape parse_shape() {
    expect('(', "'shape' must be a tuple");
    Shape shape;
    bool trailing_comma = false;
    skip_space();
    while (peek() != ')') {
      if (peek() == '-') npy_fail("'shape' has a negative dimension");
      if (peek() < '0' || peek() > '9') fail_here("expected a dimension in 'shape'");
      std::uint64_t dim = 0;
      while (peek() >= '0' && peek() <= '9') {
        auto digit = static_cast<std::uint64_t>(peek() - '0');
        if (dim > (static_cast<std::uint64_t>(INT64_MAX) - digit) / 10) {
          npy_fail("'shape' has a dimension too large to be real");
        }
        dim = dim * 10 + digit;
        ++pos_;
      }
      if (shape.size() == kNpyMaxDims) {
        npy_fail("'shape' has more than " + std::to_string(kNpyMaxDims) + " dimensions");
      }
      shape.push_back(static_cast<std::int64_t>(dim));
      skip_space();
      trailing_comma = false;
      if (peek() == ',') {
        ++pos_;
        trailing_comma = true;
        skip_space();
      } else if (peek() != ')') {
        fail_here("expected ',' or ')' in 'shape'");
      }
    }
    if (shape.size() == 1 && !trailing_comma) {
      fail_here("'shape' of one dimension must be written '(n,)'");
    }
    ++pos_;  // ')'
    return shape;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

/// An n-byte (n <= 4) little-endian unsigned number.
inline std::uint32_t npy_load_le(const std::uint8_t* p, std::size_t n) {
  std::uint32_t value = 0;
  for (std::size_t i = 0; i < n; ++i) value |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return value;
}

/// The size of the preamble (magic, version, header length) and of the header text, from the
/// first bytes of a file; `size` is how many bytes are available there.
inline void npy_parse_preamble(const std::uint8_t* data, std::size_t size, NpyHeader& header,
                               std::size_t& header_len) {
  std::size_t have = size < kNpyMagicSize ? size : kNpyMagicSize;
  if (have == 0 || std::memcmp(data, kNpyMagic, have) != 0) {
    npy_fail("not a .npy file (bad magic: the file does not start with \\x93NUMPY)");
  }
  if (size < kNpyMagicSize + 2) {
    npy_fail("truncated: " + std::to_string(size) + " bytes end inside the preamble");
  }
  header.major_version = data[6];
  header.minor_version = data[7];
  if (header.minor_version != 0 || header.major_version < 1 || header.major_version > 3) {
    npy_fail("unsupported format version " + std::to_string(header.major_version) + "." +
             std::to_string(header.minor_version) + " (supported: 1.0, 2.0, 3.0)");
  }
  std::size_t len_bytes = header.major_version == 1 ? 2 : 4;
  if (size < 8 + len_bytes) {
    npy_fail("truncated: " + std::to_string(size) + " bytes end inside the header length");
  }
  header_len = npy_load_le(data + 8, len_bytes);
  header.data_offset = 8 + len_bytes;  // the header text starts here; the data after it
  if (header_len > kNpyMaxHeaderBytes) {
    npy_fail("header of " + std::to_string(header_len) + " bytes is too long (limit " +
             std::to_string(kNpyMaxHeaderBytes) + ")");
  }
}

/// Parses the header text (which starts at header.data_offset) and sets the data fields. `size`
/// counts the bytes available from the file's start; `total` is the whole file's size.
inline void npy_parse_header_text(const std::uint8_t* data, std::size_t size, std::size_t total,
                                  std::size_t header_len, NpyHeader& header) {
  std::size_t start = header.data_offset;
  if (size < start + header_len) {
    npy_fail("truncated: the header needs " + std::to_string(header_len) + " bytes but only " +
             std::to_string(size - start) + " follow the preamble");
  }
  std::string_view text(reinterpret_cast<const char*>(data + start), header_len);
  if (header.major_version < 3) {
    for (char c : text) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        npy_fail("header of a version " + std::to_string(header.major_version) +
                 ".0 file is not ASCII");
      }
    }
  }
  NpyDictParser(text).parse(header);
  npy_parse_descr(header.descr, header);

  header.data_offset = start + header_len;
  auto count = sonic::element_count(header.shape);
  if (!count || (*count != 0 && header.item_size > SIZE_MAX / *count)) {
    npy_fail("shape " + npy_shape_text(header.shape) + " is too large to be real");
  }
  header.element_count = *count;
  header.data_bytes = *count * header.item_size;
  std::size_t available = total - header.data_offset;
  if (available != header.data_bytes) {
    npy_fail("shape " + npy_shape_text(header.shape) + " of " + header.descr + " needs " +
             std::to_string(header.data_bytes) + " data bytes but the file has " +
             std::to_string(available) + (available < header.data_bytes ? " (truncated)" : ""));
  }
}

/// A tensor owning `bytes` (built step by step: the pointer is taken before the owner moves).
inline Tensor npy_owned(DataType type, const Shape& shape, std::vector<std::uint8_t> bytes) {
  auto owner = std::make_shared<const std::vector<std::uint8_t>>(std::move(bytes));
  const std::uint8_t* data = owner->data();
  std::size_t size = owner->size();
  return Tensor::from_shared(type, shape, std::move(owner), data, size);
}

/// The tensor of a parsed file whose bytes are data[0, total). The bytes are shared with
/// `owner` when it is given and the data is aligned for its element type; otherwise copied.
inline Tensor npy_make_tensor(const NpyHeader& header, const std::uint8_t* data,
                              std::shared_ptr<const void> owner) {
  const std::uint8_t* elements = data + header.data_offset;
  if (header.dtype == DataType::Bytes) {
    std::vector<std::string_view> items;
    items.reserve(header.element_count);
    for (std::size_t i = 0; i < header.element_count; ++i) {
      const char* item = reinterpret_cast<const char*>(elements + i * header.item_size);
      std::size_t n = header.item_size;
      while (n > 0 && item[n - 1] == '\0') --n;  // numpy strips trailing NULs of 'S' items
      items.emplace_back(item, n);
    }
    return npy_owned(DataType::Bytes, header.shape, sonic::detail::encode_bytes_elements(items));
  }
  if (header.dtype == DataType::Bool) {
    for (std::size_t i = 0; i < header.data_bytes; ++i) {
      if (elements[i] > 1) {
        npy_fail("BOOL element " + std::to_string(i) + " holds " + std::to_string(elements[i]) +
                 ", not 0 or 1");
      }
    }
  }
  auto address = reinterpret_cast<std::uintptr_t>(elements);
  if (owner && address % header.item_size == 0) {
    return Tensor::from_shared(header.dtype, header.shape, std::move(owner), elements,
                               header.data_bytes);
  }
  return npy_owned(header.dtype, header.shape,
                   std::vector<std::uint8_t>(elements, elements + header.data_bytes));
}

/// Closes a C file when its owner goes (the write path closes it by hand to see errors).
struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using FilePtr = std::unique_ptr<std::FILE, FileCloser>;

}  // namespace detail

namespace detail {

/// The header of a whole file in memory, or an error without context.
inline NpyHeader npy_parse_header(const std::uint8_t* data, std::size_t size) {
  NpyHeader header;
  std::size_t header_len = 0;
  npy_parse_preamble(data, size, header, header_len);
  npy_parse_header_text(data, size, size, header_len, header);
  return header;
}

/// The same error, its message prefixed with where it happened.
inline Error npy_in(const std::string& where, const Error& e) {
  return Error(e.code(), where + ": " + e.message());
}

}  // namespace detail

/// Reads and validates the header of an in-memory .npy file of `size` bytes; throws
/// sonic::Error(InvalidArgument) saying what is wrong with a malformed one.
inline NpyHeader parse_npy_header(const std::uint8_t* data, std::size_t size) {
  try {
    return detail::npy_parse_header(data, size);
  } catch (const Error& e) {
    throw detail::npy_in("invalid .npy data", e);
  }
}

/// The array of an in-memory .npy file as a tensor that owns a copy of the elements; throws
/// sonic::Error(InvalidArgument) saying what is wrong with malformed data.
inline Tensor parse_npy(const std::uint8_t* data, std::size_t size) {
  try {
    NpyHeader header = detail::npy_parse_header(data, size);
    return detail::npy_make_tensor(header, data, nullptr);
  } catch (const Error& e) {
    throw detail::npy_in("invalid .npy data", e);
  }
}

/// The array of a .npy file as a tensor that owns its bytes. Throws sonic::Error: NotFound
/// when the file cannot be opened, InvalidArgument when it is not a well-formed .npy file.
inline Tensor read_npy(const std::string& path) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    throw Error(StatusCode::NotFound,
                "cannot open '" + path + "': " + (ec ? ec.message() : std::string("no such file")));
  }
  if (!std::filesystem::is_regular_file(status)) {
    throw Error(StatusCode::InvalidArgument, "'" + path + "' is not a regular file");
  }
  std::uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(StatusCode::NotFound, "cannot size '" + path + "': " + ec.message());
  if (file_size > SIZE_MAX / 2) {
    throw Error(StatusCode::InvalidArgument, "'" + path + "' is too large to load");
  }
  detail::FilePtr file(std::fopen(path.c_str(), "rb"));
  if (!file) {
    throw Error(StatusCode::NotFound,
                "cannot open '" + path + "': " + std::string(std::strerror(errno)));
  }
  try {
    // The file's size is known and real, so reading it whole allocates no more than it holds;
    // the header is still checked against that size before any tensor is built.
    auto bytes = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(file_size));
    std::size_t got = bytes->empty() ? 0 : std::fread(bytes->data(), 1, bytes->size(), file.get());
    if (got != bytes->size()) {
      detail::npy_fail("read " + std::to_string(got) + " of " + std::to_string(bytes->size()) +
                       " bytes (the file shrank or could not be read)");
    }
    NpyHeader header = detail::npy_parse_header(bytes->data(), bytes->size());
    const std::uint8_t* data = bytes->data();
    return detail::npy_make_tensor(header, data, std::move(bytes));
  } catch (const Error& e) {
    throw detail::npy_in("invalid .npy file '" + path + "'", e);
  }
}

/// The numpy descr of a datatype ("<f4"); throws InvalidArgument for BF16, which numpy lacks,
/// and for BYTES, whose descr depends on the longest element (see npy_bytes).
inline std::string npy_descr(DataType type) {
  switch (type) {
    case DataType::Bool: return "|b1";
    case DataType::UInt8: return "|u1";
    case DataType::UInt16: return "<u2";
    case DataType::UInt32: return "<u4";
    case DataType::UInt64: return "<u8";
    case DataType::Int8: return "|i1";
    case DataType::Int16: return "<i2";
    case DataType::Int32: return "<i4";
    case DataType::Int64: return "<i8";
    case DataType::Fp16: return "<f2";
    case DataType::Fp32: return "<f4";
    case DataType::Fp64: return "<f8";
    case DataType::Bf16:
      throw Error(StatusCode::InvalidArgument,
                  "numpy has no bfloat16 type: convert BF16 tensors to FP32 to save them");
    case DataType::Bytes: break;
  }
  throw Error(StatusCode::InvalidArgument, std::string("no .npy descr for ") + to_string(type));
}

/// A tensor as the bytes of a version 1.0 .npy file (2.0 if the header needs it), with the
/// header padded so that the data starts at a multiple of 64 bytes as numpy does. BYTES tensors
/// become '|S<n>' arrays, n the longest element; as in numpy, trailing NULs of an element do
/// not survive reading back. Throws InvalidArgument for a BF16 tensor or one whose bytes do not
/// fit its shape.
inline std::vector<std::uint8_t> npy_bytes(const Tensor& tensor) {
  if (auto ok = tensor.check(); !ok) throw ok.error();
  std::vector<std::string_view> strings;
  std::size_t width = 1;
  std::string descr;
  if (tensor.dtype() == DataType::Bytes) {
    strings = tensor.string_views();
    for (auto s : strings) width = s.size() > width ? s.size() : width;
    descr = "|S" + std::to_string(width);
  } else {
    descr = npy_descr(tensor.dtype());
  }
  for (std::int64_t dim : tensor.shape()) {
    if (dim < 0) throw Error(StatusCode::InvalidArgument, "cannot save a negative dimension");
  }
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                     detail::npy_shape_text(tensor.shape()) + ", }";
  std::size_t preamble = 10;
  int major = 1;
  if (dict.size() + 1 + 64 > 0xffff) {
    preamble = 12;
    major = 2;
  }
  std::size_t total_header = preamble + dict.size() + 1;
  std::size_t padded = (total_header + 63) / 64 * 64;
  dict.append(padded - total_header, ' ');
  dict += '\n';
  std::size_t header_len = dict.size();

  std::size_t data_bytes = tensor.byte_size();
  if (tensor.dtype() == DataType::Bytes) {
    if (!strings.empty() && width > SIZE_MAX / strings.size()) {
      throw Error(StatusCode::InvalidArgument, "BYTES tensor too large for a fixed-width .npy");
    }
    data_bytes = strings.size() * width;
  }
  std::vector<std::uint8_t> out;
  out.reserve(padded + data_bytes);
  out.insert(out.end(), detail::kNpyMagic, detail::kNpyMagic + detail::kNpyMagicSize);
  out.push_back(static_cast<std::uint8_t>(major));
  out.push_back(0);
  for (std::size_t i = 0; i < preamble - 8; ++i) {
    out.push_back(static_cast<std::uint8_t>(header_len >> (8 * i)));
  }
  out.insert(out.end(), dict.begin(), dict.end());
  if (tensor.dtype() == DataType::Bytes) {
    for (auto s : strings) {
      out.insert(out.end(), s.begin(), s.end());
      out.insert(out.end(), width - s.size(), 0);
    }
  } else {
    out.insert(out.end(), tensor.data(), tensor.data() + tensor.byte_size());
  }
  return out;
}

/// Writes a tensor as a .npy file (see npy_bytes for the format). Throws InvalidArgument when
/// the tensor cannot be saved or the file cannot be created, DataLoss when writing fails.
inline void write_npy(const std::string& path, const Tensor& tensor) {
  std::vector<std::uint8_t> bytes = npy_bytes(tensor);
  detail::FilePtr file(std::fopen(path.c_str(), "wb"));
  if (!file) {
    throw Error(StatusCode::InvalidArgument,
                "cannot create '" + path + "': " + std::string(std::strerror(errno)));
  }
  if (std::fwrite(bytes.data(), 1, bytes.size(), file.get()) != bytes.size() ||
      std::fflush(file.get()) != 0) {
    throw Error(StatusCode::DataLoss,
                "writing '" + path + "' failed: " + std::string(std::strerror(errno)));
  }
  if (std::fclose(file.release()) != 0) {
    throw Error(StatusCode::DataLoss,
                "closing '" + path + "' failed: " + std::string(std::strerror(errno)));
  }
}

}  // namespace sonic::tools
