// linear_w8a8's AMX kernel (ops/w8a8_amx.h says why), compiled with -mamx-tile
// -mamx-int8 and AVX-512 for the epilogue. Like a kernel variant, it defines nothing
// outside ops::kernels::amx (no std templates: an instantiation compiled with these
// instructions could be the copy the linker keeps for the whole program), and runs
// only when ops::amx_active() has checked the CPU and the OS.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "ops/kernels/kernels.h"

namespace ops::kernels::amx {

namespace {

// ldtilecfg's operand: palette 1, then bytes per row and rows of each tile.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// Tiles: C 0-3 (2 x 2 blocks of 16 rows x 16 outputs, int32), A 4-5 (16 rows x 64
// input bytes), B 6-7 (16 groups of 4 inputs x 16 outputs). Every tile is 16 x 64 bytes.
void configure_tiles() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.colsb[t] = 64;
    c.rows[t] = 16;
  }
  _tile_loadconfig(&c);
}

// sums[jj] = sum of the weights of one block's output jj over all kb groups (the -128 shift).
void weight_sums(const int8_t* w, int64_t kb, int32_t* sums) {
  const __m512i ones = _mm512_set1_epi8(1);
  __m512i s = _mm512_setzero_si512();
  for (int64_t kq = 0; kq < kb; ++kq) s = _mm512_dpbusd_epi32(s, ones, _mm512_loadu_si512(w + kq * 64));
  _mm512_storeu_si512(sums, s);
}

// The VNNI kernel's rescale, instruction for instruction: y = (acc - 128 sum) * (sx sw) + b.
void store_rows(const W8A8Problem& p, const int32_t* c, const int32_t* sums, int64_t r0, int64_t nrows, int64_t jb) {
  const int64_t j0 = jb * 16;
  const int64_t n = p.outf - j0 < 16 ? p.outf - j0 : 16;
  const __mmask16 m = __mmask16((1u << n) - 1);
  const __m512 sw = _mm512_maskz_loadu_ps(m, p.sw + j0);
  const __m512 b = p.bias ? _mm512_maskz_loadu_ps(m, p.bias + j0) : _mm512_setzero_ps();
  const __m512i shift = _mm512_maskz_slli_epi32(0xFFFF, _mm512_loadu_si512(sums), 7);
  for (int64_t r = 0; r < nrows; ++r) {
    const __m512 d = _mm512_maskz_cvtepi32_ps(0xFFFF, _mm512_sub_epi32(_mm512_loadu_si512(c + 16 * r), shift));
    const __m512 s = _mm512_mul_ps(_mm512_set1_ps(p.sx[r0 + r]), sw);
    _mm512_mask_storeu_ps(p.y + (r0 + r) * p.outf + j0, m, _mm512_fmadd_ps(d, s, b));
  }
}

}  // namespace

// Every row for output blocks [b0, b1), two blocks (32 outputs) at a time against 32
// rows at a time. Rows past the last multiple of 32 are copied into a_tail (32 x padded
// bytes) padded with 128, a zero activation; the last K step of each weight block is
// copied and zero-padded, so that no tile reads past the weight.
void w8a8_blocks(const W8A8Problem& p, int64_t rows, int64_t b0, int64_t b1, uint8_t* a_tail) {
  const int64_t full = p.kb / 16, tail = p.kb % 16;  // K steps of 16 groups (64 bytes)
  const int64_t steps = full + (tail ? 1 : 0);
  const int64_t last = rows / 32 * 32;
  if (last < rows) {
    std::memcpy(a_tail, p.q + last * p.padded, size_t((rows - last) * p.padded));
    std::memset(a_tail + (rows - last) * p.padded, 128, size_t((32 - (rows - last)) * p.padded));
  }
  alignas(64) int8_t b_tail[2][16 * 64];
  alignas(64) int32_t sums[2][16];
  alignas(64) int32_t c[4][16 * 16];
  configure_tiles();
  for (int64_t jb = b0; jb < b1; jb += 2) {
    // With one block left, the second B tile reloads the first and its sums are dropped.
    const int nj = b1 - jb < 2 ? 1 : 2;
    const int8_t* w[2];
    for (int j = 0; j < 2; ++j) {
      w[j] = p.w + (jb + (j < nj ? j : 0)) * p.kb * 64;
      weight_sums(w[j], p.kb, sums[j]);
      if (tail) {
        std::memcpy(b_tail[j], w[j] + full * 16 * 64, size_t(tail * 64));
        std::memset(b_tail[j] + tail * 64, 0, size_t((16 - tail) * 64));
      }
    }
    for (int64_t r0 = 0; r0 < rows; r0 += 32) {
      const uint8_t* a = r0 < last ? p.q + r0 * p.padded : a_tail;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t s = 0; s < steps; ++s) {
        const bool in_tail = s == full;
        _tile_loadd(4, a + s * 64, p.padded);
        _tile_loadd(5, a + 16 * p.padded + s * 64, p.padded);
        _tile_loadd(6, in_tail ? b_tail[0] : w[0] + s * 16 * 64, 64);
        _tile_loadd(7, in_tail ? b_tail[1] : w[1] + s * 16 * 64, 64);
        _tile_dpbusd(0, 4, 6);
        _tile_dpbusd(1, 4, 7);
        _tile_dpbusd(2, 5, 6);
        _tile_dpbusd(3, 5, 7);
      }
      _tile_stored(0, c[0], 64);
      _tile_stored(1, c[1], 64);
      _tile_stored(2, c[2], 64);
      _tile_stored(3, c[3], 64);
      for (int half = 0; half < 2; ++half) {
        const int64_t first = r0 + 16 * half;
        if (first >= rows) break;
        const int64_t n = rows - first < 16 ? rows - first : 16;
        for (int j = 0; j < nj; ++j) store_rows(p, c[2 * half + j], sums[j], first, n, jb + j);
      }
    }
  }
  _tile_release();
}

}  // namespace ops::kernels::amx
