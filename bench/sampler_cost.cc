// sampler_cost — what sampling one logits row costs, per path, on a real
// model's vocabulary (Gemma 3's 262,144 entries is where it shows): the greedy
// fast path, the top-k path against llama.cpp's chain over the whole row, and
// the same 16 rows sampled one after another against all at once on the
// OpenMP team the decode uses (LlamaEngine::SampleMany). Rows are random
// (logits ~ N(0, 3)), 16 of them, 1 MiB each for Gemma.
//
//   build/sampler_cost --model .deps/models/gemma-3-270m.gguf [--threads 2]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "outpost/engine/model.h"
#include "outpost/engine/sampler.h"

using namespace outpost::engine;

namespace {

constexpr int kRows = 16;

template <typename F>
double MicrosPerRow(const std::vector<std::vector<float>>& rows, int reps, F fn) {
  for (int w = 0; w < 2; ++w) fn(rows);  // warm
  const auto t0 = std::chrono::steady_clock::now();
  for (int r = 0; r < reps; ++r) fn(rows);
  const auto dt = std::chrono::steady_clock::now() - t0;
  return std::chrono::duration<double, std::micro>(dt).count() / (reps * kRows);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path;
  int threads = 2, reps = 40;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--model") && i + 1 < argc)
      path = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc)
      threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: sampler_cost --model FILE.gguf [--threads N] [--reps N]\n");
      return 2;
    }
  }
  if (path.empty() || threads < 1 || reps < 1) {
    std::fprintf(stderr, "sampler_cost: --model is required; --threads and --reps are >= 1\n");
    return 2;
  }
  InstallLlamaLogger(false);
  ModelOptions mo;
  mo.path = path;
  auto model = Model::Load(mo);
  if (!model.ok()) {
    std::fprintf(stderr, "sampler_cost: %s\n", model.status().ToString().c_str());
    return 1;
  }
  const Model& m = **model;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<std::vector<float>> rows(kRows, std::vector<float>(m.VocabSize()));
  for (auto& r : rows)
    for (auto& v : r) v = normal(rng);
  std::printf("vocabulary %d, %d rows, %d threads for the parallel column\n\n", m.VocabSize(),
              kRows, threads);
  std::printf(
      "| sampling | reference: llama.cpp chain, whole row (us/row) | Outpost, one row after "
      "another | Outpost, 16 rows on %d threads |\n|---|---|---|---|\n",
      threads);

  struct Case {
    const char* name;
    SamplingParams p;
  };
  std::vector<Case> cases;
  SamplingParams greedy;
  greedy.temperature = 0;
  cases.push_back({"greedy", greedy});
  for (int k : {40, 1000}) {
    SamplingParams p;
    p.temperature = 0.8f;
    p.top_k = k;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.seed = 1;
    p.has_seed = true;
    cases.push_back({k == 40 ? "top_k 40, top_p 0.95, min_p 0.05, T 0.8"
                             : "top_k 0 (cut at 1000), top_p 0.95, T 0.8",
                     p});
  }
  for (auto& c : cases) {
    std::vector<std::unique_ptr<Sampler>> fast, slow;
    for (int i = 0; i < kRows; ++i) {
      fast.push_back(std::move(Sampler::Create(m, c.p)).value());
      slow.push_back(Sampler::WithoutFastPathForTest(m, c.p));
    }
    volatile Token sink = 0;
    const double ref = MicrosPerRow(rows, reps, [&](const auto& rs) {
      for (int i = 0; i < kRows; ++i) sink = slow[i]->SampleWholeRow(rs[i].data());
    });
    const double serial = MicrosPerRow(rows, reps, [&](const auto& rs) {
      for (int i = 0; i < kRows; ++i) sink = fast[i]->SampleRow(rs[i].data());
    });
    const double parallel = MicrosPerRow(rows, reps, [&](const auto& rs) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
      for (int i = 0; i < kRows; ++i) sink = fast[i]->SampleRow(rs[i].data());
    });
    std::printf("| %s | %.0f | %.0f (%.2fx) | %.0f (%.2fx) |\n", c.name, ref, serial, ref / serial,
                parallel, ref / parallel);
  }
  return 0;
}
