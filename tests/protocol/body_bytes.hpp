// Test helper: the bytes an OutgoingBody would put on the wire, concatenated.
#pragma once

#include <string>

#include "protocol/grpc_wire.hpp"

inline std::string body_bytes(const sonic::protocol::OutgoingBody& body) {
  std::string out;
  for (const auto& piece : body.pieces()) {
    out.append(reinterpret_cast<const char*>(body.piece_data(piece)), piece.size);
  }
  return out;
}
