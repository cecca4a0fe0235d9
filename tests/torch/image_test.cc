#include "dataflux/image.h"

#include <ATen/ops/abs.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "dataflux/dataset.h"

namespace dataflux {
namespace {

using ::testing::HasSubstr;
using Bytes = std::vector<std::uint8_t>;

// ---- Test images, encoded here from deterministic patterns ---------------------------------

// Every byte value, no two neighbours alike: exact round trips through PNG.
Bytes busy_pattern(int height, int width, int channels) {
  Bytes pixels(static_cast<std::size_t>(height) * width * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      for (int c = 0; c < channels; ++c) {
        pixels[(static_cast<std::size_t>(y) * width + x) * channels + c] =
            static_cast<std::uint8_t>(x * 7 + y * 13 + c * 50 + x * y);
      }
    }
  }
  return pixels;
}

// Gradients, which JPEG at quality 100 reproduces within a grey level or two.
Bytes smooth_pattern(int height, int width, int channels) {
  Bytes pixels(static_cast<std::size_t>(height) * width * channels);
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const int values[4] = {30 + 190 * x / (width - 1), 40 + 170 * y / (height - 1),
                             60 + 80 * (x + y) / (width + height - 2), 200};
      for (int c = 0; c < channels; ++c) {
        pixels[(static_cast<std::size_t>(y) * width + x) * channels + c] =
            static_cast<std::uint8_t>(values[c]);
      }
    }
  }
  return pixels;
}

at::Tensor hwc(const Bytes& pixels, int height, int width, int channels) {
  return at::from_blob(const_cast<std::uint8_t*>(pixels.data()), {height, width, channels},
                       at::kByte)
      .clone();
}

at::Tensor to_tensor(const Bytes& bytes) {
  return at::from_blob(const_cast<std::uint8_t*>(bytes.data()),
                       {static_cast<std::int64_t>(bytes.size())}, at::kByte)
      .clone();
}

double mean_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return at::abs(a.to(at::kFloat) - b.to(at::kFloat)).mean().item<double>();
}

Bytes encode_jpeg(const Bytes& pixels, int height, int width, int pixel_format, int subsampling,
                  int quality = 100, int flags = 0) {
  tjhandle tj = tjInitCompress();
  unsigned char* out = nullptr;
  unsigned long out_size = 0;
  const int rc = tjCompress2(tj, pixels.data(), width, 0, height, pixel_format, &out, &out_size,
                             subsampling, quality, flags | TJFLAG_ACCURATEDCT);
  EXPECT_EQ(rc, 0) << tjGetErrorStr2(tj);
  Bytes jpeg(out, out + out_size);
  tjFree(out);
  tjDestroy(tj);
  return jpeg;
}

struct PngSpec {
  PngSpec(int width, int height, int color_type, int bit_depth = 8)
      : width(width), height(height), color_type(color_type), bit_depth(bit_depth) {}

  int width;
  int height;
  int color_type;
  int bit_depth;
  int interlace = PNG_INTERLACE_NONE;
  std::vector<png_color> palette;
  Bytes palette_alpha;         // tRNS for a palette image
  const char* text = nullptr;  // a tEXt chunk (ancillary), to damage in a test
};

void on_png_write_error(png_structp png, png_const_charp message) {
  std::fprintf(stderr, "libpng (test encoder): %s\n", message);
  png_longjmp(png, 1);
}

void append_png_bytes(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + length);
}

void flush_nothing(png_structp) {}

// The setjmp frame: only trivially destructible locals, as libpng may longjmp back here.
bool run_png_write(png_structp png, png_infop info, const PngSpec* spec, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_IHDR(png, info, spec->width, spec->height, spec->bit_depth, spec->color_type,
               spec->interlace, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (!spec->palette.empty()) {
    png_set_PLTE(png, info, spec->palette.data(), static_cast<int>(spec->palette.size()));
  }
  if (!spec->palette_alpha.empty()) {
    png_set_tRNS(png, info, spec->palette_alpha.data(),
                 static_cast<int>(spec->palette_alpha.size()), nullptr);
  }
  png_text text;
  if (spec->text != nullptr) {
    std::memset(&text, 0, sizeof(text));
    text.compression = PNG_TEXT_COMPRESSION_NONE;
    text.key = const_cast<char*>("Comment");
    text.text = const_cast<char*>(spec->text);
    png_set_text(png, info, &text, 1);
  }
  png_write_info(png, info);
  png_write_image(png, rows);
  png_write_end(png, info);
  return true;
}

// `raw` holds the rows as PNG stores them: packed below 8 bits, big-endian at 16.
Bytes encode_png(const PngSpec& spec, Bytes raw) {
  Bytes out;
  png_structp png =
      png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, &on_png_write_error, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, &out, &append_png_bytes, &flush_nothing);
  const std::size_t row_bytes = raw.size() / spec.height;
  std::vector<png_bytep> rows(spec.height);
  for (int y = 0; y < spec.height; ++y) rows[y] = raw.data() + y * row_bytes;
  const bool ok = run_png_write(png, info, &spec, rows.data());
  png_destroy_write_struct(&png, &info);
  EXPECT_TRUE(ok);
  return out;
}

