// The standard process metrics every Prometheus client library exports, under
// their standard names, read from /proc at each scrape: process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_open_fds, process_max_fds, process_start_time_seconds. Linux only.
// Thread-safe.
#pragma once

namespace outpost::telemetry {

class StatRegistry;

void RegisterProcessMetrics(StatRegistry* registry);

}  // namespace outpost::telemetry
