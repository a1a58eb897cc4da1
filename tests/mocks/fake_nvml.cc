// A stand-in for libnvidia-ml.so.1 with the NVML entry points HwSensors
// loads, for tests on machines without an NVIDIA driver (loaded with dlopen,
// as the real one is). Two devices: gpu0 answers everything (a datacentre
// card); gpu1 answers only its temperature and NOT_SUPPORTED to the rest, as
// a Jetson's integrated GPU does. Values in NVML's units.
#include <cstring>

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidArgument = 2;
constexpr int kNotSupported = 3;

struct Device {
  int index;
};
Device devices[2] = {{0}, {1}};

int Index(void* dev) {
  return dev == &devices[0] ? 0 : dev == &devices[1] ? 1 : -1;
}

}  // namespace

extern "C" {

struct nvmlUtilization_t {
  unsigned gpu, memory;
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

int nvmlInit_v2() {
  return kSuccess;
}
int nvmlShutdown() {
  return kSuccess;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 2;
  return kSuccess;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void** dev) {
  if (i >= 2) return kInvalidArgument;
  *dev = &devices[i];
  return kSuccess;
}
int nvmlDeviceGetTemperature(void* dev, int sensor, unsigned* c) {
  if (Index(dev) < 0 || sensor != 0) return kInvalidArgument;
  *c = Index(dev) == 0 ? 65 : 48;
  return kSuccess;
}
int nvmlDeviceGetPowerUsage(void* dev, unsigned* mw) {
  if (Index(dev) != 0) return kNotSupported;
  *mw = 120500;
  return kSuccess;
}
int nvmlDeviceGetTotalEnergyConsumption(void* dev, unsigned long long* mj) {
  if (Index(dev) != 0) return kNotSupported;
  *mj = 5000000;
  return kSuccess;
}
int nvmlDeviceGetClockInfo(void* dev, int type, unsigned* mhz) {
  if (Index(dev) != 0) return kNotSupported;
  if (type != 1) return kInvalidArgument;  // NVML_CLOCK_SM
  *mhz = 1410;
  return kSuccess;
}
int nvmlDeviceGetUtilizationRates(void* dev, nvmlUtilization_t* u) {
  if (Index(dev) != 0) return kNotSupported;
  u->gpu = 37;
  u->memory = 12;
  return kSuccess;
}
int nvmlDeviceGetMemoryInfo(void* dev, nvmlMemory_t* m) {
  if (Index(dev) != 0) return kNotSupported;
  m->total = 80ULL << 30;
  m->used = 10ULL << 30;
  m->free = m->total - m->used;
  return kSuccess;
}

}  // extern "C"