Bytes encode_png8(const Bytes& pixels, int height, int width, int color_type,
                  int interlace = PNG_INTERLACE_NONE) {
  PngSpec spec{width, height, color_type};
  spec.interlace = interlace;
  return encode_png(spec, pixels);
}

// The PNG chunk CRC (ISO 3309), to forge headers that still pass libpng's checks.
std::uint32_t png_crc(const std::uint8_t* data, std::size_t size) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < size; ++i) {
    crc ^= data[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_be32(std::uint8_t* p, std::uint32_t v) {
  p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}

// Offset of the first chunk of `type` (its length field), or npos.
std::size_t find_chunk(const Bytes& png, const char* type) {
  for (std::size_t offset = 8; offset + 12 <= png.size();) {
    const std::uint32_t length =
        (png[offset] << 24) | (png[offset + 1] << 16) | (png[offset + 2] << 8) | png[offset + 3];
    if (std::memcmp(&png[offset + 4], type, 4) == 0) return offset;
    offset += 12 + length;
  }
  return std::string::npos;
}

// The status decode_image throws, or OK if it returned.
absl::Status decode_status(const at::Tensor& bytes, const std::string& name,
                           DecodeImageOptions options = {}) {
  try {
    decode_image(bytes, name, options);
  } catch (const Error& e) {
    return e.status();
  }
  return absl::OkStatus();
}

// ---- PNG --------------------------------------------------------------------------------------

TEST(DecodeImageTest, PngRgbIsExact) {
  const Bytes pixels = busy_pattern(23, 37, 3);
  at::Tensor image = decode_image(to_tensor(encode_png8(pixels, 23, 37, PNG_COLOR_TYPE_RGB)));
  EXPECT_EQ(image.sizes(), at::IntArrayRef({23, 37, 3}));
  EXPECT_EQ(image.scalar_type(), at::kByte);
  EXPECT_TRUE(image.is_contiguous());
  EXPECT_TRUE(at::equal(image, hwc(pixels, 23, 37, 3)));
}

TEST(DecodeImageTest, PngRgbaKeepsAlphaAndConverts) {
  const Bytes pixels = busy_pattern(9, 11, 4);
  at::Tensor bytes = to_tensor(encode_png8(pixels, 9, 11, PNG_COLOR_TYPE_RGB_ALPHA));
  const at::Tensor expected = hwc(pixels, 9, 11, 4);
  EXPECT_TRUE(at::equal(decode_image(bytes), expected));
  EXPECT_TRUE(at::equal(decode_image(bytes, "", DecodeImageOptions().channels(4)), expected));
  // To RGB drops alpha (no compositing, as Pillow's convert("RGB") and torchvision do).
  EXPECT_TRUE(at::equal(decode_image(bytes, "", DecodeImageOptions().channels(3)),
                        expected.narrow(2, 0, 3)));
  // To gray: Pillow's "L" formula, L = (19595 R + 38470 G + 7471 B + 2^15) >> 16.
  at::Tensor gray = decode_image(bytes, "", DecodeImageOptions().channels(1));
  ASSERT_EQ(gray.sizes(), at::IntArrayRef({9, 11, 1}));
  for (int y = 0; y < 9; ++y) {
    for (int x = 0; x < 11; ++x) {
      const std::uint8_t* p = &pixels[(y * 11 + x) * 4];
      EXPECT_EQ(gray[y][x][0].item<int>(),
                (p[0] * 19595 + p[1] * 38470 + p[2] * 7471 + 32768) >> 16)
          << y << "," << x;
    }
  }
}

TEST(DecodeImageTest, PngGrayAndItsConversions) {
  const Bytes pixels = busy_pattern(16, 20, 1);
  at::Tensor bytes = to_tensor(encode_png8(pixels, 16, 20, PNG_COLOR_TYPE_GRAY));
  const at::Tensor gray = hwc(pixels, 16, 20, 1);
  EXPECT_TRUE(at::equal(decode_image(bytes), gray));
  EXPECT_TRUE(at::equal(decode_image(bytes, "", DecodeImageOptions().channels(1)), gray));
  at::Tensor rgb = decode_image(bytes, "", DecodeImageOptions().channels(3));
  EXPECT_TRUE(at::equal(rgb, gray.expand({16, 20, 3})));
  at::Tensor rgba = decode_image(bytes, "", DecodeImageOptions().channels(4));
  EXPECT_TRUE(at::equal(rgba.narrow(2, 0, 3), gray.expand({16, 20, 3})));
  EXPECT_TRUE(at::equal(rgba.narrow(2, 3, 1), at::full({16, 20, 1}, 255, at::kByte)));
}

TEST(DecodeImageTest, PngGrayAlphaIsTwoChannelsAsStored) {
  const Bytes pixels = busy_pattern(5, 6, 2);
  at::Tensor bytes = to_tensor(encode_png8(pixels, 5, 6, PNG_COLOR_TYPE_GRAY_ALPHA));
  const at::Tensor expected = hwc(pixels, 5, 6, 2);
  EXPECT_TRUE(at::equal(decode_image(bytes), expected));
  at::Tensor rgba = decode_image(bytes, "", DecodeImageOptions().channels(4));
  EXPECT_TRUE(at::equal(rgba.narrow(2, 0, 3), expected.narrow(2, 0, 1).expand({5, 6, 3})));
  EXPECT_TRUE(at::equal(rgba.narrow(2, 3, 1), expected.narrow(2, 1, 1)));
  EXPECT_TRUE(at::equal(decode_image(bytes, "", DecodeImageOptions().channels(1)),
                        expected.narrow(2, 0, 1)));
}

// 16-bit samples become round(v / 257), the nearest 8-bit value (not just the high byte).
TEST(DecodeImageTest, Png16BitIsScaledTo8BitRounded) {
  for (int color_type : {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_RGB}) {
    const int channels = color_type == PNG_COLOR_TYPE_GRAY ? 1 : 3;
    const int height = 13, width = 17;
    Bytes raw, expected;
    for (int y = 0; y < height; ++y) {
      for (int x = 0; x < width; ++x) {
        for (int c = 0; c < channels; ++c) {
          const std::uint32_t v = (x * 4099 + y * 771 + c * 9999 + x * y * 31) & 0xFFFF;
          raw.push_back(v >> 8);
          raw.push_back(v & 0xFF);
          expected.push_back(static_cast<std::uint8_t>((2 * v + 257) / 514));
        }
      }
    }
    PngSpec spec{width, height, color_type, 16};
    at::Tensor image = decode_image(to_tensor(encode_png(spec, raw)));
    EXPECT_TRUE(at::equal(image, hwc(expected, height, width, channels))) << color_type;
  }
}

TEST(DecodeImageTest, PngPaletteIsExpandedWithTransparency) {
  const int height = 7, width = 10;
  std::vector<png_color> palette;
  for (int i = 0; i < 16; ++i) {
    palette.push_back({static_cast<png_byte>(i * 16), static_cast<png_byte>(255 - i * 9),
                       static_cast<png_byte>(i * i)});
  }
  // 4-bit indices, two to a byte (width is even), high nibble first.
  Bytes raw, indices;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) indices.push_back((x + 3 * y) % 16);
    for (int x = 0; x < width; x += 2) {
      raw.push_back((indices[y * width + x] << 4) | indices[y * width + x + 1]);
    }
  }
  PngSpec spec{width, height, PNG_COLOR_TYPE_PALETTE, 4};
  spec.palette = palette;
  Bytes rgb;
  for (std::uint8_t i : indices)
    rgb.insert(rgb.end(), {palette[i].red, palette[i].green, palette[i].blue});
  EXPECT_TRUE(
      at::equal(decode_image(to_tensor(encode_png(spec, raw))), hwc(rgb, height, width, 3)));

  // tRNS gives the first 4 entries alpha: the image becomes RGBA.
  spec.palette_alpha = {0, 60, 120, 180};
  Bytes rgba;
  for (std::uint8_t i : indices) {
    rgba.insert(rgba.end(), {palette[i].red, palette[i].green, palette[i].blue,
                             static_cast<std::uint8_t>(i < 4 ? spec.palette_alpha[i] : 255)});
  }
  at::Tensor bytes = to_tensor(encode_png(spec, raw));
  EXPECT_TRUE(at::equal(decode_image(bytes), hwc(rgba, height, width, 4)));
  EXPECT_TRUE(at::equal(decode_image(bytes, "", DecodeImageOptions().channels(3)),
                        hwc(rgb, height, width, 3)));
}

