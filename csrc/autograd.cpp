// Autograd kernels written in C++ for the ops on the augmentation chain's hot path (resized_crop,
// normalize, flip, and the ops without a gradient: augment, the color ops that quantize,
// resized_crop_ragged). The other ops keep torch.library.register_autograd in torchaug/_ops/.
//
// Why in C++: register_autograd puts a Python function on every call of the op, gradients wanted
// or not (it checks grad mode and walks the arguments with pytree, then redispatches): on the CI
// machine ~5 us a call of flip under no_grad, ~17 us a call of augment with grad mode on; the
// RandAugment chain's host time per call on an H100 went 0.220 -> 0.195 ms with these. Here a call
// that needs no gradient costs one redispatch, and the fake kernels stay in Python.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include "ops/common.h"

#include <string>
#include <vector>

namespace torchaug {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

void redispatch_below_autograd(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  at::AutoDispatchBelowADInplaceOrView guard;
  op.redispatchBoxed(ks & c10::after_ADInplaceOrView_keyset, stack);
}

std::string not_differentiable_message(const std::string& name) {
  if (name == "torchaug::resized_crop_ragged") {
    return name + " is not differentiable with respect to data; stack the images and use torchaug::resized_crop for gradients";
  }
  return name + " is not differentiable with respect to images";
}

// The op run below autograd; its floating outputs get a backward node that raises.
struct NotDifferentiable : public torch::autograd::Function<NotDifferentiable> {
  static variable_list forward(AutogradContext* ctx, at::TensorList inputs, const c10::OperatorHandle* op,
                               c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    (void)inputs;  // the tensors that require a gradient: the node's edges
    ctx->saved_data["name"] = op->schema().name();
    redispatch_below_autograd(*op, ks, stack);
    variable_list out;
    const size_t n = op->schema().returns().size();
    for (size_t i = stack->size() - n; i < stack->size(); ++i) {
      if ((*stack)[i].isTensor()) out.push_back((*stack)[i].toTensor());
    }
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    (void)grads;
    TORCH_CHECK(false, not_differentiable_message(ctx->saved_data["name"].toStringRef()));
  }
};

// Autograd kernel of an op without a gradient: with no input requiring one (the usual case), one
// redispatch; otherwise the outputs are tied to a node whose backward raises (the error comes
// when a gradient is asked for, as with register_autograd).
void not_differentiable_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  std::vector<at::Tensor> need;
  if (at::GradMode::is_enabled()) {
    const size_t n = op.schema().arguments().size();
    for (size_t i = stack->size() - n; i < stack->size(); ++i) {
      const c10::IValue& v = (*stack)[i];
      if (v.isTensor() && v.toTensor().defined() && v.toTensor().requires_grad()) need.push_back(v.toTensor());
    }
  }
  if (need.empty()) {
    redispatch_below_autograd(op, ks, stack);
    return;
  }
  const variable_list out = NotDifferentiable::apply(at::TensorList(need), &op, ks, stack);
  const size_t n = op.schema().returns().size();
  size_t k = 0;
  for (size_t i = stack->size() - n; i < stack->size(); ++i) {
    if ((*stack)[i].isTensor()) (*stack)[i] = out[k++];
  }
}

// The typed dispatcher handle of torchaug::resized_crop (looked up once), for the calls below autograd.
const auto& resized_crop_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchaug::resized_crop", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef, int64_t, bool,
                                               const std::optional<at::Tensor>&, const std::optional<at::Tensor>&,
                                               const std::optional<at::Tensor>&, std::optional<at::ScalarType>,
                                               std::optional<at::MemoryFormat>)>();
  return op;
}

// resized_crop: the gradient with respect to images is _resized_crop_backward (a scatter of the
// output gradient with the forward's weights, divided by std when normalized).
struct ResizedCrop : public torch::autograd::Function<ResizedCrop> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& images, const at::Tensor& boxes,
                            c10::SymIntArrayRef out_size, int64_t interpolation, bool antialias,
                            const std::optional<at::Tensor>& flip, const std::optional<at::Tensor>& mean,
                            const std::optional<at::Tensor>& std, std::optional<at::ScalarType> out_dtype,
                            std::optional<at::MemoryFormat> memory_format) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor out = resized_crop_op().call(images, boxes, out_size, interpolation, antialias, flip, mean, std, out_dtype, memory_format);
    ctx->saved_data["input_size"] = images.sym_sizes();
    ctx->saved_data["dtype"] = images.scalar_type();
    ctx->saved_data["channels_last"] =
        images.dim() == 4 && images.suggest_memory_format() == at::MemoryFormat::ChannelsLast;
    ctx->saved_data["interpolation"] = interpolation;
    ctx->saved_data["antialias"] = antialias;
    ctx->saved_data["flip"] = flip;
    ctx->saved_data["std"] = std;
    ctx->save_for_backward({boxes});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("torchaug::_resized_crop_backward", "")
                         .typed<at::Tensor(const at::Tensor&, const at::Tensor&, c10::SymIntArrayRef, int64_t, bool,
                                           const std::optional<at::Tensor>&, const std::optional<at::Tensor>&, bool)>();
    const auto saved = ctx->get_saved_variables();
    std::vector<c10::SymInt> input_size;
    for (const auto& s : ctx->saved_data["input_size"].toListRef()) input_size.push_back(s.toSymInt());
    const auto dtype = ctx->saved_data["dtype"].toScalarType();
    const auto flip = ctx->saved_data["flip"].toOptional<at::Tensor>();
    const auto std = ctx->saved_data["std"].toOptional<at::Tensor>();
    at::Tensor gi = op.call(grads[0].to(dtype), saved[0], input_size, ctx->saved_data["interpolation"].toInt(),
                            ctx->saved_data["antialias"].toBool(), flip, std, ctx->saved_data["channels_last"].toBool());
    return {gi, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }

};

