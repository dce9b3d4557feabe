// Procedural images and patch copies for restoration; see images.hpp.
#include "images.hpp"

#include <gpusweep/random.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

namespace gpusweep::restoration {
namespace {

constexpr int64_t kChannels = 3;
constexpr float kTwoPi = 6.28318530718f;
// Shapes per 128 x 128 pixels; larger images get proportionally more.
constexpr double kMinShapesPer128 = 6;
constexpr double kMaxShapesPer128 = 12;
constexpr double kReferenceArea = 128.0 * 128.0;
// Sizes in pixels: edges at every scale a 3x3-conv stack can see.
constexpr double kMinRectSide = 8;
constexpr double kMaxRectSide = 64;
constexpr double kMinRadius = 5;
constexpr double kMaxRadius = 40;
constexpr double kMinPeriod = 4;  // sine texture period, pixels
constexpr double kMaxPeriod = 32;
constexpr double kTexturedShare = 0.35;
constexpr double kOverlayChance = 0.5;  // a faint sine over the whole image

using Rgb = std::array<float, kChannels>;

float uniform(std::mt19937_64& rng, double lo, double hi) {
  return static_cast<float>(random::uniform_real(rng, lo, hi));
}

Rgb random_color(std::mt19937_64& rng) {
  return {uniform(rng, 0, 1), uniform(rng, 0, 1), uniform(rng, 0, 1)};
}

// A solid colour, or two colours alternating along a plane sine wave.
struct Fill {
  Rgb a{};
  Rgb b{};
  bool textured = false;
  float kx = 0, ky = 0, phase = 0;  // wave vector (radians per pixel) and phase
  float alpha = 1;                  // opacity over what is below

  static Fill random(std::mt19937_64& rng) {
    Fill f;
    f.a = random_color(rng);
    f.b = random_color(rng);
    f.textured = uniform(rng, 0, 1) < kTexturedShare;
    const float k = kTwoPi / uniform(rng, kMinPeriod, kMaxPeriod);
    const float angle = uniform(rng, 0, kTwoPi / 2);
    f.kx = k * std::cos(angle);
    f.ky = k * std::sin(angle);
    f.phase = uniform(rng, 0, kTwoPi);
    f.alpha = uniform(rng, 0.7, 1.0);
    return f;
  }

