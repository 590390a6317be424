// linear_w8a8's many-row kernel on Intel AMX (Sapphire Rapids and later): tdpbusd
// multiplies a 16 x 64 tile of u8 activations by a 64 x 16 tile of s8 weights into
// 16 x 16 int32 sums, 1024 multiply-adds per instruction against vpdpbusd's 64.
//
// Why our own kernel and not oneDNN's matmul: pack_w8a8's layout (16 outputs x 4 inputs
// per 64-byte row) is already AMX's B-tile layout, so tiles load straight from the
// mmap-ed weight. oneDNN wants its own weight layout: reordering per call cost 0.57 ms
// against 0.20 ms for the product itself (160 x 512 x 2048, one thread, Xeon), and
// keeping a reordered copy would double every w8a8 weight in memory.
//
// The sums are exact int32 and the rescale is the VNNI kernel's, so results are
// bit-identical to linear_w8a8 on the avx512_vnni variant.
#pragma once

#include <cstdint>

#include "ops/kernels/kernels.h"

namespace ops {

// Rows from which linear_w8a8 uses AMX (below, tiles of 16 rows would be mostly padding).
constexpr int64_t kAmxMinRows = 16;

// Whether linear_w8a8 runs AMX now: built with it, the CPU has amx-int8, Linux granted
// the tile state (arch_prctl, asked once), the CPU's best kernel variant is active (a
// variant forced with TENSORVM_ISA or set_kernel_variant measures our vector kernels),
// and TENSORVM_AMX is not 0 nor set_amx(false) called.
bool amx_active();

// Turns AMX off (tests, benchmarks) or back on (it still needs everything above).
void set_amx(bool enabled);

// linear_w8a8 for every row and packed output blocks [b0, b1) (16 outputs each); needs
// amx_active(). Scratch comes from the stack and `a_tail` (32 x p.padded bytes).
void w8a8_amx_blocks(const kernels::W8A8Problem& p, int64_t rows, int64_t b0, int64_t b1, uint8_t* a_tail);

}  // namespace ops
