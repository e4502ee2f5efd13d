// Named scopes in the built-in models: each block's forward runs inside a
// scope named as its parameters are ("h.3", "model.layers.0",
// "layer2.1"), so the profiler can attribute what it allocates to it as
// well as to a category (Note [Named scopes] in
// profiler/capture/lifetime_analysis.h). A checkpointed block's rerun in
// backward opens its scope again.
#pragma once

#include <string>

namespace memprof {

// Told when a model's block begins and ends its forward, on the thread
// that runs it. Scopes nest; ExitScope closes the innermost.
class ScopeObserver {
 public:
  virtual ~ScopeObserver() = default;
  virtual void EnterScope(const std::string& name) = 0;
  virtual void ExitScope() = 0;
};

// Process-wide; nullptr (the default) observes nothing.
void SetScopeObserver(ScopeObserver* observer);

// The observer's scope `name` for this object's lifetime (the observer set
// when it was made).
class ModelScope {
 public:
  explicit ModelScope(const std::string& name);
  ~ModelScope();
  ModelScope(const ModelScope&) = delete;
  ModelScope& operator=(const ModelScope&) = delete;

 private:
  ScopeObserver* observer_;
};

}  // namespace memprof