// Gray below 8 bits is scaled to the full range: 1 bit 0/255, 2 bits multiples of 85.
TEST(DecodeImageTest, PngLowBitDepthGrayIsExpanded) {
  for (int bit_depth : {1, 2}) {
    const int height = 4, width = 8;  // one byte a row at 1 bit, two at 2 bits
    const int levels = 1 << bit_depth;
    Bytes raw, expected;
    for (int y = 0; y < height; ++y) {
      int acc = 0, bits = 0;
      for (int x = 0; x < width; ++x) {
        const int v = (x + y) % levels;
        acc = (acc << bit_depth) | v;
        bits += bit_depth;
        if (bits == 8) raw.push_back(acc), acc = 0, bits = 0;
        expected.push_back(static_cast<std::uint8_t>(v * 255 / (levels - 1)));
      }
    }
    PngSpec spec{width, height, PNG_COLOR_TYPE_GRAY, bit_depth};
    EXPECT_TRUE(
        at::equal(decode_image(to_tensor(encode_png(spec, raw))), hwc(expected, height, width, 1)))
        << bit_depth << "-bit";
  }
}

TEST(DecodeImageTest, PngInterlacedIsDecodedWhole) {
  const Bytes pixels = busy_pattern(29, 31, 3);
  Bytes adam7 = encode_png8(pixels, 29, 31, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_ADAM7);
  EXPECT_NE(adam7, encode_png8(pixels, 29, 31, PNG_COLOR_TYPE_RGB));
  EXPECT_TRUE(at::equal(decode_image(to_tensor(adam7)), hwc(pixels, 29, 31, 3)));
}

