// UseEveryCpu — undoes mocks/cpu_slot.cc's pinning for this process: for a
// test that starts threads which must really run at once (a team of llama.cpp
// threads it sizes itself; on one CPU they wait for each other at every
// barrier). Threads started after the call may run on every CPU the process
// started with. A no-op where the process was not pinned.
#pragma once

namespace outpost::testing {

void UseEveryCpu();

}  // namespace outpost::testing
