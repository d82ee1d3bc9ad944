// sonic — the one include: tensors, requests, the Client, what a fallback must answer.
//
//   #include <sonic/sonic.hpp>
//   sonic::Client client("grpc://127.0.0.1:8001");
//
// Link a transport for the URL scheme you use (sonic::grpc for grpc://). The CPU executor, for a
// fallback or a server, is <sonic/executor.hpp> (sonic::executor).
#pragma once

#include "sonic/callback.hpp"
#include "sonic/cancel.hpp"
#include "sonic/client.hpp"
#include "sonic/error.hpp"
#include "sonic/fallback.hpp"
#include "sonic/metadata.hpp"
#include "sonic/options.hpp"
#include "sonic/request.hpp"
#include "sonic/retry.hpp"
#include "sonic/routing.hpp"
#include "sonic/stats.hpp"
#include "sonic/tensor.hpp"
#include "sonic/transport.hpp"
#include "sonic/validate.hpp"
#include "sonic/version.hpp"