// ---- JPEG -------------------------------------------------------------------------------------

TEST(DecodeImageTest, JpegRgbAtQuality100IsClose) {
  const int height = 48, width = 64;
  const Bytes pixels = smooth_pattern(height, width, 3);
  for (int subsampling : {TJSAMP_444, TJSAMP_420}) {
    at::Tensor image = decode_image(
        to_tensor(encode_jpeg(pixels, height, width, TJPF_RGB, subsampling)), "rgb.jpg");
    ASSERT_EQ(image.sizes(), at::IntArrayRef({height, width, 3}));
    EXPECT_TRUE(image.is_contiguous());
    EXPECT_LT(mean_abs_diff(image, hwc(pixels, height, width, 3)), 1.0) << subsampling;
  }
}

TEST(DecodeImageTest, JpegOddSizeDecodesEveryPixel) {
  const Bytes pixels = smooth_pattern(19, 27, 3);
  at::Tensor image = decode_image(to_tensor(encode_jpeg(pixels, 19, 27, TJPF_RGB, TJSAMP_420, 95)));
  ASSERT_EQ(image.sizes(), at::IntArrayRef({19, 27, 3}));
  EXPECT_LT(mean_abs_diff(image, hwc(pixels, 19, 27, 3)), 2.0);
}

TEST(DecodeImageTest, JpegGrayIsOneChannel) {
  const Bytes pixels = smooth_pattern(32, 40, 1);
  at::Tensor bytes = to_tensor(encode_jpeg(pixels, 32, 40, TJPF_GRAY, TJSAMP_GRAY));
  at::Tensor image = decode_image(bytes);
  ASSERT_EQ(image.sizes(), at::IntArrayRef({32, 40, 1}));
  EXPECT_LT(mean_abs_diff(image, hwc(pixels, 32, 40, 1)), 1.0);
  at::Tensor rgb = decode_image(bytes, "", DecodeImageOptions().channels(3));
  ASSERT_EQ(rgb.sizes(), at::IntArrayRef({32, 40, 3}));
  EXPECT_TRUE(at::equal(rgb, image.expand({32, 40, 3})));
}

