"""Writes the ONNX model the C API test reads container outputs from (tests/runtime/c_api_test.c).

usage: container_model.py OUT.onnx

If(cond): the then branch gives an empty optional sequence and the optional tensor x; the else
branch gives the optional sequence [x + x, -x] and an empty optional tensor. Each output is present
in one branch only, so the plan outputs them as containers (docs/sequences.md).
"""
import sys

import onnx
from onnx import TensorProto, helper

n_ = helper.make_node
seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
opt_seq = helper.make_optional_type_proto(seq_t)
opt_t = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
then_g = helper.make_graph([n_("Optional", [], ["then_o"], type=seq_t), n_("Optional", ["x"], ["then_t"])], "then", [],
                           [helper.make_value_info("then_o", opt_seq), helper.make_value_info("then_t", opt_t)])
else_g = helper.make_graph([n_("Add", ["x", "x"], ["a"]), n_("Neg", ["x"], ["b"]), n_("SequenceConstruct", ["a", "b"], ["s"]),
                            n_("Optional", ["s"], ["else_o"]),
                            n_("Optional", [], ["else_t"], type=helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))],
                           "else", [], [helper.make_value_info("else_o", opt_seq), helper.make_value_info("else_t", opt_t)])
graph = helper.make_graph([n_("If", ["cond"], ["o", "t"], then_branch=then_g, else_branch=else_g)], "containers",
                          [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_value_info("o", opt_seq), helper.make_value_info("t", opt_t)])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), sys.argv[1])
