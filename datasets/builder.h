// GraphBuilder: a generator writes only the forward model (ops with shapes, formula costs,
// variables, name scopes); build_training_graph() derives the backward pass (reverse mode,
// gradient accumulation with AddN) and one ApplyAdam update per variable.
//
// Conventions. Shapes are row-major, images NHWC (TensorFlow's default), conv filters
// (Kh, Kw, Cin, Cout). Flops count a multiply-add as 2 flops (MatMul = 2mnk). bytes_accessed
// of an op = bytes of its inputs + its outputs (+ extra, e.g. optimizer state).
// Memory: a variable is a "VariableV2" op holding param_bytes = the weight bytes and
// optimizer_bytes = 2 x the weight bytes (Adam's two moments; 0 in an inference graph), both
// resident, followed by an "Identity" read op; the variable, its read and its ApplyAdam share
// the colocation group named after the variable.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/graph.h"

namespace gdp::datasets {

// A handle to a forward tensor: output `index` of recorded forward op `op`.
struct Tensor {
  int32_t op = -1;
  int32_t index = 0;
  bool valid() const { return op >= 0; }
};

enum class Padding : uint8_t { same, valid };

// ---- Formula helpers (standard counts; multiply-add = 2 flops) ----
int64_t numel(const std::vector<int64_t>& shape);
int64_t tensor_bytes(const std::vector<int64_t>& shape, DType dtype);
double matmul_flops(int64_t m, int64_t n, int64_t k);  // 2mnk
double conv2d_flops(int64_t n, int64_t ho, int64_t wo, int64_t kh, int64_t kw, int64_t cin,
                    int64_t cout);  // 2*N*Ho*Wo*Kh*Kw*Cin*Cout
// prefix + decimal k ("t" + 7 -> "t7"), for step and layer scopes. (Out of line: GCC 12
// warns falsely (-Wrestrict) on an inlined `"t" + std::to_string(k)`.)
std::string indexed(const std::string& prefix, int64_t k);
// Output size of a convolution / pooling window along one spatial axis.
int64_t conv_out_size(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, Padding p);

// Per-element flop costs used by the helpers.
constexpr double kFlopsAdd = 1, kFlopsMul = 1, kFlopsRelu = 1, kFlopsSigmoid = 4, kFlopsTanh = 4,
                 kFlopsGelu = 8, kFlopsExp = 4, kFlopsSoftmax = 5, kFlopsNorm = 8, kFlopsAdam = 12;

// One gradient op of a forward op. It consumes the upstream gradients of the forward op's
// outputs (those that receive a gradient) and the saved forward tensors listed here, and
// produces the gradient of forward input `input` (same shape and dtype as that input).
struct GradSpec {
  std::string type;                    // e.g. "MatMul", "SigmoidGrad", "Conv2DBackpropFilter"
  int32_t input = 0;                   // forward input whose gradient this op produces
  std::vector<int32_t> saved_inputs;   // forward inputs it reads
  std::vector<int32_t> saved_outputs;  // forward outputs it reads
  double flops = 0;
  int64_t temp_bytes = 0;
};

// A forward op as recorded by a generator.
struct OpSpec {
  std::string type;  // "MatMul", "Conv2D", ...
  std::string name;  // relative to the current scope; made unique (_1, _2, ...)
  std::vector<Tensor> inputs;
  std::vector<TensorSpec> outputs;  // bytes computed from shape and dtype when 0
  double flops = 0;
  double extra_bytes = 0;  // accessed beyond inputs + outputs
  int64_t temp_bytes = 0;
  std::vector<GradSpec> grads;  // empty: no gradient flows through this op
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string graph_name, DType dtype = DType::f32);

  DType dtype() const { return dtype_; }

  // ---- Name scopes ("encoder/layer_2/...") ----
  void push_scope(const std::string& name);
  void pop_scope();
  std::string scope() const;  // current full scope ("" at top level)
  class Scope {               // RAII: { GraphBuilder::Scope s(b, "layer_0"); ... }
   public:
    Scope(GraphBuilder& b, const std::string& name) : b_(b) { b_.push_scope(name); }
    ~Scope() { b_.pop_scope(); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    GraphBuilder& b_;
  };

  // ---- Raw recording ----
  Tensor record(OpSpec spec);  // returns output 0
  static Tensor output(Tensor t, int32_t index) { return Tensor{t.op, index}; }
  const std::vector<int64_t>& shape(Tensor t) const;
  DType dtype_of(Tensor t) const;
  int64_t bytes(Tensor t) const;
  bool requires_grad(Tensor t) const;  // depends on a variable
  int32_t num_forward_ops() const { return static_cast<int32_t>(fwd_.size()); }

  // ---- Sources ----
  // Data from the input pipeline (op "IteratorGetNext"); no gradient.
  Tensor input(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::f32);
  // A constant (op "Const"); no gradient.
  Tensor constant(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::f32);
  // A trainable variable: VariableV2 (+ Identity read), trained with Adam. Returns the read.
  Tensor variable(const std::string& name, std::vector<int64_t> shape);