TEST(DecodeImageTest, JpegChannelConversions) {
  const int height = 24, width = 32;
  const Bytes pixels = smooth_pattern(height, width, 3);
  at::Tensor bytes = to_tensor(encode_jpeg(pixels, height, width, TJPF_RGB, TJSAMP_444));
  const at::Tensor rgb = decode_image(bytes);

  Bytes luma;
  for (std::size_t i = 0; i < pixels.size(); i += 3) {
    luma.push_back((pixels[i] * 19595 + pixels[i + 1] * 38470 + pixels[i + 2] * 7471 + 32768) >>
                   16);
  }
  at::Tensor gray = decode_image(bytes, "", DecodeImageOptions().channels(1));
  ASSERT_EQ(gray.sizes(), at::IntArrayRef({height, width, 1}));
  EXPECT_LT(mean_abs_diff(gray, hwc(luma, height, width, 1)), 1.0);

  at::Tensor rgba = decode_image(bytes, "", DecodeImageOptions().channels(4));
  ASSERT_EQ(rgba.sizes(), at::IntArrayRef({height, width, 4}));
  EXPECT_TRUE(at::equal(rgba.narrow(2, 0, 3), rgb));
  EXPECT_TRUE(at::equal(rgba.narrow(2, 3, 1), at::full({height, width, 1}, 255, at::kByte)));
}

// CMYK JPEGs (Photoshop's, a few in ImageNet) store inverted ink, 255 = none: RGB = C * K / 255.
TEST(DecodeImageTest, JpegCmykBecomesRgb) {
  const int height = 16, width = 24;
  const Bytes cmyk = smooth_pattern(height, width, 4);
  at::Tensor image =
      decode_image(to_tensor(encode_jpeg(cmyk, height, width, TJPF_CMYK, TJSAMP_444)));
  ASSERT_EQ(image.sizes(), at::IntArrayRef({height, width, 3}));
  Bytes rgb;
  for (std::size_t i = 0; i < cmyk.size(); i += 4) {
    for (int c = 0; c < 3; ++c) rgb.push_back((cmyk[i + c] * cmyk[i + 3] + 127) / 255);
  }
  EXPECT_LT(mean_abs_diff(image, hwc(rgb, height, width, 3)), 1.5);
}

// TurboJPEG 2.x's header call fails on chroma sampling it has no name for; libjpeg decodes it.
// Written with libjpeg's API, Y sampled 3x1 and chroma 1x1 (as cjpeg -sample 3x1,1x1,1x1 asks):
// 16x16, all (200, 100, 50).
TEST(DecodeImageTest, JpegWithUnnamedChromaSamplingDecodes) {
  const Bytes jpeg = {
      0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00,
      0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x03, 0x02, 0x02, 0x03, 0x02,
      0x02, 0x03, 0x03, 0x03, 0x03, 0x04, 0x03, 0x03, 0x04, 0x05, 0x08, 0x05, 0x05, 0x04, 0x04,
      0x05, 0x0a, 0x07, 0x07, 0x06, 0x08, 0x0c, 0x0a, 0x0c, 0x0c, 0x0b, 0x0a, 0x0b, 0x0b, 0x0d,
      0x0e, 0x12, 0x10, 0x0d, 0x0e, 0x11, 0x0e, 0x0b, 0x0b, 0x10, 0x16, 0x10, 0x11, 0x13, 0x14,
      0x15, 0x15, 0x15, 0x0c, 0x0f, 0x17, 0x18, 0x16, 0x14, 0x18, 0x12, 0x14, 0x15, 0x14, 0xff,
      0xdb, 0x00, 0x43, 0x01, 0x03, 0x04, 0x04, 0x05, 0x04, 0x05, 0x09, 0x05, 0x05, 0x09, 0x14,
      0x0d, 0x0b, 0x0d, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14,
      0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14,
      0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14,
      0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0x14, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x10,
      0x00, 0x10, 0x03, 0x01, 0x31, 0x00, 0x02, 0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xc4, 0x00,
      0x15, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x04, 0xff, 0xc4, 0x00, 0x14, 0x10, 0x01, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xc4, 0x00,
      0x16, 0x01, 0x01, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x07, 0x08, 0xff, 0xc4, 0x00, 0x14, 0x11, 0x01, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xda,
      0x00, 0x0c, 0x03, 0x01, 0x00, 0x02, 0x11, 0x03, 0x11, 0x00, 0x3f, 0x00, 0x90, 0x10, 0xf6,
      0x90, 0x00, 0x1f, 0xff, 0xd9};
  tjhandle tj = tjInitDecompress();
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  const int header_rc =
      tjDecompressHeader3(tj, jpeg.data(), jpeg.size(), &width, &height, &subsampling, &colorspace);
  tjDestroy(tj);
  if (header_rc == 0) {
    GTEST_LOG_(INFO) << "this TurboJPEG names the sampling; the workaround is not exercised";
  }
  at::Tensor image = decode_image(jpeg.data(), jpeg.size(), "odd-sampling.jpg");
  ASSERT_EQ(image.sizes(), at::IntArrayRef({16, 16, 3}));
  const std::uint8_t colour[3] = {200, 100, 50};
  EXPECT_LT(mean_abs_diff(image, hwc(Bytes(colour, colour + 3), 1, 1, 3).expand({16, 16, 3})), 2.0);
}

