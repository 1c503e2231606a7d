// The apps' images: each app with an image/ directory is registered under its AppType's
// defaultImageRepoTag; every appdefs image is readable by the simulator; the Debian packages
// the images install are the ones scripts/install-deps.sh puts on the test machines.
#include "tests/nodesim/testing/appdef_images.h"

#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <stdlib.h>

#include "tests/nodesim/image.h"

namespace kstack::testenv::e2e {
namespace {

namespace fs = std::filesystem;

class AppdefImages : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nodesim-appdefs-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  static void write(const fs::path& p, const std::string& content) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), {}};
  }
  fs::path dir_;
};

std::string apptype(const std::string& tag) {
  return "apiVersion: kstack.io/v1beta1\nkind: AppType\nmetadata:\n  name: x\nspec:\n"
         "  defaultImageRepoTag: " +
         tag + "\n";
}

TEST_F(AppdefImages, MapEachAppsDefaultImageRepoTagToItsImageDirectory) {
  write(dir_ / "etcd/apptype.yaml", apptype("kstack/etcd:3.4.23"));
  write(dir_ / "etcd/image/Dockerfile", "FROM debian:bookworm-slim\n");
  write(dir_ / "kafka/apptype.yaml", apptype("apache/kafka:3.7"));  // no image/: not ours
  auto images = appdef_images(dir_);
  ASSERT_TRUE(images) << images.error();
  EXPECT_EQ(*images,
            (std::map<std::string, fs::path>{{"kstack/etcd:3.4.23", dir_ / "etcd/image"}}));
}

TEST_F(AppdefImages, AnImageWithoutATagInItsAppTypeIsAnErrorNamingTheFile) {
  write(dir_ / "redis/apptype.yaml", "kind: AppType\nspec: {}\n");
  write(dir_ / "redis/image/Dockerfile", "FROM debian:bookworm-slim\n");
  auto images = appdef_images(dir_);
  ASSERT_FALSE(images);
  EXPECT_NE(images.error().find((dir_ / "redis/apptype.yaml").string()), std::string::npos);
}

TEST_F(AppdefImages, EveryAppdefsImageIsReadableByTheSimulator) {
  auto images = appdef_images();
  ASSERT_TRUE(images) << images.error();
  for (const auto& [ref, dir] : *images) {
    auto image = nodesim::read_image(ref, dir);
    EXPECT_TRUE(image) << image.error();
  }
}

TEST_F(AppdefImages, AppdefsImagesInstallOnlyDebianPackagesTheTestMachinesHave) {
  const auto available =
      install_deps_packages(read(appdefs_dir().parent_path() / "scripts/install-deps.sh"));
  ASSERT_FALSE(available.empty());
  EXPECT_NE(std::find(available.begin(), available.end(), "bubblewrap"), available.end());
  auto images = appdef_images();
  ASSERT_TRUE(images) << images.error();
  for (const auto& [ref, dir] : *images) {
    auto missing = packages_missing_from(dir / "Dockerfile", available);
    ASSERT_TRUE(missing) << missing.error();
    for (const auto& line : *missing) {
      ADD_FAILURE() << line << " is installed by the image but not by scripts/install-deps.sh";
    }
  }
}

TEST_F(AppdefImages, ThePackageCheckReportsWhatTheTestMachinesLack) {
  write(dir_ / "Dockerfile",
        "FROM debian:bookworm-slim\n"
        "RUN apt-get update \\\n"
        " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\\n"
        "      etcd-server=3.4.23-4 etcd-client/bookworm \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
        "RUN apt install -y redis-server; echo done\n");
  const auto available = install_deps_packages(
      "packages=(\n  build-essential cmake  # tools (many)\n  etcd-server etcd-client\n)\n"
      "other=(redis-server)\n");
  EXPECT_EQ(available,
            (std::vector<std::string>{"build-essential", "cmake", "etcd-server", "etcd-client"}));
  auto missing = packages_missing_from(dir_ / "Dockerfile", available);
  ASSERT_TRUE(missing) << missing.error();
  EXPECT_EQ(*missing, std::vector<std::string>{(dir_ / "Dockerfile").string() + ": redis-server"});
}

}  // namespace
}  // namespace kstack::testenv::e2e
