// Procedural RGB images for the restoration workload (smooth gradients,
// rectangles, ellipses, sine textures) and the patch copy the input pipeline
// does per sample. Plain C++ on float arrays: it runs on loader threads.
#pragma once

#include <gpusweep/torchkit/seeding.hpp>

#include <cstdint>
#include <random>

namespace gpusweep::restoration {

// Each image and each consumer draws from its own stream.
using torchkit::derive_seed;

// Renders one size x size RGB image, channel-major (CHW), values in [0, 1],
// into out (3 * size * size floats). Shapes and texture periods are in
// pixels, not fractions of the image, so that 128-pixel validation images
// have the statistics of the larger training images.
void render_image(int64_t size, std::mt19937_64& rng, float* out);

// Copies the patch x patch window at (top, left) of a CHW image of
// size x size pixels to dst (CHW, patch x patch), mirrored left-right and/or
// top-bottom as asked.
void copy_patch(const float* image, int64_t size, int64_t top, int64_t left, int64_t patch,
                bool flip_lr, bool flip_tb, float* dst);

// One pass of the optional heavy augmentation (the `augment_passes` knob), in
// place on a CHW patch x patch image: a rotation by a random angle in
// [-20, 20] degrees about the centre (bilinear, mirrored borders), a 5 x 5
// Gaussian blur of random sigma in [0.3, 1], and a random brightness and
// contrast change, clamped to [0, 1]. scratch holds 3 * patch * patch floats.
// Plain loops: the CPU cost a heavy Python augmentation pipeline has.
void augment_pass(float* image, int64_t patch, std::mt19937_64& rng, float* scratch);

}  // namespace gpusweep::restoration
