// Image I/O: PNG/JPEG decoding against what Pillow decodes, PNG round trips, error paths, and
// resize/luma/normalisation against Pillow references (tools/make_image_fixtures.py).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "io/image.h"
#include "io/io_test_util.h"

namespace quill {
namespace {

const std::string kDir = std::string(QUILL_FIXTURES_DIR) + "/image/";

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream f(kDir + "expected.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

std::vector<uint8_t> bytes_of(const nlohmann::json& a) { return a.get<std::vector<uint8_t>>(); }

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

Image read_ok(const std::string& name) {
  auto r = read_image(kDir + name);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? std::move(r).value() : Image();
}

void expect_shape(const Image& img, int w, int h, int c) {
  EXPECT_EQ(img.width, w);
  EXPECT_EQ(img.height, h);
  EXPECT_EQ(img.channels, c);
  EXPECT_EQ(img.pixels.size(), size_t(w) * size_t(h) * size_t(c));
}

int max_abs_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  int m = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) m = std::max(m, std::abs(int(a[i]) - int(b[i])));
  return m;
}

// Error message checks: the code, the file name, and a phrase a user can act on.
void expect_error(const Status& s, ErrorCode code, const std::string& file, const std::string& phrase) {
  EXPECT_EQ(s.code(), code) << s.to_string();
  EXPECT_NE(s.to_string().find(file), std::string::npos) << s.to_string();
  EXPECT_NE(s.to_string().find(phrase), std::string::npos) << s.to_string();
}

TEST(ImageRead, PngMatchesPillow) {
  const Image rgb = read_ok("src_rgb.png");
  expect_shape(rgb, 23, 17, 3);
  EXPECT_EQ(rgb.pixels, bytes_of(expected()["src_rgb"]));
  const Image gray = read_ok("src_gray.png");
  expect_shape(gray, 19, 13, 1);
  EXPECT_EQ(gray.pixels, bytes_of(expected()["src_gray"]));
  const Image ga = read_ok("gray_alpha.png");
  expect_shape(ga, 7, 5, 2);
  EXPECT_EQ(ga.pixels, bytes_of(expected()["gray_alpha"]));
  const Image rgba = read_ok("rgba.png");
  expect_shape(rgba, 5, 6, 4);
  EXPECT_EQ(rgba.pixels, bytes_of(expected()["rgba"]));
}

TEST(ImageRead, PngPaletteBilevelAnd16Bit) {
  const Image pal = read_ok("palette_trns.png");  // palette + tRNS -> RGBA
  expect_shape(pal, 7, 5, 4);
  EXPECT_EQ(pal.pixels, bytes_of(expected()["palette_trns"]));
  const Image bits = read_ok("bilevel.png");  // 1-bit gray -> 0 / 255
  expect_shape(bits, 10, 3, 1);
  EXPECT_EQ(bits.pixels, bytes_of(expected()["bilevel"]));
  const Image g16 = read_ok("gray16.png");  // 16-bit -> 8-bit, rounded: round(v / 257)
  expect_shape(g16, 6, 4, 1);
  const auto raw = expected()["gray16_raw"].get<std::vector<int>>();
  ASSERT_EQ(raw.size(), g16.pixels.size());
  for (size_t i = 0; i < raw.size(); ++i) EXPECT_EQ(g16.pixels[i], std::lround(raw[i] / 257.0)) << i;
}

TEST(ImageRead, JpegMatchesPillowWithinOneLevel) {
  const Image rgb = read_ok("rgb.jpg");
  expect_shape(rgb, 16, 12, 3);
  EXPECT_LE(max_abs_diff(rgb.pixels, bytes_of(expected()["rgb_jpg"])), 1);
  const Image gray = read_ok("gray.jpg");
  expect_shape(gray, 11, 9, 1);
  EXPECT_LE(max_abs_diff(gray.pixels, bytes_of(expected()["gray_jpg"])), 1);
}

TEST(ImageRead, JpegCmykIsUnsupported) {
  auto r = read_image(kDir + "cmyk.jpg");
  ASSERT_FALSE(r.is_ok());
  expect_error(r.status(), ErrorCode::kUnsupported, "cmyk.jpg", "CMYK");
}

TEST(ImageRead, MagicBytesNotExtension) {
  testing::TempDir dir;
  const std::string p = dir.file("actually_png.jpg");
  write_bytes(p, file_bytes(kDir + "src_gray.png"));
  auto r = read_image(p);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->pixels, bytes_of(expected()["src_gray"]));
}

