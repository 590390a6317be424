// ops/w8a8_amx.h: when linear_w8a8 may use AMX. Compiled for the baseline CPU; the
// kernel itself (ops/kernels/w8a8_amx.cpp) is compiled with AMX and runs only after
// these checks.
#include "ops/w8a8_amx.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include "ops/cpu.h"
#include "core/error.h"

#if TENSORVM_HAVE_AMX
namespace ops::kernels::amx {
void w8a8_blocks(const W8A8Problem& p, int64_t rows, int64_t b0, int64_t b1, uint8_t* a_tail);
}
#endif

namespace ops {

namespace {

#if TENSORVM_HAVE_AMX && defined(__linux__)
// Linux (5.16+) hands a process the 8 KB tile state only when asked.
bool os_grants_tiles() {
  constexpr long kGetPerm = 0x1022, kReqPerm = 0x1023, kXtileData = 18;
  if (syscall(SYS_arch_prctl, kReqPerm, kXtileData) != 0) return false;
  unsigned long mask = 0;
  if (syscall(SYS_arch_prctl, kGetPerm, &mask) != 0) return false;
  return (mask >> kXtileData) & 1u;
}
#else
bool os_grants_tiles() { return false; }
#endif

bool supported() {
  static const bool ok = [] {
    return cpu_has("amx-tile") && cpu_has("amx-int8") && cpu_has("avx512bw") && cpu_has("avx512vnni") &&
           os_grants_tiles();
  }();
  return ok;
}

std::atomic<int> g_enabled{-1};  // -1: not read from TENSORVM_AMX yet

bool enabled() {
  int e = g_enabled.load(std::memory_order_acquire);
  if (e < 0) {
    const char* env = std::getenv("TENSORVM_AMX");
    e = !(env && std::string(env) == "0");
    g_enabled.store(e, std::memory_order_release);
  }
  return e != 0;
}

}  // namespace

bool amx_active() {
  if (!enabled() || !supported()) return false;
  static const std::string best = supported_kernel_variants().back();
  return kernel_table().name == best;
}

void set_amx(bool on) { g_enabled.store(on ? 1 : 0, std::memory_order_release); }

void w8a8_amx_blocks(const kernels::W8A8Problem& p, int64_t rows, int64_t b0, int64_t b1, uint8_t* a_tail) {
#if TENSORVM_HAVE_AMX
  kernels::amx::w8a8_blocks(p, rows, b0, b1, a_tail);
#else
  (void)p, (void)rows, (void)b0, (void)b1, (void)a_tail;
  vm::fail("linear_w8a8: this build has no AMX kernel");
#endif
}

}  // namespace ops
