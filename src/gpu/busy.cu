// gpu/busy.cu: the spin kernel and its calibration.
#include "gpu/busy.hpp"

#include "gpu/check.hpp"
#include "gpu/cuda_raii.hpp"

namespace gb::gpu {

namespace {

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

void spin(cudaStream_t stream, long long cycles) {
  spin_kernel<<<1, 1, 0, stream>>>(cycles);
  GB_CHECK_LAUNCH();
}

}  // namespace

double calibrate_busy_cycles_per_us(cudaStream_t stream) {
  constexpr long long kCycles = 4'000'000;  // ~2 ms at 2 GHz
  spin(stream, kCycles);                    // warm-up: clocks ramp up
  const Event begin = Event::create(), end = Event::create();
  begin.record(stream);
  spin(stream, kCycles);
  end.record(stream);
  end.synchronize();
  const float ms = Event::elapsed_ms(begin, end);
  return ms > 0 ? static_cast<double>(kCycles) / (static_cast<double>(ms) * 1000.0) : 1000.0;
}

void busy_for(cudaStream_t stream, double microseconds, double cycles_per_us) {
  spin(stream, static_cast<long long>(microseconds * cycles_per_us));
}

}  // namespace gb::gpu
