// Image decoding: JPEG and PNG bytes into the uint8 {H, W, C} tensor a training transform needs.
//
// decode_image() sniffs the format from the magic bytes (never from the object's name, which
// lies: ImageNet has PNGs named .JPEG), decodes with libjpeg-turbo or libpng, and returns a
// contiguous HWC uint8 tensor. It is thread-safe, so it belongs inside a DatasetTransform that
// DataLoader workers run at once. Corrupt, truncated or oversized images throw dataflux::Error
// naming the image, never return a half-decoded one.
//
//   auto decode = [](at::Tensor bytes, const dataflux::ObjectEntry& object, std::size_t) {
//     at::Tensor hwc = dataflux::decode_image(bytes, object.name,
//                                             dataflux::DecodeImageOptions().channels(3));
//     return torch::data::Example<>(hwc.permute({2, 0, 1}).to(at::kFloat).div_(255), {});
//   };
#ifndef DATAFLUX_IMAGE_H_
#define DATAFLUX_IMAGE_H_

#include <ATen/core/Tensor.h>
#include <torch/arg.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "dataflux/error.h"

namespace dataflux {

enum class ImageFormat { kUnknown, kJpeg, kPng };

struct DecodeImageOptions {
  // Channels of the result. 0 = as stored: JPEG 1 (gray) or 3 (RGB; CMYK is converted); PNG 1
  // (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA), a palette or tRNS transparency counting as
  // the colours and alpha it expands to. 1 = gray (ITU-R 601 luma), 3 = RGB (alpha dropped),
  // 4 = RGBA (opaque alpha added).
  TORCH_ARG(int, channels) = 0;
  // Refuses images whose decoded H * W * C bytes exceed this, before allocating anything: a
  // few KiB of PNG or JPEG can claim 65535 x 65535 pixels.
  TORCH_ARG(std::uint64_t, max_decoded_bytes) = std::uint64_t{1} << 30;
};

// Decodes a JPEG or PNG held in `bytes`, a contiguous uint8 CPU tensor (as a DatasetTransform
// receives it), into a contiguous uint8 tensor of shape {H, W, C}. 16-bit PNGs are scaled to
// 8 bits; palettes and gray below 8 bits are expanded; interlaced PNGs and progressive JPEGs
// are decoded whole. `name` (e.g. "gs://b/train/cat/001.jpg" or "shard-000003.tar:cat/001.jpg")
// only serves error messages. Throws dataflux::Error: InvalidArgument for a tensor or options
// it cannot take, an empty input, an unknown format or an image over max_decoded_bytes;
// DataLoss for a corrupt or truncated image (any libjpeg warning counts: its "Premature end of
// JPEG file" would otherwise leave the rest of the image grey).
at::Tensor decode_image(const at::Tensor& bytes, const std::string& name = "",
                        DecodeImageOptions options = {});
at::Tensor decode_image(const void* data, std::size_t size, const std::string& name = "",
                        DecodeImageOptions options = {});

// The format the magic bytes announce (FF D8 FF for JPEG, the 8-byte PNG signature).
ImageFormat sniff_image_format(const void* data, std::size_t size);

}  // namespace dataflux

#endif  // DATAFLUX_IMAGE_H_