TEST(ImageWrite, PngRoundTrip) {
  testing::TempDir dir;
  for (int c : {1, 2, 3, 4}) {
    Image img{13, 7, c, {}};
    img.pixels.resize(size_t(13 * 7 * c));
    for (size_t i = 0; i < img.pixels.size(); ++i) img.pixels[i] = uint8_t((i * 37 + size_t(c)) % 256);
    const std::string p = dir.file("rt" + std::to_string(c) + ".png");
    ASSERT_TRUE(write_png(p, img).is_ok());
    auto back = read_image(p);
    ASSERT_TRUE(back.is_ok()) << back.status().to_string();
    expect_shape(*back, 13, 7, c);
    EXPECT_EQ(back->pixels, img.pixels) << "channels " << c;
  }
}

TEST(ImageWrite, Errors) {
  testing::TempDir dir;
  Image img{4, 4, 3, std::vector<uint8_t>(48, 7)};
  expect_error(write_png(dir.file("no/such/dir/x.png"), img), ErrorCode::kIo, "no/such/dir/x.png",
               "cannot open for writing");
  Image bad = img;
  bad.pixels.resize(47);
  expect_error(write_png(dir.file("b.png"), bad), ErrorCode::kInvalidArgument, "b.png", "47 bytes");
  Image five = img;
  five.channels = 5;
  expect_error(write_png(dir.file("c.png"), five), ErrorCode::kInvalidArgument, "c.png", "channels");
}

TEST(ImageRead, FileErrors) {
  testing::TempDir dir;
  expect_error(read_image(dir.file("missing.png")).status(), ErrorCode::kNotFound, "missing.png", "not found");
  write_bytes(dir.file("empty.png"), {});
  expect_error(read_image(dir.file("empty.png")).status(), ErrorCode::kInvalidFile, "empty.png", "empty");
  write_bytes(dir.file("text.png"), {'h', 'e', 'l', 'l', 'o', '\n'});
  expect_error(read_image(dir.file("text.png")).status(), ErrorCode::kInvalidFile, "text.png", "not a PNG or JPEG");
  expect_error(read_image(dir.path().string()).status(), ErrorCode::kIo, dir.path().string(), "not a regular file");
}

TEST(ImageRead, TruncatedAndCorrupt) {
  testing::TempDir dir;
  const auto png = file_bytes(kDir + "src_rgb.png");
  for (size_t keep : {size_t(8), size_t(20), size_t(40), png.size() / 2, png.size() - 13}) {
    const std::string p = dir.file("trunc.png");
    write_bytes(p, std::vector<uint8_t>(png.begin(), png.begin() + std::ptrdiff_t(keep)));
    expect_error(read_image(p).status(), ErrorCode::kInvalidFile, "trunc.png", "truncated PNG");
  }
  auto flipped = png;
  flipped[png.size() / 2] ^= 0x5a;  // inside IDAT: the CRC check fails
  write_bytes(dir.file("crc.png"), flipped);
  expect_error(read_image(dir.file("crc.png")).status(), ErrorCode::kInvalidFile, "crc.png", "corrupt PNG");

  const auto jpg = file_bytes(kDir + "rgb.jpg");
  for (size_t keep : {size_t(3), size_t(30), jpg.size() / 2, jpg.size() - 2}) {
    const std::string p = dir.file("trunc.jpg");
    write_bytes(p, std::vector<uint8_t>(jpg.begin(), jpg.begin() + std::ptrdiff_t(keep)));
    expect_error(read_image(p).status(), ErrorCode::kInvalidFile, "trunc.jpg", "truncated JPEG");
  }
  std::vector<uint8_t> junk = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x02};
  for (int i = 0; i < 64; ++i) junk.push_back(uint8_t(i * 13));
  write_bytes(dir.file("junk.jpg"), junk);
  expect_error(read_image(dir.file("junk.jpg")).status(), ErrorCode::kInvalidFile, "junk.jpg", "corrupt JPEG");
}

TEST(ImageRead, AbsurdDimensionsRefusedBeforeAllocating) {
  expect_error(read_image(kDir + "huge.png").status(), ErrorCode::kOutOfRange, "huge.png", "100000x1");
  expect_error(read_image(kDir + "huge.jpg").status(), ErrorCode::kOutOfRange, "huge.jpg", "60000x60000");
  EXPECT_TRUE(check_image_size(kMaxImageSide, kMaxImageSide, "x").is_ok());
  EXPECT_EQ(check_image_size(kMaxImageSide + 1, 1, "x").code(), ErrorCode::kOutOfRange);
}

