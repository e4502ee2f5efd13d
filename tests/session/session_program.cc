// A program of a user's kind for the session tests: its own model and loop,
// memprof through <memprof/memprof.h> alone. argv[1] names what it does:
//   train OUT       a 4-step loop, every mark, a scope per layer: exit 0
//   frozen OUT      the same with fc1 and norm frozen (requires_grad
//                   false), AdamW still given every parameter: exit 0
//   accumulate OUT  the same loop accumulating gradients over 4
//                   micro-batches of 4 samples per step: exit 0
//   oom OUT         the same under a 64 KiB limit: the forward runs out;
//                   caught, then Finish(): exit 3
//   limit-from-env OUT  as oom, the limit left to $MEMPROF_MEMORY_LIMIT
//   oom-uncaught OUT  as oom, the error left to leave the session's scope
//                   (main catches it): exit 3, no report written
//   throw-uncaught OUT  2 steps, then an exception nothing catches:
//                   std::terminate, SIGABRT
//   no-optimizer OUT  the train loop without Track(optimizer): exit 0
//   tied OUT        the train loop with fc2.weight registered a second time
//                   (a tied weight), the model tracked twice, fc1 and
//                   fc2.weight once more: exit 0
//   tensor-first    a tensor made before the session, then Track(model)
//   two-sessions    a second session while the first exists
//   phase-order     Backward() before Forward()
//   nested-phase    Forward() while Inputs() is still open
//   no-marks        a step with no phase marks
//   rmsprop         Track(an RMSprop optimizer)
//   recompute-outside  Recompute() outside Backward()
//   finish-twice    Finish() twice
//   no-finish OUT   a 2-step loop without Finish(): the session, declared
//                   first, finishes after the model and optimizer are gone
//   bad-device      SessionOptions::device "tpu"
//   finish-in-step  Finish() inside a step, after its Backward()
//   scope-order     Scope("a") ended while Scope("b") inside it is open
//   forward-without-backward  a second micro-batch's Forward(), then
//                   OptimizerStep() without its Backward()
//   negative-micro-batch  SessionOptions::micro_batch -5
//   unwritable-out  SessionOptions::out_dir under /dev/null
// A misuse exits 4 after printing "usage: <the error>" on standard error.
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <memprof/memprof.h>
#include <torch/torch.h>

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(32, 64))),
        norm(register_module("norm", torch::nn::BatchNorm1d(64))),
        fc2(register_module("fc2", torch::nn::Linear(64, 10))) {}
  torch::Tensor forward(memprof::Session& session, const torch::Tensor& x) {
    torch::Tensor h;
    {
      auto scope = session.Scope("fc1");
      h = torch::relu(norm(fc1(x)));
    }
    auto scope = session.Scope("fc2");
    return torch::log_softmax(fc2(h), 1);
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d norm;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

// 16 samples per optimizer step, in `micro_batches` micro-batches whose
// gradients accumulate (each loss divided by their number).
void Train(memprof::Session& session, Net& net, torch::optim::Optimizer& opt,
           int steps, int micro_batches = 1) {
  for (int i = 0; i < steps; ++i) {
    auto step = session.Step();
    double loss_value = 0;
    for (int m = 0; m < micro_batches; ++m) {
      torch::Tensor x, y, loss;  // freed before the next micro-batch
      {
        auto mark = session.Inputs();
        x = torch::randn({16 / micro_batches, 32});
        y = torch::randint(0, 10, {16 / micro_batches});
        session.TrackInputs({x, y});
      }
      {
        auto mark = session.Forward();
        loss = torch::nll_loss(net->forward(session, x), y);
        if (micro_batches > 1) loss = loss / micro_batches;
      }
      {
        auto mark = session.Backward();
        loss.backward();
      }
      loss_value = loss.item<double>();
    }
    {
      auto mark = session.OptimizerStep();
      opt.step();
    }
    {
      auto mark = session.ZeroGrad();
      opt.zero_grad();
    }
    step.Loss(loss_value);
  }
}

memprof::SessionOptions Options(int argc, char** argv) {
  memprof::SessionOptions options;
  options.name = "session-program";
  options.quiet = true;
  if (argc > 2) options.out_dir = argv[2];
  const std::string what = argv[1];
  if (what == "bad-device") options.device = "tpu";
  // Over the weights (12 KiB), under the model state with AdamW (47 KiB).
  if (what == "oom" || what == "oom-uncaught") {
    options.memory_limit_bytes = 40 << 10;
  }
  if (what == "negative-micro-batch") options.micro_batch = -5;
  if (what == "unwritable-out") options.out_dir = "/dev/null/memprof-out";
  return options;
}

int Run(const std::string& what, int argc, char** argv) {
  if (what == "tensor-first") {
    Net net;
    memprof::Session session(Options(argc, argv));
    session.Track(*net);
    return 0;
  }
  memprof::Session session(Options(argc, argv));
  Net net;
  if (what == "tied") {
    net->register_parameter("fc2_weight_again", net->fc2->weight);
    session.Track(*net);
    session.Track(*net->fc1);
    session.TrackParameters({net->fc2->weight});
  }
  if (what == "frozen") {
    for (auto& p : net->fc1->parameters()) p.set_requires_grad(false);
    for (auto& p : net->norm->parameters()) p.set_requires_grad(false);
  }
  torch::optim::AdamW optimizer(net->parameters(), 1e-3);
  session.Track(*net);
  if (what == "rmsprop") {
    torch::optim::RMSprop rmsprop(net->parameters(), 1e-3);
    session.Track(rmsprop);
    return 0;
  }
  if (what == "no-optimizer") {
    Train(session, net, optimizer, 4);
    session.Finish();
    return 0;
  }
  session.Track(optimizer);
  if (what == "train" || what == "frozen" || what == "tied") {
    Train(session, net, optimizer, 4);
    session.Finish();
    return 0;
  }
  if (what == "one-step") {
    Train(session, net, optimizer, 1);
    session.Finish();
    return 0;
  }
  if (what == "accumulate") {
    Train(session, net, optimizer, 4, /*micro_batches=*/4);
    session.Finish();
    return 0;
  }
  if (what == "oom-uncaught") {
    Train(session, net, optimizer, 4);
    return 0;
  }
  if (what == "throw-uncaught") {
    Train(session, net, optimizer, 2);
    throw std::logic_error("the data loader ran dry\nits detail");
  }
  if (what == "oom" || what == "limit-from-env") {
    try {
      Train(session, net, optimizer, 4);
    } catch (const c10::OutOfMemoryError&) {
      session.Finish();
      return 3;
    }
    session.Finish();
    return 0;
  }
  if (what == "two-sessions") {
    memprof::Session second;
    return 0;
  }
  if (what == "no-finish") {
    Train(session, net, optimizer, 2);
    return 0;
  }
  if (what == "no-steps") {
    session.Finish();
    return 0;
  }
  if (what == "finish-twice") {
    Train(session, net, optimizer, 1);
    session.Finish();
    session.Finish();
    return 0;
  }
  auto step = session.Step();
  if (what == "phase-order") {
    { auto mark = session.Backward(); }
    { auto mark = session.Forward(); }
  } else if (what == "nested-phase") {
    auto inputs = session.Inputs();
    auto forward = session.Forward();
  } else if (what == "recompute-outside") {
    auto forward = session.Forward();
    auto recompute = session.Recompute();
  } else if (what == "finish-in-step") {
    { auto mark = session.Forward(); }
    { auto mark = session.Backward(); }
    session.Finish();
  } else if (what == "scope-order") {
    auto forward = session.Forward();
    auto a = session.Scope("a");
    auto b = session.Scope("b");
    { auto moved = std::move(a); }  // a ends here, b still open
  } else if (what == "forward-without-backward") {
    { auto mark = session.Forward(); }
    { auto mark = session.Backward(); }
    { auto mark = session.Forward(); }
    { auto mark = session.OptimizerStep(); }
  } else if (what != "no-marks") {
    std::fprintf(stderr, "unknown case %s\n", what.c_str());
    return 64;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: session_program CASE [OUT]\n");
    return 64;
  }
  try {
    return Run(argv[1], argc, argv);
  } catch (const memprof::UsageError& e) {
    std::fprintf(stderr, "usage: %s\n", e.what());
    return 4;
  } catch (const c10::OutOfMemoryError& e) {
    std::fprintf(stderr, "uncaught: %s\n", e.what());
    return 3;
  }
}
