// Test support: certificates made for one test (make_test_certificates.sh, with the openssl
// command) in a directory of their own, removed when the test is done.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace sonic::test {

class TestCertificates {
 public:
  TestCertificates() {
    char pattern[] = "/tmp/sonic-test-tls-XXXXXX";
    REQUIRE(::mkdtemp(pattern) != nullptr);
    dir_ = pattern;
    const std::string command = std::string(SONIC_MAKE_TEST_CERTIFICATES) + " " + dir_;
    REQUIRE(std::system(command.c_str()) == 0);
  }
  ~TestCertificates() { (void)std::system(("rm -rf " + dir_).c_str()); }
  TestCertificates(const TestCertificates&) = delete;
  TestCertificates& operator=(const TestCertificates&) = delete;

  /// The path of one of the files the script lists ("ca.pem", "server.key").
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  /// Its text.
  std::string text(const std::string& name) const {
    std::ifstream in(file(name));
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
  }

 private:
  std::string dir_;
};

}  // namespace sonic::test