TEST(ImageOps, ResizeMatchesPillow) {
  const Image rgb = read_ok("src_rgb.png");
  const Image gray = read_ok("src_gray.png");
  int worst = 0;
  for (const auto& c : expected()["resize"]) {
    const Image& src = c["src"] == "src_rgb.png" ? rgb : gray;
    const int w = c["w"], h = c["h"];
    const Image out = resize_antialiased(src, w, h);
    expect_shape(out, w, h, src.channels);
    // Bit-exact with the Pillow 13 that made the fixture (older Pillow differs by <= 1).
    const int d = max_abs_diff(out.pixels, bytes_of(c["pixels"]));
    EXPECT_EQ(d, 0) << c["src"] << " -> " << w << "x" << h;
    worst = std::max(worst, d);
  }
  RecordProperty("max_abs_diff", worst);
}

TEST(ImageOps, ToGrayMatchesPillowLuma) {
  const Image gray = to_gray(read_ok("src_rgb.png"));
  expect_shape(gray, 23, 17, 1);
  EXPECT_EQ(gray.pixels, bytes_of(expected()["luma_rgb"]));
}

TEST(ImageOps, AlphaCompositedOverWhite) {
  const Image rgba{3, 1, 4, {10, 20, 30, 255, 10, 20, 30, 0, 200, 100, 0, 128}};
  const Image rgb = to_rgb(rgba);
  expect_shape(rgb, 3, 1, 3);
  // c*a/255 + 255*(1 - a/255), rounded
  const std::vector<uint8_t> want = {10,
                                     20,
                                     30,
                                     255,
                                     255,
                                     255,
                                     uint8_t(std::lround((200 * 128 + 255 * 127) / 255.0)),
                                     uint8_t(std::lround((100 * 128 + 255 * 127) / 255.0)),
                                     uint8_t(std::lround(255 * 127 / 255.0))};
  EXPECT_EQ(rgb.pixels, want);
  const Image g = to_rgb(Image{2, 1, 1, {0, 77}});
  EXPECT_EQ(g.pixels, (std::vector<uint8_t>{0, 0, 0, 77, 77, 77}));
  const Image ga = to_gray(Image{2, 1, 2, {0, 0, 40, 255}});
  EXPECT_EQ(ga.pixels, (std::vector<uint8_t>{255, 40}));
}

TEST(ImageOps, StyleReferenceMatchesTorchvisionNormalisation) {
  const int size = expected()["style_size"];
  auto t = load_style_reference(kDir + "src_rgb.png", size);
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->dtype(), DType::kF32);
  EXPECT_EQ(t->shape(), (Shape{3, size, size}));
  const auto want = expected()["style_ref"].get<std::vector<float>>();
  ASSERT_EQ(int64_t(want.size()), t->numel());
  const float* got = t->data_as<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5f) << i;

  expect_error(load_style_reference(kDir + "nope.png").status(), ErrorCode::kNotFound, "nope.png", "not found");
}

TEST(ImageOps, WrappedStyleLayoutMatchesTheTrainer) {
  for (const auto& c : expected()["style_wrap"]) {
    const Image src = read_ok(c["src"].get<std::string>());
    const int size = c["size"], rh = c["row_height"];
    auto wrapped = wrap_style_line(src, size, rh);
    ASSERT_TRUE(wrapped.is_ok()) << wrapped.status().to_string();
    EXPECT_EQ(wrapped->width, size);
    EXPECT_EQ(wrapped->height, size);
    EXPECT_EQ(wrapped->channels, 1);
    EXPECT_EQ(wrapped->pixels, bytes_of(c["pixels"])) << c["src"] << " size " << size << " row height " << rh;
    // The encoder's input is the same square, RGB and normalised.
    auto t = style_reference_from_image(src, size, StyleLayout{StyleLayout::Kind::kWrap, rh});
    ASSERT_TRUE(t.is_ok());
    const Tensor want = imagenet_normalize(to_rgb(*wrapped));
    EXPECT_EQ(0, std::memcmp(t->data(), want.data(), size_t(want.numel()) * sizeof(float)));
  }
  const Image line = read_ok("style_line.png");
  expect_error(wrap_style_line(line, 30, 16).status(), ErrorCode::kInvalidArgument, "style layout", "multiple of the row height");
  expect_error(wrap_style_line(line, 8, 16).status(), ErrorCode::kInvalidArgument, "style layout", "multiple of the row height");
  expect_error(wrap_style_line(line, 32, 0).status(), ErrorCode::kInvalidArgument, "style layout", "multiple of the row height");
  // A 1-pixel-high sliver 16384 wide would be millions of pixels wide at the row height.
  const Image sliver{16384, 1, 1, std::vector<uint8_t>(16384, 200)};
  expect_error(wrap_style_line(sliver, 32, 16).status(), ErrorCode::kInvalidArgument, "16384x1", "262144 pixels wide");
}

}  // namespace
}  // namespace quill
