// attention's two ways through (ops/attention.cpp): the streamed path (the keys read in
// place, for a decode step or a short prefill) and the blocked path for many query rows.
#pragma once

namespace ops {

// Lets (true, the default) or stops attention taking its blocked path, process-wide, so
// that tests and benchmarks can compare the two on the same inputs. Not meant to be
// called while a kernel runs.
void set_attention_blocked(bool on);

}  // namespace ops
