// Test support: what a framework plugin does with sonic, compiled into a shared library of its
// own with hidden visibility (-fvisibility=hidden -fvisibility-inlines-hidden), as many
// frameworks build their plugins. Every inline function of sonic's headers that the plugin uses
// is then the plugin's private copy, static and thread_local state included.
#pragma once

#include <sonic/sonic.hpp>

#include <functional>
#include <memory>
#include <string>

#define PLUGIN_API __attribute__((visibility("default")))

namespace plugin {

/// A client made inside the plugin (it must find the transports the program linked).
PLUGIN_API std::unique_ptr<sonic::Client> make_client(const std::string& url,
                                                      sonic::ClientOptions options);

/// Starts `request` on `client` from inside the plugin; `done` runs with its outcome.
PLUGIN_API sonic::RequestHandle start(sonic::Client& client, sonic::InferRequest request,
                                      std::function<void(sonic::StatusCode)> done);

}  // namespace plugin
