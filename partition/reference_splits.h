// The splits that stage partitioning measures itself against (issue 22), and splits as text.
//
//   uniform    as even as possible; when the layers do not divide, the extra layers go to the
//              middle stages (1, 2, ..., then wrapping), as the generator suggests for --split.
//   default    the generator's own split (gen::split_layers): even, else the Zero Bubble split
//              (first and last stage one layer fewer, when layers + 2 divide), else none.
//   megatron   Megatron-LM's usual first/last adjustment (--decoder-first-pipeline-num-layers /
//              --decoder-last-pipeline-num-layers, as with --account-for-embedding-in-pipeline-split
//              and --account-for-loss-in-pipeline-split): the embedding and the LM head count as
//              one layer each, layers + 2 are split as above, and the first and the last stage
//              lose that one layer. Megatron itself requires layers + 2 to divide; here the rest
//              goes to the middle stages.
// Each is O(S).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace optpipe::partition {

std::vector<int> uniform_split(int layers, int stages);
std::optional<std::vector<int>> generator_default_split(int layers, int stages);
// nullopt for one stage, or when the first or last stage would get fewer than 0 layers.
std::optional<std::vector<int>> megatron_split(int layers, int stages);

// "2,3,3,2".
std::string split_text(const std::vector<int>& split);

}  // namespace optpipe::partition
