// log_mel: Whisper's log-mel spectrogram (transformers' WhisperFeatureExtractor) in
// one op. The FFT is Eigen's (unsupported/Eigen/FFT, its kissfft backend: mixed
// radix, so n_fft 400 needs no padding); the mel filterbank is an input (a weight
// the importer computes with the extractor's own mel_filters), so no filterbank code
// lives here. STFT and mel sums run in double: the extractor's numpy path sums in
// float64, and the log of a near-silent band amplifies any rounding.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include <unsupported/Eigen/FFT>

#include "ops/registry.h"
#include "ops/select.h"

namespace ops {

// numpy's "reflect" padding index (the edge sample is not repeated).
static int64_t reflect(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// log_mel(audio [batch, samples], filters [n_fft / 2 + 1, n_mels], n_fft, hop_length, n_samples)
static void log_mel(OpContext& ctx, const Args& a, Value* out) {
  const Tensor& audio = a.tensor(0);
  const Tensor& filters = a.tensor(1);
  const int64_t n_fft = a.i64(2), hop = a.i64(3), n_samples = a.i64(4);
  if (audio.dtype() != DType::f32 || audio.ndim() != 2) vm::fail("audio must be f32 [batch, samples], got {}", audio.describe());
  if (n_fft < 2 || n_fft % 2) vm::fail("n_fft must be even and at least 2, got {}", n_fft);
  if (hop < 1) vm::fail("hop_length must be at least 1, got {}", hop);
  if (n_samples < hop || n_samples <= n_fft / 2)
    vm::fail("n_samples must be at least hop_length and more than n_fft / 2, got {}", n_samples);
  const int64_t bins = n_fft / 2 + 1;
  if (filters.dtype() != DType::f32 || filters.ndim() != 2 || filters.size(0) != bins)
    vm::fail("filters must be f32 [{}, n_mels] (n_fft / 2 + 1 frequency bins), got {}", bins, filters.describe());
  const int64_t batch = audio.size(0), given = audio.size(1), mels = filters.size(1);
  const int64_t frames = n_samples / hop;  // the extractor drops the STFT's last frame
  Tensor y = ctx.empty(DType::f32, Shape{batch, mels, frames});
  if (y.numel() == 0) {
    out[0] = std::move(y);
    return;
  }
  std::vector<double> window(n_fft);  // periodic Hann
  const double pi = std::acos(-1.0);
  for (int64_t n = 0; n < n_fft; ++n) window[n] = 0.5 - 0.5 * std::cos(2.0 * pi * double(n) / double(n_fft));
  const float* fp = filters.data<float>();
  // each mel filter is non-zero over a few bins only: sum over its span
  std::vector<int64_t> lo(mels, 0), hi(mels, 0);
  for (int64_t m = 0; m < mels; ++m) {
    int64_t k0 = 0, k1 = bins;
    while (k0 < bins && fp[k0 * mels + m] == 0.0f) ++k0;
    while (k1 > k0 && fp[(k1 - 1) * mels + m] == 0.0f) --k1;
    lo[m] = k0;
    hi[m] = k1;
  }
  std::vector<double> mel(size_t(mels * frames));
  float* yp = y.data<float>();
  for (int64_t b = 0; b < batch; ++b) {
    // the row padded with zeros or cut to n_samples, then reflect-padded by n_fft / 2; read
    // in place (no copy of the row: long-form audio is hours of samples)
    const float* ap = audio.data<float>() + b * given;
    const int64_t kept = std::min(given, n_samples);
    auto wave = [&](int64_t i) { return i < kept ? double(ap[i]) : 0.0; };
    ctx.parallel_for(frames, 32, [&](int64_t f0, int64_t f1) {
      Eigen::FFT<double> fft;
      std::vector<double> buf(n_fft);
      std::vector<std::complex<double>> spec;
      std::vector<double> power(bins);
      for (int64_t f = f0; f < f1; ++f) {
        const int64_t start = f * hop - n_fft / 2;
        for (int64_t n = 0; n < n_fft; ++n) buf[n] = wave(reflect(start + n, n_samples)) * window[n];
        fft.fwd(spec, buf);
        for (int64_t k = 0; k < bins; ++k) power[k] = std::norm(spec[k]);
        for (int64_t m = 0; m < mels; ++m) {
          double s = 0.0;
          for (int64_t k = lo[m]; k < hi[m]; ++k) s += double(fp[k * mels + m]) * power[k];
          mel[m * frames + f] = std::log10(std::max(s, 1e-10));
        }
      }
    });
    const double top = *std::max_element(mel.begin(), mel.end());
    float* yb = yp + b * mels * frames;
    for (int64_t i = 0; i < mels * frames; ++i) yb[i] = float((std::max(mel[i], top - 8.0) + 4.0) / 4.0);
  }
  out[0] = std::move(y);
}

void register_audio_ops(Registry& r) {
  r.add(TENSORVM_OP("log_mel", log_mel), "audio",
        {p_tensor("audio"), p_tensor("filters"), p_int("n_fft", 400), p_int("hop_length", 160), p_int("n_samples",
         480000)}, {"Tensor"},
        "Whisper's log-mel spectrogram (transformers' WhisperFeatureExtractor): each row of f32 audio "
        "[batch, samples] padded with zeros or cut to n_samples, STFT (periodic Hann window, reflect padding "
        "of n_fft / 2, power spectrum) -> filters f32 [n_fft / 2 + 1, n_mels] -> log10 of max(., 1e-10), "
        "floored at the row's max - 8, then (x + 4) / 4 -> f32 [batch, n_mels, n_samples / hop_length].");
}

}  // namespace ops