at::Tensor resized_crop_autograd(const at::Tensor& images, const at::Tensor& boxes, c10::SymIntArrayRef out_size,
                                 int64_t interpolation, bool antialias, const std::optional<at::Tensor>& flip,
                                 const std::optional<at::Tensor>& mean, const std::optional<at::Tensor>& std,
                                 std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  if (!(at::GradMode::is_enabled() && images.requires_grad())) {  // no gradient wanted: one redispatch
    at::AutoDispatchBelowADInplaceOrView guard;
    return resized_crop_op().call(images, boxes, out_size, interpolation, antialias, flip, mean, std, out_dtype, memory_format);
  }
  return ResizedCrop::apply(images, boxes, out_size, interpolation, antialias, flip, mean, std, out_dtype, memory_format);
}

// Whether a call of an op with these tensor arguments records a node: grad mode on and one of them
// requiring a gradient (what register_autograd decides from the same arguments).
bool wants_gradient(std::initializer_list<const at::Tensor*> inputs) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : inputs) {
    if (t->defined() && t->requires_grad()) return true;
  }
  return false;
}

const auto& normalize_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchaug::normalize", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                               std::optional<at::ScalarType>, std::optional<at::MemoryFormat>)>();
  return op;
}

// normalize: d/dx (x - mean) / std = 1 / std (a floating input is not rescaled; an integer one has
// no gradient), in the images' dtype and memory format; none for mean and std.
struct Normalize : public torch::autograd::Function<Normalize> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                            std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor out = normalize_op().call(images, mean, std, out_dtype, memory_format);
    ctx->saved_data["dtype"] = images.scalar_type();
    ctx->saved_data["memory_format"] = image_memory_format(images);
    ctx->save_for_backward({std});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const at::Tensor std = ctx->get_saved_variables()[0];
    const at::Tensor& g = grads[0];
    const at::Tensor gi = (g / std.reshape({std.size(0), std.size(1), 1, 1}).to(g.scalar_type()))
                              .to(ctx->saved_data["dtype"].toScalarType())
                              .contiguous(ctx->saved_data["memory_format"].toMemoryFormat());
    return {gi, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor normalize_autograd(const at::Tensor& images, const at::Tensor& mean, const at::Tensor& std,
                              std::optional<at::ScalarType> out_dtype, std::optional<at::MemoryFormat> memory_format) {
  if (!wants_gradient({&images, &mean, &std})) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return normalize_op().call(images, mean, std, out_dtype, memory_format);
  }
  return Normalize::apply(images, mean, std, out_dtype, memory_format);
}

const auto& flip_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("torchaug::flip", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  return op;
}

// flip: its own inverse, so the gradient is the output gradient flipped back (through the op with
// autograd, so that a second derivative is one more flip).
struct Flip : public torch::autograd::Function<Flip> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& images, const at::Tensor& horizontal,
                            const at::Tensor& vertical) {
    at::AutoDispatchBelowADInplaceOrView guard;
    at::Tensor out = flip_op().call(images, horizontal, vertical);
    ctx->save_for_backward({horizontal, vertical});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    return {flip_op().call(grads[0], saved[0], saved[1]), at::Tensor(), at::Tensor()};
  }
};

at::Tensor flip_autograd(const at::Tensor& images, const at::Tensor& horizontal, const at::Tensor& vertical) {
  if (!wants_gradient({&images, &horizontal, &vertical})) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return flip_op().call(images, horizontal, vertical);
  }
  return Flip::apply(images, horizontal, vertical);
}

}  // namespace

TORCH_LIBRARY_IMPL(torchaug, Autograd, m) {
  m.impl("resized_crop", &resized_crop_autograd);
  m.impl("normalize", &normalize_autograd);
  m.impl("flip", &flip_autograd);
  for (const char* name : {"augment", "resized_crop_ragged", "adjust_hue", "posterize", "solarize_add", "autocontrast",
                           "equalize", "color_program"}) {
    m.impl(name, torch::CppFunction::makeFromBoxedFunction<&not_differentiable_kernel>());
  }
}

}  // namespace torchaug
