#include "pushback.hpp"

#include <time.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "sonic/error.hpp"

namespace sonic::protocol {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Decimal digits only (at least one) into `out`; false on anything else or past int64.
bool parse_digits(std::string_view text, std::int64_t& out) {
  if (text.empty()) return false;
  out = 0;
  for (char c : text) {
    if (!is_digit(c)) return false;
    const int digit = c - '0';
    if (out > (std::numeric_limits<std::int64_t>::max() - digit) / 10) return false;
    out = out * 10 + digit;
  }
  return true;
}

// Reads an HTTP-date a piece at a time; every read fails once one has.
class DateReader {
 public:
  explicit DateReader(std::string_view text) : text_(text) {}

  bool ok() const { return ok_; }
  bool at_end() const { return ok_ && at_ == text_.size(); }

  // Exactly `literal` next.
  DateReader& expect(std::string_view literal) {
    ok_ = ok_ && text_.substr(at_, literal.size()) == literal;
    if (ok_) at_ += literal.size();
    return *this;
  }
  // Exactly `count` digits next.
  DateReader& number(int count, int& out) {
    out = 0;
    for (int i = 0; ok_ && i < count; ++i, ++at_) {
      ok_ = at_ < text_.size() && is_digit(text_[at_]);
      if (ok_) out = out * 10 + (text_[at_] - '0');
    }
    return *this;
  }
  // asctime's day of the month: two digits, or a space and one.
  DateReader& padded_day(int& out) {
    if (ok_ && at_ < text_.size() && text_[at_] == ' ') {
      ++at_;
      return number(1, out);
    }
    return number(2, out);
  }
  // A month's three-letter name (case-sensitive, as RFC 9110 spells them): 1 to 12.
  DateReader& month(int& out) {
    static constexpr std::array<std::string_view, 12> kMonths = {
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const std::string_view name = text_.substr(at_, 3);
    const auto it = ok_ ? std::find(kMonths.begin(), kMonths.end(), name) : kMonths.end();
    ok_ = it != kMonths.end();
    if (ok_) {
      out = static_cast<int>(it - kMonths.begin()) + 1;
      at_ += 3;
    }
    return *this;
  }
  // hour ":" minute ":" second.
  DateReader& time_of_day(int& hour, int& minute, int& second) {
    return number(2, hour).expect(":").number(2, minute).expect(":").number(2, second);
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
  bool ok_ = true;
};

bool is_day_name(std::string_view name, bool long_form) {
  static constexpr std::array<std::string_view, 7> kShort = {"Mon", "Tue", "Wed", "Thu",
                                                             "Fri", "Sat", "Sun"};
  static constexpr std::array<std::string_view, 7> kLong = {
      "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};
  const auto& names = long_form ? kLong : kShort;
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool leap(int year) { return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0; }

int days_in(int month, int year) {
  static constexpr std::array<int, 12> kDays = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return month == 2 && leap(year) ? 29 : kDays[static_cast<std::size_t>(month - 1)];
}

// The UTC calendar year of `when`.
int year_of(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  struct tm utc {};
  gmtime_r(&t, &utc);
  return utc.tm_year + 1900;
}

// An HTTP-date in any of its three forms (RFC 9110 5.6.7), as seconds since the epoch.
std::optional<std::int64_t> http_date(std::string_view text,
                                      std::chrono::system_clock::time_point now) {
  if (text.size() < 4) return std::nullopt;
  int day = 0, month = 0, year = 0, hour = 0, minute = 0, second = 0;
  const std::size_t comma = text.find(',');
  bool ok;
  if (comma == 3) {  // IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT"
    DateReader read(text.substr(4));
    read.expect(" ").number(2, day).expect(" ").month(month).expect(" ").number(4, year);
    read.expect(" ").time_of_day(hour, minute, second).expect(" GMT");
    ok = is_day_name(text.substr(0, 3), false) && read.at_end();
  } else if (comma != std::string_view::npos) {  // RFC 850: "Sunday, 06-Nov-94 08:49:37 GMT"
    DateReader read(text.substr(comma + 1));
    int two_digits = 0;
    read.expect(" ").number(2, day).expect("-").month(month).expect("-").number(2, two_digits);
    read.expect(" ").time_of_day(hour, minute, second).expect(" GMT");
    ok = is_day_name(text.substr(0, comma), true) && read.at_end();
    // "MUST interpret a timestamp that appears to be more than 50 years in the future as
    // representing the most recent year in the past that had the same last two digits": the
    // year with those digits in (now - 50, now + 50].
    const int this_year = year_of(now);
    year = this_year - this_year % 100 + two_digits;
    if (year > this_year + 50) {
      year -= 100;
    } else if (year + 100 <= this_year + 50) {
      year += 100;
    }
  } else {  // asctime: "Sun Nov  6 08:49:37 1994"
    DateReader read(text.substr(3));
    read.expect(" ").month(month).expect(" ").padded_day(day).expect(" ");
    read.time_of_day(hour, minute, second).expect(" ").number(4, year);
    ok = is_day_name(text.substr(0, 3), false) && read.at_end();
  }
  // A leap second (60) is allowed; timegm() carries it into the next minute.
  if (!ok || day < 1 || day > days_in(month, year) || hour > 23 || minute > 59 || second > 60) {
    return std::nullopt;
  }
  struct tm utc {};
  utc.tm_year = year - 1900;
  utc.tm_mon = month - 1;
  utc.tm_mday = day;
  utc.tm_hour = hour;
  utc.tm_min = minute;
  utc.tm_sec = second;
  return static_cast<std::int64_t>(timegm(&utc));
}

// Seconds as milliseconds, saturating long before the representation would overflow (no
// server's pause is longer than this anyway).
std::chrono::milliseconds seconds_as_ms(std::int64_t seconds) {
  constexpr std::int64_t kLongest = std::int64_t{1} << 40;  // about 35,000 years
  return std::chrono::milliseconds(std::clamp<std::int64_t>(seconds, 0, kLongest) * 1000);
}

}  // namespace

std::chrono::milliseconds parse_retry_pushback(std::string_view value) {
  std::string_view text = trimmed(value);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  std::int64_t ms = 0;
  if (!parse_digits(text, ms)) return Error::kNoRetry;  // not an integer
  if (negative && ms != 0) return Error::kNoRetry;      // "-0" is 0, as gRPC reads it
  // Every other number is a delay; the largest one would read as kNoRetry.
  return std::chrono::milliseconds(std::min(ms, Error::kNoRetry.count() - 1));
}

std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now) {
  const std::string_view text = trimmed(value);
  std::int64_t seconds = 0;
  if (parse_digits(text, seconds)) return seconds_as_ms(seconds);
  if (!text.empty() && std::all_of(text.begin(), text.end(), is_digit)) {
    return seconds_as_ms(std::numeric_limits<std::int64_t>::max());  // digits past int64
  }
  const auto date = http_date(text, now);
  if (!date) return std::nullopt;
  const auto at = std::chrono::system_clock::from_time_t(static_cast<std::time_t>(*date));
  if (at <= now) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(at - now);
}

}  // namespace sonic::protocol
