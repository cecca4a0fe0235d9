#include "dataflux/image.h"

#include <ATen/ops/empty.h>
#include <png.h>
#include <turbojpeg.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace dataflux {
namespace {

constexpr unsigned char kJpegMagic[] = {0xFF, 0xD8, 0xFF};
constexpr unsigned char kPngMagic[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

[[noreturn]] void fail(absl::StatusCode code, const std::string& name, absl::string_view what) {
  throw Error(absl::Status(
      code, absl::StrCat("decode_image(", name.empty() ? "<unnamed>" : name, "): ", what)));
}

void check_decoded_size(std::uint64_t height, std::uint64_t width, std::uint64_t channels,
                        const DecodeImageOptions& options, const std::string& name,
                        absl::string_view format) {
  // height and width are below 2^32 and channels at most 4, so the product cannot overflow.
  const std::uint64_t bytes = height * width * channels;
  if (bytes > options.max_decoded_bytes()) {
    fail(absl::StatusCode::kInvalidArgument, name,
         absl::StrFormat("%s of %d x %d pixels x %d channels decodes to %d bytes, over the %d of "
                         "DecodeImageOptions::max_decoded_bytes",
                         format, width, height, channels, bytes, options.max_decoded_bytes()));
  }
}

// Pillow's integer ITU-R 601 luma, so gray results match what Python pipelines compute.
inline std::uint8_t luma(unsigned r, unsigned g, unsigned b) {
  return static_cast<std::uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
}

// Repacks 8-bit pixels. `src_channels` is 1 gray, 2 gray + alpha, 3 RGB, 4 RGBA, or -4 for
// CMYK as libjpeg returns it from Adobe files (inverted, 255 = no ink), which is how Photoshop,
// the source of nearly all CMYK JPEGs, writes it; Pillow and torchvision read it the same way.
at::Tensor convert_channels(const at::Tensor& src, int src_channels, int dst_channels) {
  const std::int64_t height = src.size(0), width = src.size(1);
  at::Tensor dst = at::empty({height, width, dst_channels}, at::kByte);
  const std::uint8_t* in = src.data_ptr<std::uint8_t>();
  std::uint8_t* out = dst.data_ptr<std::uint8_t>();
  const int in_step = std::abs(src_channels);
  for (std::int64_t i = 0, n = height * width; i < n; ++i, in += in_step, out += dst_channels) {
    unsigned r, g, b, a = 255;
    switch (src_channels) {
      case 1:
        r = g = b = in[0];
        break;
      case 2:
        r = g = b = in[0], a = in[1];
        break;
      case 3:
        r = in[0], g = in[1], b = in[2];
        break;
      case 4:
        r = in[0], g = in[1], b = in[2], a = in[3];
        break;
      default:  // -4: CMYK
        r = (in[0] * in[3] + 127) / 255, g = (in[1] * in[3] + 127) / 255;
        b = (in[2] * in[3] + 127) / 255;
    }
    switch (dst_channels) {
      case 1:  // exact for gray input: the weights sum to 65536
        out[0] = luma(r, g, b);
        break;
      case 3:
        out[0] = r, out[1] = g, out[2] = b;
        break;
      default:
        out[0] = r, out[1] = g, out[2] = b, out[3] = a;
    }
  }
  return dst;
}

// ---- JPEG, through TurboJPEG (which keeps libjpeg's setjmp inside itself) -----------------------

at::Tensor decode_jpeg(const unsigned char* data, std::size_t size, const std::string& name,
                       const DecodeImageOptions& options) {
  // A handle per call: it is a few hundred bytes against milliseconds of decoding, and no state
  // (or sticky error) can leak between images or threads.
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(), &tjDestroy);
  if (handle == nullptr) {
    fail(absl::StatusCode::kResourceExhausted, name,
         absl::StrCat("tjInitDecompress: ", tjGetErrorStr2(nullptr)));
  }
  int width = 0, height = 0, subsampling = -1, colorspace = -1;
  // TurboJPEG 2.x also fails here on valid chroma sampling it has no TJSAMP_ name for (Y 3x1,
  // say), after filling in the size and colorspace; those are all this needs, and tjDecompress2
  // decodes such files. Any warning it saw comes back below, as decoding reads the header again.
  const int header =
      tjDecompressHeader3(handle.get(), data, size, &width, &height, &subsampling, &colorspace);
  if (header != 0 && (width < 1 || height < 1 || colorspace < 0)) {
    fail(absl::StatusCode::kDataLoss, name,
         absl::StrCat("corrupt JPEG (", size, " bytes): ", tjGetErrorStr2(handle.get())));
  }
  // libjpeg converts neither CMYK nor YCCK to RGB: decode CMYK and convert here.
  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const int channels =
      options.channels() != 0 ? options.channels() : (colorspace == TJCS_GRAY ? 1 : 3);
  const int decoded_channels = cmyk ? 4 : channels;
  check_decoded_size(height, width, std::max(channels, decoded_channels), options, name, "JPEG");
  static constexpr int kPixelFormat[] = {0, TJPF_GRAY, 0, TJPF_RGB, TJPF_RGBA};
  const int pixel_format = cmyk ? TJPF_CMYK : kPixelFormat[channels];

  at::Tensor decoded = at::empty({height, width, decoded_channels}, at::kByte);
  // libjpeg only warns on a truncated or damaged file and fills what is missing with grey, and
  // TurboJPEG then returns -1 with TJERR_WARNING. Every warning is an error here: a training set
  // must not learn from grey patches (the price: the rare harmless warning, such as stray bytes
  // before the end marker, is refused too). STOPONWARNING stops there instead of decoding the
  // rest for nothing. LIMITSCANS refuses progressive files with hundreds of scans, a known way
  // to burn minutes of CPU on a few KiB.
  if (tjDecompress2(handle.get(), data, size, decoded.data_ptr<std::uint8_t>(), width, 0, height,
                    pixel_format, TJFLAG_STOPONWARNING | TJFLAG_LIMITSCANS) != 0) {
    const bool warning = tjGetErrorCode(handle.get()) == TJERR_WARNING;
    fail(absl::StatusCode::kDataLoss, name,
         absl::StrCat(warning ? "corrupt or truncated JPEG (" : "corrupt JPEG (", width, "x",
                      height, ", ", size, " bytes): ", tjGetErrorStr2(handle.get())));
  }
  return cmyk ? convert_channels(decoded, -4, channels) : decoded;
}

// ---- PNG, through libpng --------------------------------------------------------------------
//
// libpng reports errors by longjmp. Everything the jump can reach is plain C: the callbacks and
// the two png_run_* functions that call setjmp hold only trivially destructible locals, and
// the C++ objects (the tensor, the row pointers, the libpng structs' owner) live in
// decode_png's frame, above the setjmp, where no jump goes.

struct PngState {
  const unsigned char* data;
  std::size_t size;
  std::size_t offset;
  char message[200];  // what libpng said, for the Error
};

void png_on_error(png_structp png, png_const_charp message) {
  auto* state = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(state->message, sizeof(state->message), "%s", message);
  png_longjmp(png, 1);
}

// Warnings (an sRGB profile libpng dislikes, a bad CRC on an ancillary chunk it then skips)
// leave the pixels intact; logging them per image would flood a training job's log.
void png_on_warning(png_structp, png_const_charp) {}

void png_read_from_memory(png_structp png, png_bytep out, png_size_t length) {
  auto* state = static_cast<PngState*>(png_get_io_ptr(png));
  if (length > state->size - state->offset) png_error(png, "truncated: the data ends early");
  std::memcpy(out, state->data + state->offset, length);
  state->offset += length;
}

// Reads the chunks up to the pixels and sets up 8-bit output. False with state->message set on
// an error.
bool png_run_read_info(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  png_set_expand(png);    // palette -> RGB, gray below 8 bits -> 8 bits, tRNS -> alpha
  png_set_scale_16(png);  // 16 -> 8 bits, rounded (png_set_strip_16 would truncate)
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

// Reads the pixels into `rows`, and the chunks after them so a truncated file is an error.
bool png_run_read_image(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
  return true;
}

at::Tensor decode_png(const unsigned char* data, std::size_t size, const std::string& name,
                      const DecodeImageOptions& options) {
  PngState state{data, size, 0, {}};
  struct Reader {
    png_structp png = nullptr;
    png_infop info = nullptr;
    ~Reader() { png_destroy_read_struct(&png, &info, nullptr); }  // no-op when png is null
  } reader;
  reader.png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, &png_on_error, &png_on_warning);
  if (reader.png != nullptr) reader.info = png_create_info_struct(reader.png);
  png_structp png = reader.png;
  png_infop info = reader.info;
  if (png == nullptr || info == nullptr) {
    fail(absl::StatusCode::kResourceExhausted, name, "PNG: out of memory creating the decoder");
  }
  png_set_read_fn(png, &state, &png_read_from_memory);
  auto corrupt = [&] {
    fail(absl::StatusCode::kDataLoss, name,
         absl::StrCat("corrupt PNG (", size, " bytes): ", state.message));
  };
  if (!png_run_read_info(png, info)) corrupt();

  const std::uint32_t width = png_get_image_width(png, info);
  const std::uint32_t height = png_get_image_height(png, info);
  const int stored_channels = png_get_channels(png, info);
  const std::size_t row_bytes = png_get_rowbytes(png, info);
  const int channels = options.channels() != 0 ? options.channels() : stored_channels;
  check_decoded_size(height, width, std::max(channels, stored_channels), options, name, "PNG");
  if (row_bytes != static_cast<std::size_t>(width) * stored_channels) {
    fail(absl::StatusCode::kInternal, name,
         absl::StrCat("PNG: libpng returns ", row_bytes, " bytes a row for ", width, " pixels x ",
                      stored_channels, " channels"));
  }

  at::Tensor decoded = at::empty({height, width, stored_channels}, at::kByte);
  std::vector<png_bytep> rows(height);
  for (std::uint32_t y = 0; y < height; ++y) {
    rows[y] = decoded.data_ptr<std::uint8_t>() + y * row_bytes;
  }
  if (!png_run_read_image(png, rows.data())) corrupt();
  return channels == stored_channels ? decoded
                                     : convert_channels(decoded, stored_channels, channels);
}

}  // namespace