  void paint(float* image, int64_t size, int64_t y, int64_t x) const {
    const int64_t plane = size * size;
    const int64_t at = y * size + x;
    float t = 0;
    if (textured)
      t = 0.5f + 0.5f * std::sin(kx * static_cast<float>(x) + ky * static_cast<float>(y) + phase);
    for (int64_t c = 0; c < kChannels; ++c) {
      const float colour = a[c] + (b[c] - a[c]) * t;
      float& p = image[c * plane + at];
      p += alpha * (colour - p);
    }
  }
};

void paint_background(float* image, int64_t size, std::mt19937_64& rng) {
  const Rgb from = random_color(rng);
  const Rgb to = random_color(rng);
  const float angle = uniform(rng, 0, kTwoPi);
  const float dx = std::cos(angle) / static_cast<float>(size);
  const float dy = std::sin(angle) / static_cast<float>(size);
  const float half = static_cast<float>(size) / 2;
  const int64_t plane = size * size;
  for (int64_t y = 0; y < size; ++y) {
    for (int64_t x = 0; x < size; ++x) {
      const float t = std::clamp(
          (static_cast<float>(x) - half) * dx + (static_cast<float>(y) - half) * dy + 0.5f, 0.0f,
          1.0f);
      for (int64_t c = 0; c < kChannels; ++c) {
        image[c * plane + y * size + x] = from[c] + (to[c] - from[c]) * t;
      }
    }
  }
}

void paint_rectangle(float* image, int64_t size, std::mt19937_64& rng) {
  const auto w = static_cast<int64_t>(uniform(rng, kMinRectSide, kMaxRectSide));
  const auto h = static_cast<int64_t>(uniform(rng, kMinRectSide, kMaxRectSide));
  // Corners may fall outside: shapes cut by the border are part of the look.
  const auto left =
      static_cast<int64_t>(uniform(rng, -w / 2.0, static_cast<double>(size) - w / 2.0));
  const auto top =
      static_cast<int64_t>(uniform(rng, -h / 2.0, static_cast<double>(size) - h / 2.0));
  const Fill fill = Fill::random(rng);
  for (int64_t y = std::max<int64_t>(top, 0); y < std::min(top + h, size); ++y) {
    for (int64_t x = std::max<int64_t>(left, 0); x < std::min(left + w, size); ++x) {
      fill.paint(image, size, y, x);
    }
  }
}

void paint_ellipse(float* image, int64_t size, std::mt19937_64& rng) {
  const float cx = uniform(rng, 0, static_cast<double>(size));
  const float cy = uniform(rng, 0, static_cast<double>(size));
  const float rx = uniform(rng, kMinRadius, kMaxRadius);
  const float ry = uniform(rng, kMinRadius, kMaxRadius);
  const float angle = uniform(rng, 0, kTwoPi / 2);
  const float cos_a = std::cos(angle), sin_a = std::sin(angle);
  const Fill fill = Fill::random(rng);
  const float reach = std::max(rx, ry);
  const auto y0 = std::max<int64_t>(0, static_cast<int64_t>(std::floor(cy - reach)));
  const auto y1 = std::min<int64_t>(size, static_cast<int64_t>(std::ceil(cy + reach)) + 1);
  const auto x0 = std::max<int64_t>(0, static_cast<int64_t>(std::floor(cx - reach)));
  const auto x1 = std::min<int64_t>(size, static_cast<int64_t>(std::ceil(cx + reach)) + 1);
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t x = x0; x < x1; ++x) {
      const float dx = static_cast<float>(x) - cx, dy = static_cast<float>(y) - cy;
      const float u = (dx * cos_a + dy * sin_a) / rx;
      const float v = (-dx * sin_a + dy * cos_a) / ry;
      if (u * u + v * v <= 1.0f) fill.paint(image, size, y, x);
    }
  }
}

void add_overlay(float* image, int64_t size, std::mt19937_64& rng) {
  const float amplitude = uniform(rng, 0.03, 0.1);
  const float k = kTwoPi / uniform(rng, kMinPeriod, 2 * kMaxPeriod);
  const float angle = uniform(rng, 0, kTwoPi / 2);
  const float kx = k * std::cos(angle), ky = k * std::sin(angle);
  const float phase = uniform(rng, 0, kTwoPi);
  const int64_t plane = size * size;
  for (int64_t y = 0; y < size; ++y) {
    for (int64_t x = 0; x < size; ++x) {
      const float s =
          amplitude * std::sin(kx * static_cast<float>(x) + ky * static_cast<float>(y) + phase);
      for (int64_t c = 0; c < kChannels; ++c) image[c * plane + y * size + x] += s;
    }
  }
}

}  // namespace

void render_image(int64_t size, std::mt19937_64& rng, float* out) {
  paint_background(out, size, rng);
  const double scale = static_cast<double>(size * size) / kReferenceArea;
  const auto shapes = static_cast<int64_t>(
      std::lround(uniform(rng, kMinShapesPer128 * scale, kMaxShapesPer128 * scale)));
  for (int64_t i = 0; i < shapes; ++i) {
    if (rng() & 1) {
      paint_rectangle(out, size, rng);
    } else {
      paint_ellipse(out, size, rng);
    }
  }
  if (uniform(rng, 0, 1) < kOverlayChance) add_overlay(out, size, rng);
  const int64_t n = kChannels * size * size;
  for (int64_t i = 0; i < n; ++i) out[i] = std::clamp(out[i], 0.0f, 1.0f);
}

