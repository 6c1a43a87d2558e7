// Every schema of torchaug, in one place. Implementations: csrc/cpu/*.cpp (CPU), csrc/cuda/*.cu
// (CUDA); fake kernels and autograd: torchaug/_ops/*.py, except the autograd kernels written in C++
// (csrc/autograd.cpp: resized_crop and the ops without a gradient).
//
// Conventions (CONTRIBUTING.md, the data model): images are (B, C, H, W), uint8 in [0, 255] or floating in [0, 1],
// contiguous or channels_last; per-sample parameters are tensors on the images' device with a
// leading batch dimension; sizes are SymInt[]; interpolation codes are 0 nearest, 1 bilinear,
// 2 bicubic.
#include <torch/library.h>

TORCH_LIBRARY(torchaug, m) {
  // ---- geometry ----
  // Inverse-mapped affine warp: output pixel (x, y) samples input position matrices[b] @ (x, y, 1),
  // pixel centres at integer coordinates; matrices (B, 2, 3), or (B, 3, 3) for a projective warp
  // (the position's first two coordinates divided by its third). fill None: zero padding; fill
  // (B, C): torchvision's fill blending. Output keeps the input's memory format.
  m.def(
      "warp_affine(Tensor images, Tensor matrices, SymInt[] out_size, int interpolation=1, "
      "Tensor? fill=None) -> Tensor");
  m.def(
      "_warp_affine_backward(Tensor grad, Tensor images, Tensor matrices, int interpolation, "
      "Tensor? fill, bool[2] output_mask) -> (Tensor, Tensor)");

  // grid_sample of a batch (align_corners=False, zero padding) with torchvision's fill blending and
  // rounding (_apply_grid_transform), in the images' dtype: output pixel (x, y) of sample b samples
  // where grid[b, y, x] (normalized x, y; (B, H_out, W_out, 2) or (1, H_out, W_out, 2), float32, or
  // float64 for float64 images) points; interpolation 0 nearest, 1 bilinear; fill (B, C) or None
  // (zeros outside). ElasticTransform's sampling.
  m.def("warp_grid(Tensor images, Tensor grid, int interpolation=1, Tensor? fill=None) -> Tensor");

  // torchvision's _get_inverse_affine_matrix per sample, (B, 2, 3) float64: angle, scale (B,) or
  // (1,); translate, shear, center (B, 2) or (1, 2), float64, angle and shear in degrees, center the
  // offset of the centre from the image centre; samples whose angle is a multiple of snap_period
  // degrees (0: none) get exact 0 / +-1 entries, as torchvision's rot90 rotations. pixel_sizes
  // None: the map in coordinates centred on the image (the theta of torchvision's grid);
  // [H, W, OH, OW]: warp_affine's pixel-index matrices from an OH x OW output to an H x W input.
  m.def(
      "_affine_matrices(Tensor angle, Tensor translate, Tensor scale, Tensor shear, Tensor center, "
      "float snap_period=0., int[]? pixel_sizes=None) -> Tensor");

  // Crop boxes (B, 4) int64 [top, left, height, width] of each image resized to out_size, with the
  // optional per-sample horizontal flip and normalize/cast epilogue fused into the same pass:
  //   out = normalize(flip(resize(crop(images))))
  // where each stage rounds to the input dtype exactly as the unfused chain would. interpolation:
  // 0 nearest, 1 bilinear, 2 bicubic, 3 nearest-exact (the other geometric ops take 0 and 1).
  m.def(
      "resized_crop(Tensor images, Tensor boxes, SymInt[] out_size, int interpolation=1, "
      "bool antialias=True, Tensor? flip=None, Tensor? mean=None, Tensor? std=None, "
      "ScalarType? out_dtype=None, MemoryFormat? memory_format=None) -> Tensor");
  m.def(
      "_resized_crop_backward(Tensor grad, Tensor boxes, SymInt[] input_size, int interpolation, "
      "bool antialias, Tensor? flip, Tensor? std, bool channels_last) -> Tensor");
  // The same over a ragged batch: image b is data[offsets[b] : offsets[b] + C*H_b*W_b] with
  // (H_b, W_b) = sizes[b], stored CHW (channels_last_in=False) or HWC (True).
  m.def(
      "resized_crop_ragged(Tensor data, Tensor offsets, Tensor sizes, int channels, "
      "bool channels_last_in, Tensor boxes, SymInt[] out_size, int interpolation=1, "
      "bool antialias=True, Tensor? flip=None, Tensor? mean=None, Tensor? std=None, "
      "ScalarType? out_dtype=None, MemoryFormat? memory_format=None) -> Tensor");

  // RandomResizedCrop parameters from uniform draws rand (B, 22) float64 (see
  // csrc/kernels/geometry.h: random_resized_crop_box), for images of sizes (B, 2) int64 [H, W], or
  // all height x width when sizes is None. Returns boxes (B, 4) int64 [top, left, height, width].
  // rand None: the op draws them from generator, the numbers torch.rand((B, 22), dtype=torch.float64,
  // generator=generator) would give (csrc/ops/common.h: resolve_draws); B is then sizes.size(0), or
  // batch when sizes is None, and like (the images) gives the device.
  m.def(
      "_random_resized_crop_boxes(Tensor? rand, Tensor? sizes, int height, int width, float scale_min, "
      "float scale_max, float ratio_min, float ratio_max, int batch=-1, Tensor? like=None, "
      "Generator? generator=None) -> Tensor");
  // RandomResizedCrop's boxes and then RandomHorizontalFlip's coins from the same generator, in one
  // call: (boxes, flips (B,) bool), what _random_resized_crop_boxes(None, ...) followed by
  // torch.empty(B, dtype=torch.bool).bernoulli_(p, generator) give, with the generator left where
  // those two leave it. On CUDA, with the generator on the op's device, one kernel draws both.
  m.def(
      "_random_resized_crop_boxes_flips(Tensor? sizes, int height, int width, float scale_min, float scale_max, "
      "float ratio_min, float ratio_max, float p, int batch=-1, Tensor? like=None, Generator? generator=None) "
      "-> (Tensor, Tensor)");

  // RandomAffine's parameters (B, 6) float64 [angle, tx, ty, scale, shear x, shear y] from uniform
  // draws rand (B, 6) float64 (csrc/kernels/geometry.h: random_affine_sample): degrees [min, max];
  // translate None or the largest shift as fractions of the width and height (round(uniform(-t W,
  // t W)) pixels); scale None or [min, max]; shear None, [min, max] (x) or [x min, x max, y min,
  // y max]; images of sizes (B, 2) int64 [H, W], or all height x width when sizes is None. rand None:
  // drawn as _random_resized_crop_boxes draws them.
  m.def(
      "_random_affine_params(Tensor? rand, Tensor? sizes, int height, int width, float[] degrees, float[]? translate, "
      "float[]? scale, float[]? shear, int batch=-1, Tensor? like=None, Generator? generator=None) -> Tensor");
  // RandomPerspective's parameters from uniform draws rand (B, 9) float64 (csrc/kernels/geometry.h:
  // random_perspective_sample): coefficients (B, 8) float32, the homography from the output's
  // corners to the input's of each sample, and applies (B,) bool (draw 0 < p). rand None: drawn as
  // _random_resized_crop_boxes draws them.
  m.def(
      "_perspective_params(Tensor? rand, int height, int width, float distortion_scale, float p, int batch=-1, "
      "Tensor? like=None, Generator? generator=None) -> (Tensor, Tensor)");

  // Per-sample flips: horizontal (B,) bool, vertical (B,) bool.
  m.def("flip(Tensor images, Tensor horizontal, Tensor vertical) -> Tensor");

  // ---- convert ----
  // (images * (1/255 if uint8 else 1) - mean) / std, cast to out_dtype (float32 default) and laid
  // out in memory_format (the input's by default), in one pass. mean, std: (B, C) float32.
  m.def(
      "normalize(Tensor images, Tensor mean, Tensor std, ScalarType? out_dtype=None, "
      "MemoryFormat? memory_format=None) -> Tensor");

  // ---- color ----
  // Pointwise color ops with torchvision.transforms.v2.functional semantics (uint8 results
  // truncated where torchvision truncates). Images have 1 or 3 channels; every parameter is a
  // per-sample (B,) tensor (or (1,), broadcast), any real dtype (used as float32).
  m.def("adjust_brightness(Tensor images, Tensor factor) -> Tensor");
  m.def("adjust_contrast(Tensor images, Tensor factor) -> Tensor");
  m.def("adjust_saturation(Tensor images, Tensor factor) -> Tensor");
  m.def("adjust_hue(Tensor images, Tensor factor) -> Tensor");
  m.def("adjust_gamma(Tensor images, Tensor gamma, Tensor gain) -> Tensor");
  m.def("rgb_to_grayscale(Tensor images, int num_output_channels=1) -> Tensor");
  m.def("invert(Tensor images) -> Tensor");
  m.def("posterize(Tensor images, Tensor bits) -> Tensor");
  m.def("solarize(Tensor images, Tensor threshold) -> Tensor");
  // DALI auto_aug's solarize_add: v < threshold ? min(v + shift, max) : v.
  m.def("solarize_add(Tensor images, Tensor shift, Tensor threshold) -> Tensor");
  m.def("autocontrast(Tensor images) -> Tensor");
  m.def("equalize(Tensor images) -> Tensor");
  // A per-sample sequence of the ops above: ops (B, n) int64 op ids (csrc/kernels/color.h:
  // ColorOp), params (B, n, 2) float32 (the op's two parameters). Slot k of sample b applies
  // ops[b, k] with params[b, k] to the result of slot k - 1; statistics (contrast mean,
  // autocontrast min/max, equalize histograms) are those of the image the slot sees.
  m.def("color_program(Tensor images, Tensor ops, Tensor params) -> Tensor");
  // ColorJitter's color programs from uniform draws rand (B, 8) float64 (csrc/kernels/color.h:
  // jitter_sample): per sample a random order of brightness, contrast, saturation and hue (the
  // argsort of rand[:, :4]) with factors lo + span * rand[:, 4:]; codes: their op ids (0 for an
  // adjustment not made). Returns ops (B, 4) int64 and params (B, 4, 2) float32 for color_program.
  // rand None: drawn from generator as _random_resized_crop_boxes draws them (batch samples, on
  // like's device).
  m.def(
      "_color_jitter_program(Tensor? rand, float[] lo, float[] span, int[] codes, int batch=-1, Tensor? like=None, "
      "Generator? generator=None) -> (Tensor, Tensor)");

  // ---- filter ----
  // One per-sample window applied around every pixel (csrc/ops/filter.h). Images of any dtype;
  // adjust_sharpness takes 1 or 3 channels, the others any number.
  // torchvision's adjust_sharpness: interior pixels blend with the 3x3 blur (1/13 around, 5/13 in
  // the centre; uint8: rounded), x + (1 - factor) * (blur - x), clamped; border pixels are kept.
  m.def("adjust_sharpness(Tensor images, Tensor factor) -> Tensor");
  // torchvision's gaussian_blur with a sigma per sample: kernel_size [width, height] (odd), sigma
  // (B, 2) [sigma_x, sigma_y] or (B,) for both; reflect padding; uint8 results rounded.
  m.def("gaussian_blur(Tensor images, int[2] kernel_size, Tensor sigma) -> Tensor");
  // DALI's laplacian: d2/dy2 + d2/dx2, each a separable window (derivative window_size along its
  // axis, smoothing_size across), [height, width] order as DALI; scale (B,) multiplies the result;
  // normalized_kernel scales each partial by 2^(4 - sum of its window sizes). Reflect-101 borders;
  // uint8 results rounded and saturated, floating results not clamped.
  m.def(
      "laplacian(Tensor images, int[2] window_size, int[2] smoothing_size, Tensor scale, "
      "bool normalized_kernel=False) -> Tensor");

  // ---- noise ----
  // Random ops take a seed (B,) int64 per sample: the numbers of element (c, y, x) of sample b are a
  // pure function of (seed[b], c, y, x) (Philox4x32-10, csrc/kernels/random.h), the same on CPU and
  // CUDA and for any memory format.
  // torchvision's gaussian_noise: floating x + mean + sigma * z (clamped to [0, 1] when clip);
  // uint8 x + int16(mean * 255 + z * sigma * 255) (clamped to [0, 255] when clip).
  m.def("gaussian_noise(Tensor images, Tensor mean, Tensor sigma, Tensor seed, bool clip=True) -> Tensor");
  // DALI's noise.salt_and_pepper: with probability prob an element (per_channel) or a whole pixel
  // becomes salt_value (probability salt_vs_pepper; default the dtype's maximum) or pepper_value
  // (default 0).
  m.def(
      "salt_and_pepper(Tensor images, Tensor prob, Tensor salt_vs_pepper, Tensor seed, bool per_channel=False, "
      "Tensor? salt_value=None, Tensor? pepper_value=None) -> Tensor");
  // torchvision's erase with a rectangle per sample: boxes (B, 4) int64 [top, left, height, width]
  // (clipped to the image) filled with value ((B, C), (1, C), (B, 1) or (1, 1), image units; zeros
  // when None) or, when seed (B,) int64 is given, random values (floating: standard normal, as
  // RandomErasing(value="random"); uint8: uniform in [0, 255]).
  m.def("erase(Tensor images, Tensor boxes, Tensor? value=None, Tensor? seed=None) -> Tensor");
  // RandomErasing's rectangles (B, 4) int64 [top, left, height, width] of height x width images from
  // uniform draws rand (B, 41) float64 (10 attempts of area, log aspect ratio, top, left; then the
  // coin, < p erases): torchvision's get_params per sample (csrc/kernels/noise.h: erasing_box);
  // height = width = 0 where the coin says no or no attempt fits. rand None: drawn from generator
  // as _random_resized_crop_boxes draws them (batch samples, on like's device).
  m.def(
      "_erasing_boxes(Tensor? rand, int height, int width, float p, float scale_min, float scale_max, "
      "float log_ratio_min, float log_ratio_max, int batch=-1, Tensor? like=None, Generator? generator=None) -> Tensor");

  // ---- auto-augmentation ----
  // A per-sample program of the auto-augmentation ops (csrc/kernels/augment.h: op ids and what a
  // magnitude means for each, as torchvision's auto-augment policies apply them): slot k of sample b
  // applies ops[b, k] (B, n) int64 with magnitudes[b, k] (B, n) float32 to the result of slot k - 1.
  // Geometric ops sample with interpolation (0 nearest, 1 bilinear) and fill (B, C) (zeros when
  // None). One switch pass per slot, plus a statistics pass for the samples whose op needs one.
  // mean and std (B, C) float32: the result normalized as the normalize op would (out_dtype,
  // memory_format as there), in the same pass where the backend runs the program in one.
  // A policy's program from uniform draws rand (B, R) float64 (csrc/kernels/augment.h:
  // policy_sample; kind 0 RandAugment, 1 TrivialAugmentWide, 2 AutoAugment with the (S, 2)
  // sub-policy tables): the space's op ids (K,) int64, magnitudes (K, bins) float32 and signed
  // flags (K,) bool. Returns (choice, ops) (B, n) int64 and magnitudes (B, n) float32.
  // rand None: the op draws them for batch samples from generator, as _random_resized_crop_boxes does.
  m.def(
      "_policy_program(Tensor? rand, Tensor ids, Tensor mags, Tensor signed, int kind, int num_ops, int magnitude, "
      "Tensor? sub_idx=None, Tensor? sub_prob=None, Tensor? sub_bins=None, int batch=-1, "
      "Generator? generator=None) -> (Tensor, Tensor, Tensor)");
  m.def(
      "augment(Tensor images, Tensor ops, Tensor magnitudes, int interpolation=0, Tensor? fill=None, "
      "Tensor? mean=None, Tensor? std=None, ScalarType? out_dtype=None, MemoryFormat? memory_format=None) -> Tensor");

  // ---- detection ----
  // torchvision.ops' greedy non-maximum suppression: boxes (N, 4) [x1, y1, x2, y2] floating, scores
  // (N,); returns the int64 indices of the kept boxes in decreasing score order (the order of
  // scores.sort(descending=True)). A box is dropped when its IoU with a kept higher-scoring box is
  // > iou_threshold. batched_nms: only boxes of the same idxs (N,) integer category suppress each
  // other (exactly, without torchvision's coordinate offset trick).
  m.def("nms(Tensor boxes, Tensor scores, float iou_threshold) -> Tensor");
  m.def("batched_nms(Tensor boxes, Tensor scores, Tensor idxs, float iou_threshold) -> Tensor");
  // torchvision.ops.roi_align: input (B, C, H, W) floating, rois (K, 5) [batch_index, x1, y1, x2,
  // y2] of the input's dtype, in input coordinates times spatial_scale; returns (K, C, ph, pw).
  // sampling_ratio <= 0: ceil(roi size / output size) samples per bin; aligned: pixel shift -0.5.
  // RoIs whose batch index is outside [0, B) give zeros (torchaug.ops.roi_align checks for them).
  m.def(
      "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, SymInt pooled_width, "
      "int sampling_ratio, bool aligned) -> Tensor");
  m.def(
      "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
      "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, int sampling_ratio, "
      "bool aligned) -> Tensor");

  // ---- decode ----
  // Decodes a batch of JPEG files (each a 1-D uint8 CPU tensor of the file's bytes) on `device`
  // (CPU: libjpeg-turbo; CUDA: nvJPEG, the hardware decoder where the GPU has one) into one flat
  // uint8 buffer on that device: sample b is stored CHW from offsets[b] with sizes[b] = (C, H, W)
  // ((B,) and (B, 3) int64, CPU). mode: 0 unchanged (1 channel for grayscale files, else 3),
  // 1 gray, 3 rgb (torchvision's ImageReadMode numbers). status (B,) int32 CPU: 0 decoded, else the
  // reason (csrc/ops/jpeg_header.h: jpeg::Status); a bad sample is an error naming it unless
  // skip_errors, when it gets no slot (sizes[b] = 0). hw_load (CUDA, in [0, 1]): the share of the
  // samples the hardware JPEG engines can take that they get, the rest going to nvJPEG's hybrid
  // decoder on CPU threads and the GPU's SMs at the same time (DALI's hw_decoder_load); None: the
  // decoder's default (csrc/cuda/decode.cu).
  m.def(
      "decode_jpeg(Tensor[] data, int mode=3, bool apply_exif_orientation=False, bool skip_errors=False, "
      "Device? device=None, float? hw_load=None) -> (Tensor, Tensor, Tensor, Tensor)");
}
