// Inline LLVM IR for the transcendental functions kernels need (exp, log, tanh, sigmoid, erf):
// plain arithmetic the loop vectorizer can widen, with no calls into libm, so kernel objects
// import nothing.
#pragma once
#include <llvm/IR/IRBuilder.h>

namespace capgraph {

llvm::Value *ir_exp(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *ir_log(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *ir_tanh(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *ir_sigmoid(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *ir_erf(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *ir_pow(llvm::IRBuilder<> &b, llvm::Value *x, llvm::Value *y);

}  // namespace capgraph
