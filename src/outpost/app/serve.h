// `outpost serve`: load the model, plan capacity, start the engine and the
// HTTP server, and run until SIGINT/SIGTERM.
#pragma once

#include "outpost/app/config.h"

namespace outpost::app {

// Returns the process exit code. Blocks SIGINT/SIGTERM in all threads and
// waits for them on the calling thread.
int RunServe(ServeConfig cfg);

}  // namespace outpost::app
