// The standard process metrics every Prometheus client library exports, under
// their standard names, read from /proc at each scrape: process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds. Linux only.
// And outpost_heap_bytes{state="in_use"|"free"}: the C heap (util/heap.h), so
// that resident memory that is the allocator's cache can be told from memory
// in use.
// Thread-safe.
#pragma once

namespace outpost::telemetry {

class StatRegistry;

void RegisterProcessMetrics(StatRegistry* registry);

}  // namespace outpost::telemetry
