// The two forward forms of a training plan. train_step normalizes BatchNormalization with the
// batch statistics (updating the running statistics, which are plan state named as their ONNX
// initializers) and applies Dropout with a seeded mask; eval_step runs the inference form (running
// statistics, Dropout the identity). Both forms are accepted from ONNX: BatchNormalization in
// inference form (1 output) or training form (training_mode=1, 3 outputs, as torch.onnx.export
// writes in TrainingMode.TRAINING), Dropout with its ratio as an attribute (opset < 12) or an
// input (opset 12+; its training_mode input is ignored: the program decides).
//
// The evaluation graph is a clone of the forward graph made before the training rewrite; the
// plan emitter runs each program over its own graph, sharing state and inputs by name.
// Errors name the node: an unknown Dropout ratio, per-activation BatchNormalization (spatial=0),
// a use of the running-statistics or mask outputs, subgraphs in the forward graph, one value per
// channel in a training batch.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "precis/status.h"

namespace precis::driver {

// Names of the values BatchNormalization nodes read as running mean and variance (inputs 3, 4).
std::set<std::string> RunningStatistics(const ir::Graph& g);

// A copy of `g` (values, constants sharing their buffers, nodes, attributes); Unimplemented for
// graphs with subgraphs.
StatusOr<std::unique_ptr<ir::Graph>> CloneGraph(const ir::Graph& g);

// BatchNormalization to its inference form (1 output), Dropout to Identity.
Status ToEvaluationForm(ir::Graph& g);

struct TrainingForm {
  struct Norm {
    ir::Node* node;  // the BatchNormalizationTraining node (outputs Y, batch mean, batch variance)
    ir::Value *running_mean, *running_var;
    double momentum;  // ONNX's: running = momentum * running + (1 - momentum) * batch
  };
  std::vector<Norm> norms;
  int dropouts = 0;  // DropoutTraining nodes (ratio > 0)
};

// BatchNormalization to BatchNormalizationTraining, Dropout with ratio > 0 to DropoutTraining
// reading the i64 scalars `seed` and `counter` (created as inputs with defaults only when a
// Dropout is active), Dropout with ratio 0 to Identity. Before shape inference.
StatusOr<TrainingForm> ToTrainingForm(ir::Graph& g, int64_t opset, const std::string& seed, const std::string& counter);

// After shape inference: the new running statistics, torch's update (ONNX momentum m; the
// variance update uses the unbiased batch variance, n / (n - 1) times the biased one). Adds to
// `updates` new value name -> running statistic name.
Status AddRunningStatisticUpdates(ir::Graph& g, int64_t opset, const TrainingForm& form, std::map<std::string, std::string>& updates);

}  // namespace precis::driver
