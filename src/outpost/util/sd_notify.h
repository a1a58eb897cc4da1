// The systemd notify protocol (sd_notify(3)) without libsystemd: one datagram
// "KEY=VALUE\n..." to the unix socket named by $NOTIFY_SOCKET ("@" starts an
// abstract name). Outside systemd (no $NOTIFY_SOCKET) every call is a no-op.
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>

namespace outpost::util {

// Sends `state` ("READY=1", "STOPPING=1", "WATCHDOG=1", "STATUS=..."; several
// joined by newlines). Returns false when not under systemd or on a send error.
bool SdNotify(const std::string& state);

// The watchdog interval systemd asks for (WatchdogSec=), in microseconds;
// 0 when none is set or $WATCHDOG_PID names another process.
int64_t SdWatchdogUsec();

}  // namespace outpost::util
