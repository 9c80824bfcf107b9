// One registration function per kernel family; RegisterAllCpuKernels calls them all.
// Adding a family: declare its function here and call it in register.cc.
#pragma once

namespace precis::rt {

class KernelRegistry;

void RegisterAllCpuKernels(KernelRegistry& r);

void RegisterElementwiseKernels(KernelRegistry& r);
void RegisterMatMulKernels(KernelRegistry& r);
void RegisterActivationKernels(KernelRegistry& r);
void RegisterNnKernels(KernelRegistry& r);
void RegisterTensorKernels(KernelRegistry& r);
void RegisterReduceKernels(KernelRegistry& r);
void RegisterLossKernels(KernelRegistry& r);
void RegisterTrainingKernels(KernelRegistry& r);  // internal training operators (training.cc)
void RegisterRecurrentKernels(KernelRegistry& r);  // RNN, GRU, LSTM (rnn.cc)
void RegisterControlFlowKernels(KernelRegistry& r);  // If, Loop, Scan (control_flow.cc)
void RegisterQuantizeKernels(KernelRegistry& r);  // QuantizeLinear, QLinear*, *Integer (quantize.cc)
void RegisterSignalKernels(KernelRegistry& r);  // windows, MelWeightMatrix, DFT, STFT (signal.cc)
void RegisterGridSampleKernels(KernelRegistry& r);  // grid_sample.cc
void RegisterMlKernels(KernelRegistry& r);  // ai.onnx.ml: Binarizer, ArrayFeatureExtractor, TreeEnsemble (ml.cc)
void RegisterImageKernels(KernelRegistry& r);  // RoiAlign, AffineGrid, Col2Im, CenterCropPad, TfIdfVectorizer (image.cc)
void RegisterFusedKernels(KernelRegistry& r);  // FusedElementwise reference (fused.cc)
void RegisterFastFusedKernels(KernelRegistry& r);  // FusedElementwise through generated code (fast_fused.cc)
void RegisterFastKernels(KernelRegistry& r);  // fast kernels (fast_*.cc): elementwise, softmax, norm, transpose
void RegisterDnnlKernels(KernelRegistry& r);  // fast kernels (oneDNN); registered last

}  // namespace precis::rt