// ---- Damage -------------------------------------------------------------------------------------

// libjpeg only warns about a truncated file and greys the rest; that must be an error.
TEST(DecodeImageTest, TruncatedJpegIsDataLossNamingTheImage) {
  const Bytes jpeg = encode_jpeg(busy_pattern(64, 64, 3), 64, 64, TJPF_RGB, TJSAMP_420, 90);
  ASSERT_GT(jpeg.size(), 1400u);
  const std::string name = "shard-000003.tar:cat/001.jpg";
  for (std::size_t keep :
       {jpeg.size() * 3 / 4, jpeg.size() / 2, std::size_t{700}, std::size_t{3}}) {
    absl::Status status = decode_status(to_tensor(Bytes(jpeg.begin(), jpeg.begin() + keep)), name);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << keep << ": " << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(name));
    EXPECT_THAT(std::string(status.message()), HasSubstr("JPEG"));
  }
  absl::Status half =
      decode_status(to_tensor(Bytes(jpeg.begin(), jpeg.begin() + jpeg.size() / 2)), name);
  EXPECT_THAT(std::string(half.message()), HasSubstr("Premature end of JPEG file"));
}

TEST(DecodeImageTest, CorruptPngIsDataLoss) {
  const Bytes png = encode_png8(busy_pattern(32, 32, 3), 32, 32, PNG_COLOR_TYPE_RGB);
  const std::string name = "gs://b/train/cat/002.png";
  auto expect_data_loss = [&](const Bytes& damaged, const char* what, const char* detail) {
    absl::Status status = decode_status(to_tensor(damaged), name);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << what << ": " << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(name)) << what;
    EXPECT_THAT(std::string(status.message()), HasSubstr("PNG")) << what;
    EXPECT_THAT(std::string(status.message()), HasSubstr(detail)) << what;
  };
  const std::size_t idat = find_chunk(png, "IDAT");
  ASSERT_NE(idat, std::string::npos);
  const std::uint32_t idat_length =
      (png[idat] << 24) | (png[idat + 1] << 16) | (png[idat + 2] << 8) | png[idat + 3];
  Bytes bad_crc = png;
  bad_crc[idat + 8 + idat_length] ^= 0x01;  // the IDAT's CRC
  expect_data_loss(bad_crc, "IDAT CRC", "CRC error");
  Bytes bad_data = png;
  bad_data[idat + 8 + idat_length / 2] ^= 0x40;  // inside the compressed pixels
  expect_data_loss(bad_data, "IDAT data", "");
  Bytes bad_header = png;
  bad_header[16 + 3] ^= 0x01;  // IHDR width, CRC left alone
  expect_data_loss(bad_header, "IHDR", "CRC error");
  for (std::size_t keep :
       {std::size_t{8}, std::size_t{20}, std::size_t{40}, png.size() / 2, png.size() - 1}) {
    expect_data_loss(Bytes(png.begin(), png.begin() + keep), "truncated", "truncated");
  }
}

// A bad CRC on an ancillary chunk is a libpng warning: the chunk is skipped, the pixels stand.
TEST(DecodeImageTest, PngWarningsAreNotErrors) {
  const Bytes pixels = busy_pattern(8, 8, 3);
  PngSpec spec{8, 8, PNG_COLOR_TYPE_RGB};
  spec.text = "made by image_test";
  Bytes png = encode_png(spec, pixels);
  const std::size_t text = find_chunk(png, "tEXt");
  ASSERT_NE(text, std::string::npos);
  png[text + 8] ^= 0x20;  // the keyword, so the chunk's CRC no longer matches
  EXPECT_TRUE(at::equal(decode_image(to_tensor(png)), hwc(pixels, 8, 8, 3)));
}