void copy_patch(const float* image, int64_t size, int64_t top, int64_t left, int64_t patch,
                bool flip_lr, bool flip_tb, float* dst) {
  for (int64_t c = 0; c < kChannels; ++c) {
    const float* src_plane = image + c * size * size;
    float* dst_plane = dst + c * patch * patch;
    for (int64_t y = 0; y < patch; ++y) {
      const float* src_row = src_plane + (top + (flip_tb ? patch - 1 - y : y)) * size + left;
      float* dst_row = dst_plane + y * patch;
      if (flip_lr) {
        for (int64_t x = 0; x < patch; ++x) dst_row[x] = src_row[patch - 1 - x];
      } else {
        std::memcpy(dst_row, src_row, static_cast<size_t>(patch) * sizeof(float));
      }
    }
  }
}

namespace {

int64_t mirror(int64_t i, int64_t n) {
  if (i < 0) i = -i - 1;
  if (i >= n) i = 2 * n - 1 - i;
  return std::min<int64_t>(std::max<int64_t>(i, 0), n - 1);
}

}  // namespace

void augment_pass(float* image, int64_t patch, std::mt19937_64& rng, float* scratch) {
  constexpr double kPi = 3.14159265358979323846;
  const double angle = random::uniform_real(rng, -20.0, 20.0) * kPi / 180.0;
  const double cos_a = std::cos(angle);
  const double sin_a = std::sin(angle);
  const double centre = 0.5 * static_cast<double>(patch - 1);
  const int64_t plane = patch * patch;

  // Rotation, image -> scratch.
  for (int64_t c = 0; c < kChannels; ++c) {
    const float* src = image + c * plane;
    float* dst = scratch + c * plane;
    for (int64_t y = 0; y < patch; ++y) {
      for (int64_t x = 0; x < patch; ++x) {
        const double dx = static_cast<double>(x) - centre;
        const double dy = static_cast<double>(y) - centre;
        const double sx = cos_a * dx + sin_a * dy + centre;
        const double sy = -sin_a * dx + cos_a * dy + centre;
        const auto x0 = static_cast<int64_t>(std::floor(sx));
        const auto y0 = static_cast<int64_t>(std::floor(sy));
        const double fx = sx - static_cast<double>(x0);
        const double fy = sy - static_cast<double>(y0);
        const int64_t xa = mirror(x0, patch), xb = mirror(x0 + 1, patch);
        const int64_t ya = mirror(y0, patch), yb = mirror(y0 + 1, patch);
        const double top = src[ya * patch + xa] * (1 - fx) + src[ya * patch + xb] * fx;
        const double bottom = src[yb * patch + xa] * (1 - fx) + src[yb * patch + xb] * fx;
        dst[y * patch + x] = static_cast<float>(top * (1 - fy) + bottom * fy);
      }
    }
  }

  // 5 x 5 Gaussian blur (not separated, as a generic filter2D is) and the
  // photometric jitter, scratch -> image.
  const double sigma = random::uniform_real(rng, 0.3, 1.0);
  float kernel[5][5];
  double sum = 0;
  for (int ky = 0; ky < 5; ++ky) {
    for (int kx = 0; kx < 5; ++kx) {
      const double r2 = static_cast<double>((ky - 2) * (ky - 2) + (kx - 2) * (kx - 2));
      kernel[ky][kx] = static_cast<float>(std::exp(-r2 / (2 * sigma * sigma)));
      sum += kernel[ky][kx];
    }
  }
  const auto gain = static_cast<float>(random::uniform_real(rng, 0.8, 1.2));
  const auto offset = static_cast<float>(random::uniform_real(rng, -0.1, 0.1));
  for (int64_t c = 0; c < kChannels; ++c) {
    const float* src = scratch + c * plane;
    float* dst = image + c * plane;
    for (int64_t y = 0; y < patch; ++y) {
      for (int64_t x = 0; x < patch; ++x) {
        float acc = 0;
        for (int ky = 0; ky < 5; ++ky) {
          const float* row = src + mirror(y + ky - 2, patch) * patch;
          for (int kx = 0; kx < 5; ++kx) acc += kernel[ky][kx] * row[mirror(x + kx - 2, patch)];
        }
        const float v = (acc / static_cast<float>(sum) - 0.5f) * gain + 0.5f + offset;
        dst[y * patch + x] = std::min(1.0f, std::max(0.0f, v));
      }
    }
  }
}

}  // namespace gpusweep::restoration