  // ---- Dense algebra ----
  // a (M, K) x b (K, N) -> (M, N), with transposes applied to the stored shapes.
  Tensor matmul(Tensor a, Tensor b, bool transpose_a = false, bool transpose_b = false,
                const std::string& name = "MatMul");
  // a (..., M, K) x b (..., K, N) -> (..., M, N); leading dims equal (batch).
  Tensor batch_matmul(Tensor a, Tensor b, bool adj_a = false, bool adj_b = false,
                      const std::string& name = "BatchMatMul");
  // x (..., C) + b (C)
  Tensor bias_add(Tensor x, Tensor b, const std::string& name = "BiasAdd");
  // Element-wise binary ops with numpy broadcasting (output = broadcast shape).
  Tensor add(Tensor a, Tensor b, const std::string& name = "Add");
  Tensor sub(Tensor a, Tensor b, const std::string& name = "Sub");
  Tensor mul(Tensor a, Tensor b, const std::string& name = "Mul");
  Tensor add_n(const std::vector<Tensor>& xs, const std::string& name = "AddN");
  // Element-wise unary op; grad type "<type>Grad" reading the output (or input).
  Tensor unary(const std::string& type, Tensor x, double flops_per_elt, bool grad_reads_output,
               const std::string& name = "");
  Tensor sigmoid(Tensor x, const std::string& name = "Sigmoid");
  Tensor tanh(Tensor x, const std::string& name = "Tanh");
  Tensor relu(Tensor x, const std::string& name = "Relu");
  Tensor gelu(Tensor x, const std::string& name = "Gelu");
  Tensor dropout(Tensor x, const std::string& name = "Dropout");  // mask * x (training)
  Tensor softmax(Tensor x, const std::string& name = "Softmax");  // over the last axis
  Tensor layer_norm(Tensor x, Tensor gamma, Tensor beta, const std::string& name = "LayerNorm");
  // NHWC batch norm with scale/offset variables (C).
  Tensor batch_norm(Tensor x, Tensor gamma, Tensor beta,
                    const std::string& name = "FusedBatchNorm");

  // ---- Convolutions and pooling (NHWC) ----
  // x (N, H, W, Cin), w (Kh, Kw, Cin, Cout) -> (N, Ho, Wo, Cout).
  Tensor conv2d(Tensor x, Tensor w, int64_t stride_h, int64_t stride_w, Padding p,
                int64_t dilation_h = 1, int64_t dilation_w = 1, const std::string& name = "Conv2D");
  // x (N, H, W, C), w (Kh, Kw, C, M) -> (N, Ho, Wo, C*M).
  Tensor depthwise_conv2d(Tensor x, Tensor w, int64_t stride, Padding p, int64_t dilation = 1,
                          const std::string& name = "DepthwiseConv2dNative");
  Tensor max_pool(Tensor x, int64_t k, int64_t stride, Padding p,
                  const std::string& name = "MaxPool");
  Tensor avg_pool(Tensor x, int64_t k, int64_t stride, Padding p,
                  const std::string& name = "AvgPool");

  // ---- Shape and reduction ----
  Tensor reshape(Tensor x, std::vector<int64_t> shape, const std::string& name = "Reshape");
  Tensor transpose(Tensor x, const std::vector<int32_t>& perm,
                   const std::string& name = "Transpose");
  Tensor concat(const std::vector<Tensor>& xs, int32_t axis, const std::string& name = "ConcatV2");
  std::vector<Tensor> split(Tensor x, int32_t axis, int32_t parts,
                            const std::string& name = "Split");
  Tensor slice(Tensor x, int32_t axis, int64_t begin, int64_t size,
               const std::string& name = "Slice");
  // Mean over the given axes (removed from the shape).
  Tensor reduce_mean(Tensor x, const std::vector<int32_t>& axes, const std::string& name = "Mean");
  Tensor reduce_sum(Tensor x, const std::vector<int32_t>& axes, const std::string& name = "Sum");

  // ---- Embeddings and losses ----
  // table (V, D), ids (...) int -> (..., D). Gradient: an UnsortedSegmentSum into a dense
  // (V, D) gradient (as TensorFlow densifies IndexedSlices before the optimizer).
  Tensor embedding_lookup(Tensor table, Tensor ids, const std::string& name = "GatherV2");
  // logits (B, C), labels (B) int -> per-example loss (B).
  Tensor softmax_cross_entropy(Tensor logits, Tensor labels,
                               const std::string& name = "SparseSoftmaxCrossEntropyWithLogits");

  // The scalar (or any) tensor whose gradient seeds the backward pass.
  void set_loss(Tensor loss) { loss_ = loss; }

  // Forward ops + backward ops (phase backward) + one ApplyAdam per variable (phase
  // update). Finalized. Throws InputError when no loss was set.
  Graph build_training_graph() const;
  // Forward ops only (inference graph). Finalized.
  Graph build_forward_graph() const;

  int64_t parameter_count() const;  // elements over all variables
  double forward_flops() const;     // sum over recorded forward ops

 private:
  struct FwdOp {
    Op op;  // phase forward, scoped name, outputs, costs
    std::vector<Tensor> inputs;
    std::vector<GradSpec> grads;
    std::vector<bool> out_requires_grad;
    int32_t variable = -1;  // index into vars_ when this is the read op
  };
  struct Var {
    std::string name;                   // full scoped name, the colocation group
    int32_t var_op = -1, read_op = -1;  // forward op indices
    int64_t bytes = 0, elements = 0;
  };

  std::string unique_name(const std::string& base);
  Tensor elementwise_binary(const std::string& type, Tensor a, Tensor b, const std::string& name);
  Tensor pool(const std::string& type, Tensor x, int64_t k, int64_t stride, Padding p,
              const std::string& name);
  Tensor reduce(const std::string& type, Tensor x, const std::vector<int32_t>& axes,
                const std::string& name);
  void check(Tensor t, const char* what) const;
  Graph build(bool training) const;

  std::string graph_name_;
  DType dtype_;
  std::vector<std::string> scopes_;
  std::vector<FwdOp> fwd_;
  std::vector<Var> vars_;
  std::unordered_map<std::string, int32_t> name_counts_;  // for unique names
  Tensor loss_;
};

}  // namespace gdp::datasets