TEST(DecodeImageTest, UnknownFormatAndRandomBytesAreClearErrors) {
  const std::string name = "s3://b/notes.txt";
  const std::string text = "hello, this is not an image";
  absl::Status status = decode_status(to_tensor(Bytes(text.begin(), text.end())), name);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr(name));
  EXPECT_THAT(std::string(status.message()), HasSubstr("unknown image format"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("68 65 6C 6C"));  // "hell"

  std::mt19937 rng(20240611);  // seeded: the same bytes every run
  Bytes noise(4096);
  std::generate(noise.begin(), noise.end(), [&] { return static_cast<std::uint8_t>(rng()); });
  noise[0] = 0x00;  // not a magic by chance
  EXPECT_EQ(decode_status(to_tensor(noise), name).code(), absl::StatusCode::kInvalidArgument);
  // Noise behind a valid magic reaches the decoders, which must fail cleanly.
  Bytes jpeg_noise = noise;
  std::memcpy(jpeg_noise.data(), "\xFF\xD8\xFF", 3);
  status = decode_status(to_tensor(jpeg_noise), name);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(name));
  Bytes png_noise = noise;
  std::memcpy(png_noise.data(), "\x89PNG\r\n\x1A\n", 8);
  status = decode_status(to_tensor(png_noise), name);
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(name));
}

TEST(DecodeImageTest, BadInputTensorsAreInvalidArgument) {
  const std::string name = "gs://b/x.jpg";
  for (const at::Tensor& bytes : {at::empty({0}, at::kByte), at::zeros({16}, at::kFloat),
                                  at::zeros({8, 8}, at::kByte).t(), at::Tensor()}) {
    absl::Status status = decode_status(bytes, name);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    EXPECT_THAT(std::string(status.message()), HasSubstr(name));
  }
  EXPECT_THAT(std::string(decode_status(at::empty({0}, at::kByte), name).message()),
              HasSubstr("empty"));
  EXPECT_THAT(std::string(decode_status(at::zeros({16}, at::kFloat), name).message()),
              HasSubstr("Float"));
  EXPECT_THAT(std::string(decode_status(at::empty({0}, at::kByte), "").message()),
              HasSubstr("<unnamed>"));
  // Any contiguous uint8 shape is the same bytes.
  const Bytes png = encode_png8(busy_pattern(4, 4, 3), 4, 4, PNG_COLOR_TYPE_RGB);
  Bytes padded = png;
  padded.resize((png.size() + 3) / 4 * 4, 0);  // trailing bytes after IEND are ignored
  EXPECT_TRUE(at::equal(decode_image(to_tensor(padded).view({4, -1})),
                        hwc(busy_pattern(4, 4, 3), 4, 4, 3)));
}

TEST(DecodeImageTest, BadOptionsAreInvalidArgument) {
  at::Tensor bytes = to_tensor(encode_png8(busy_pattern(4, 4, 3), 4, 4, PNG_COLOR_TYPE_RGB));
  for (int channels : {-1, 2, 5}) {
    absl::Status status = decode_status(bytes, "x.png", DecodeImageOptions().channels(channels));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << channels;
    EXPECT_THAT(std::string(status.message()), HasSubstr("channels"));
  }
}

