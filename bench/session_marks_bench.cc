// Instructions of the public API's marks per training step, counted by
// callgrind through bench/instructions.sh: a session over a small model
// (two Linear layers, AdamW, tracked), then kSteps steps that open every
// mark a program opens (Step, Inputs, Forward with two named scopes,
// Backward, OptimizerStep, ZeroGrad) around no work at all, in one region
// "marks <steps>". What a step's marks cost is what they add to the
// program's step: instructions.sh prints it beside a gpt-tiny step's.
// Outside valgrind the requests do nothing; the program then only runs.
#include <valgrind/callgrind.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <memprof/memprof.h>
#include <torch/torch.h>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: session_marks_bench OUT_DIR\n");
    return 2;
  }
  constexpr int kWarmUp = 20;
  constexpr int kSteps = 1000;
  memprof::SessionOptions options;
  options.out_dir = argv[1];
  options.quiet = true;
  memprof::Session session(options);
  torch::nn::Sequential net(torch::nn::Linear(64, 64),
                            torch::nn::Linear(64, 8));
  torch::optim::AdamW optimizer(net->parameters(), 1e-3);
  session.Track(*net);
  session.Track(optimizer);
  auto marks = [&session] {
    auto step = session.Step();
    { auto mark = session.Inputs(); }
    {
      auto mark = session.Forward();
      { auto scope = session.Scope("layer.0"); }
      { auto scope = session.Scope("layer.1"); }
    }
    { auto mark = session.Backward(); }
    { auto mark = session.OptimizerStep(); }
    { auto mark = session.ZeroGrad(); }
  };
  for (int i = 0; i < kWarmUp; ++i) marks();
  CALLGRIND_ZERO_STATS;
  for (int i = 0; i < kSteps; ++i) marks();
  const std::string label = "marks " + std::to_string(kSteps);
  CALLGRIND_DUMP_STATS_AT(label.c_str());
  session.Finish();
  return 0;
}