ImageFormat sniff_image_format(const void* data, std::size_t size) {
  auto starts_with = [&](const unsigned char* magic, std::size_t magic_size) {
    return data != nullptr && size >= magic_size && std::memcmp(data, magic, magic_size) == 0;
  };
  if (starts_with(kJpegMagic, sizeof(kJpegMagic))) return ImageFormat::kJpeg;
  if (starts_with(kPngMagic, sizeof(kPngMagic))) return ImageFormat::kPng;
  return ImageFormat::kUnknown;
}

at::Tensor decode_image(const void* data, std::size_t size, const std::string& name,
                        DecodeImageOptions options) {
  const int channels = options.channels();
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4) {
    fail(absl::StatusCode::kInvalidArgument, name,
         absl::StrCat("DecodeImageOptions::channels is ", channels, "; it takes 0, 1, 3 or 4"));
  }
  if (data == nullptr || size == 0) {
    fail(absl::StatusCode::kInvalidArgument, name, "empty input: 0 bytes is not an image");
  }
  const auto* bytes = static_cast<const unsigned char*>(data);
  switch (sniff_image_format(data, size)) {
    case ImageFormat::kJpeg:
      return decode_jpeg(bytes, size, name, options);
    case ImageFormat::kPng:
      return decode_png(bytes, size, name, options);
    case ImageFormat::kUnknown:
      break;
  }
  std::string head;
  for (std::size_t i = 0; i < std::min<std::size_t>(size, 8); ++i) {
    absl::StrAppendFormat(&head, "%s%02X", i == 0 ? "" : " ", bytes[i]);
  }
  fail(absl::StatusCode::kInvalidArgument, name,
       absl::StrCat("unknown image format: ", size, " bytes starting ", head,
                    "; decode_image reads JPEG (FF D8 FF) and PNG (89 50 4E 47 0D 0A 1A 0A)"));
}

at::Tensor decode_image(const at::Tensor& bytes, const std::string& name,
                        DecodeImageOptions options) {
  if (!bytes.defined() || !bytes.device().is_cpu() || bytes.scalar_type() != at::kByte ||
      !bytes.is_contiguous()) {
    fail(absl::StatusCode::kInvalidArgument, name,
         bytes.defined()
             ? absl::StrCat("the bytes must be a contiguous uint8 (Byte) CPU tensor; this one is ",
                            c10::toString(bytes.scalar_type()), " on ", bytes.device().str(),
                            bytes.is_contiguous() ? "" : ", not contiguous")
             : "the bytes tensor is undefined");
  }
  return decode_image(bytes.data_ptr(), bytes.nbytes(), name, options);
}

}  // namespace dataflux