// A few hundred bytes can claim gigapixels: refused from the header, before any allocation.
TEST(DecodeImageTest, DecompressionBombsAreRefused) {
  Bytes png = encode_png8(busy_pattern(4, 4, 3), 4, 4, PNG_COLOR_TYPE_RGB);
  put_be32(&png[16], 40000);  // IHDR width
  put_be32(&png[20], 40000);  // IHDR height
  put_be32(&png[29], png_crc(&png[12], 17));
  absl::Status status = decode_status(to_tensor(png), "bomb.png");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("bomb.png"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("max_decoded_bytes"));

  Bytes jpeg = encode_jpeg(smooth_pattern(8, 8, 3), 8, 8, TJPF_RGB, TJSAMP_444);
  std::size_t sof = 2;
  while (sof + 9 < jpeg.size() && !(jpeg[sof] == 0xFF && jpeg[sof + 1] == 0xC0)) ++sof;
  ASSERT_LT(sof + 9, jpeg.size());
  jpeg[sof + 5] = 60000 >> 8, jpeg[sof + 6] = 60000 & 0xFF;  // height
  jpeg[sof + 7] = 60000 >> 8, jpeg[sof + 8] = 60000 & 0xFF;  // width
  status = decode_status(to_tensor(jpeg), "bomb.jpg");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("max_decoded_bytes"));

  // The cap is exact: 10 x 10 x 3 = 300 bytes.
  at::Tensor small = to_tensor(encode_png8(busy_pattern(10, 10, 3), 10, 10, PNG_COLOR_TYPE_RGB));
  EXPECT_TRUE(decode_status(small, "", DecodeImageOptions().max_decoded_bytes(300)).ok());
  EXPECT_EQ(decode_status(small, "", DecodeImageOptions().max_decoded_bytes(299)).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DecodeImageTest, SniffsMagicBytesNotNames) {
  const unsigned char jpeg[] = {0xFF, 0xD8, 0xFF, 0xE0};
  const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  EXPECT_EQ(sniff_image_format(jpeg, sizeof(jpeg)), ImageFormat::kJpeg);
  EXPECT_EQ(sniff_image_format(png, sizeof(png)), ImageFormat::kPng);
  EXPECT_EQ(sniff_image_format(jpeg, 2), ImageFormat::kUnknown);
  EXPECT_EQ(sniff_image_format(png, 7), ImageFormat::kUnknown);
  EXPECT_EQ(sniff_image_format(nullptr, 0), ImageFormat::kUnknown);
  // A PNG named .JPEG (ImageNet has some) decodes as the PNG it is.
  const Bytes pixels = busy_pattern(3, 5, 3);
  EXPECT_TRUE(at::equal(
      decode_image(to_tensor(encode_png8(pixels, 3, 5, PNG_COLOR_TYPE_RGB)), "n02105855_2933.JPEG"),
      hwc(pixels, 3, 5, 3)));
}

// ---- Use from DataLoader workers ----------------------------------------------------------------

TEST(DecodeImageTest, EightThreadsDecodeTheSameAsOne) {
  const at::Tensor jpeg =
      to_tensor(encode_jpeg(smooth_pattern(96, 128, 3), 96, 128, TJPF_RGB, TJSAMP_420, 90));
  const at::Tensor png = to_tensor(
      encode_png8(busy_pattern(80, 60, 4), 80, 60, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_ADAM7));
  Bytes truncated_bytes(static_cast<std::uint8_t*>(jpeg.data_ptr()),
                        static_cast<std::uint8_t*>(jpeg.data_ptr()) + jpeg.numel() / 2);
  const at::Tensor truncated = to_tensor(truncated_bytes);
  const at::Tensor jpeg_expected = decode_image(jpeg);
  const at::Tensor png_expected = decode_image(png);
  std::atomic<int> mismatches{0}, unexpected_errors{0}, missing_errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        try {
          if (!at::equal(decode_image(jpeg, "j"), jpeg_expected)) ++mismatches;
          if (!at::equal(decode_image(png, "p"), png_expected)) ++mismatches;
        } catch (...) {
          ++unexpected_errors;
        }
        // Errors on some threads leave the others' decoders alone.
        if ((t + i) % 3 == 0 && decode_status(truncated, "t").ok()) ++missing_errors;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(unexpected_errors.load(), 0);
  EXPECT_EQ(missing_errors.load(), 0);
}

TEST(DecodeImageTest, WorksAsADatasetTransform) {
  DatasetTransform transform = [](at::Tensor bytes, const ObjectEntry& object, std::size_t index) {
    at::Tensor image = decode_image(bytes, object.name, DecodeImageOptions().channels(3));
    return torch::data::Example<>(image.permute({2, 0, 1}),
                                  at::full({}, static_cast<std::int64_t>(index), at::kLong));
  };
  const Bytes pixels = busy_pattern(6, 7, 1);
  Bytes png = encode_png8(pixels, 6, 7, PNG_COLOR_TYPE_GRAY);
  torch::data::Example<> example =
      transform(to_tensor(png), ObjectEntry("train/cat/001.png", png.size()), 5);
  EXPECT_EQ(example.data.sizes(), at::IntArrayRef({3, 6, 7}));
  EXPECT_EQ(example.target.item<std::int64_t>(), 5);
  try {
    transform(to_tensor(Bytes(png.begin(), png.begin() + 30)), ObjectEntry("train/cat/002.png", 30),
              6);
    ADD_FAILURE() << "a truncated PNG decoded";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("train/cat/002.png"));
  }
}

}  // namespace
}  // namespace dataflux
