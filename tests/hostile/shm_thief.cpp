// A client that tries to read another user's shared memory through sonic-server: run as root
// by the test, it becomes `uid` first, then registers `key` and reads 16 floats through it (or,
// for a KEY of "@NAME", reads them through the region NAME someone else registered). TARGET is
// a gRPC port, or a URL ("http://127.0.0.1:PORT"). Prints "read: <values>" or
// "refused: <status code>: <message>".
#include <grp.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "shm_object.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: shm_thief PORT|URL UID KEY|@REGION\n";
    return 2;
  }
  const auto uid = static_cast<uid_t>(std::strtoul(argv[2], nullptr, 10));
  if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) {
    std::cerr << "shm_thief: cannot become uid " << uid << '\n';
    return 2;
  }
  try {
    const std::string target = argv[1];
    sonic::Client client(target.find("://") != std::string::npos ? target
                                                                 : "grpc://127.0.0.1:" + target);
    const std::string key = argv[3];
    std::string region = "stolen";
    if (key.rfind('@', 0) == 0) {
      region = key.substr(1);
    } else {
      sonic::test::register_region(client, region, key, 16 * sizeof(float));
    }
    auto values = sonic::test::identity_from_region(client, region, 16);
    std::cout << "read:";
    for (float v : values) std::cout << ' ' << v;
    std::cout << std::endl;
  } catch (const sonic::Error& e) {
    std::cout << "refused: " << sonic::to_string(e.code()) << ": " << e.message() << std::endl;
  }
  return 0;
}
