// Checkpoints of `precis train --checkpoint DIR`: a folder with generations of the plan's state
// file (state-STEP.bin, runtime/exec/state_file.h) and manifest.json, which names the current
// generation and records where training stands.
//
// Manifest (JSON, one object): format (1), plan (path), plan_hash (HashBytes of the plan file,
// hex), step (optimizer steps applied), epoch and batch_in_epoch (the epoch of the last step,
// 1-based, and how many of its batches are done), batches_per_epoch, batch_size, samples, seed
// and shuffle (the data order of epoch e is a shuffle seeded by seed and e, so a resume
// mid-epoch replays it), schedule_step and lr (the lr schedule's position: the plan's step
// counter, and the lr of the last step), rng (where random state lives: the plan state only),
// state_file and state_checksum (the trailing checksum of that state file, hex), training (the
// plan's training options: optimizer, hyperparameters, schedule).
//
// Saving is atomic per generation: the new state file is written (itself atomically) under a new
// name, then the manifest is written to a temporary file, flushed and renamed over manifest.json,
// and only then are older state files removed. A save interrupted at any point leaves the
// previous manifest naming its own, intact, state file. Loading refuses, each with a message: a
// folder without a manifest, a malformed or newer manifest, a checkpoint of another plan (plan
// hash), a state file that is missing or does not carry the manifest's checksum, and whatever
// Session::LoadState refuses (truncation, corruption, another plan's state signature).
// Test hook: PRECIS_TEST_KILL_IN_CHECKPOINT=STEP kills the process with SIGKILL halfway through
// writing the manifest of step STEP's checkpoint (after its state file is written).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "precis/session.h"

namespace precis::tools {

struct CheckpointPosition {
  int64_t step = 0, epoch = 0, batch_in_epoch = 0;
  int64_t batches_per_epoch = 0, batch_size = 0, samples = 0;
  uint64_t seed = 0;
  bool shuffle = true;
  double lr = 0;
};

// What checkpoints and export read from a plan file: its hash (HashBytes of the file, as the
// manifest records it) and the training plan's source model and training options (empty in
// inference plans). Errors: unreadable or invalid plan files.
struct PlanFileInfo {
  uint64_t hash = 0;
  std::string training_config;
  std::vector<uint8_t> source_model;
};
StatusOr<PlanFileInfo> ReadPlanFileInfo(const std::string& plan_path);

Status SaveCheckpoint(const Session& s, const std::string& dir, const std::string& plan_path, uint64_t plan_hash,
                      const std::string& training_config, const CheckpointPosition& position);

// Validates the checkpoint in `dir` against the plan (its hash) and loads its state into `s`.
StatusOr<CheckpointPosition> LoadCheckpoint(Session& s, const std::string& dir, uint64_t plan_hash);

}  // namespace precis::tools
