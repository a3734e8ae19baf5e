// The small model shape of the generator's hand computations (tests/generator_test.cc,
// tests/plan_cost_model_test.cc): s = 8, b = 2, h = 16, a = 4, f = 4h = 64, V = 100, GPT (GeLU,
// dropout), bf16; s·b·h = 256.
#pragma once

#include "instances/generator/model_shape.h"

namespace optpipe::test_support {

inline gen::ModelShape small_gpt() {
  gen::ModelShape m;
  m.name = "small";
  m.layers = 4;
  m.hidden = 16;
  m.heads = 4;
  m.ffn = 64;
  m.vocab = 100;
  m.seq = 8;
  m.micro_batch = 2;
  return m;
}

}  // namespace optpipe::test_support
