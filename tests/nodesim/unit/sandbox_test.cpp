// Sandbox layout: private directories, copied /etc, bwrap arguments, guarded removal.
#include "tests/nodesim/sandbox.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

namespace kstack::nodesim {
namespace {

namespace fs = std::filesystem;

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nodesim-sandbox-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST_F(SandboxTest, PreparesPrivateDirectoriesAndEtc) {
  SandboxSpec spec{dir_ / "c",
                   "web-0",
                   "127.0.0.5\tweb-0\n",
                   {},
                   "nameserver 10.244.0.1\nsearch ns.svc.cluster.local\n",
                   {}};
  ASSERT_TRUE(prepare_root(spec));
  for (const auto& d : private_dirs()) EXPECT_TRUE(fs::is_directory(dir_ / "c" / d)) << d;
  EXPECT_EQ(read(dir_ / "c/etc/hostname"), "web-0\n");
  EXPECT_EQ(read(dir_ / "c/etc/hosts"), "127.0.0.5\tweb-0\n");
  EXPECT_EQ(read(dir_ / "c/etc/resolv.conf"),
            "nameserver 10.244.0.1\nsearch ns.svc.cluster.local\n");
  EXPECT_TRUE(fs::exists(dir_ / "c/etc/passwd"));
  EXPECT_EQ(fs::read_symlink(dir_ / "c/var/run"), "../run");
  EXPECT_NE(fs::status(dir_ / "c/tmp").permissions() & fs::perms::sticky_bit, fs::perms::none);
}

TEST_F(SandboxTest, BwrapArgumentsBindPrivateDirsThenImageFilesThenVolumesParentsFirst) {
  SandboxSpec spec{dir_ / "c", "web-0",
                   "",         {{"/v/b", "/data/sub", false}, {"/v/a", "/data", true}},
                   "",         {"--bind", "/staged/app", "/app"}};
  auto a = bwrap_args(spec);
  auto at = [&](const std::string& s) {
    return std::distance(a.begin(), std::find(a.begin(), a.end(), s));
  };
  EXPECT_LT(at("--unshare-pid"), static_cast<long>(a.size()));
  EXPECT_EQ(a[at("--hostname") + 1], "web-0");
  EXPECT_EQ(a[at((dir_ / "c/etc").string()) + 1], "/etc");
  EXPECT_LT(at("/v/a"), at("/v/b"));
  EXPECT_EQ(a[at("/v/a") - 1], "--ro-bind");
  // Image files after the private dirs (they may land in them) and before the volumes (which
  // hide what the image has at their mount points, as in a container).
  EXPECT_LT(at((dir_ / "c/media").string()), at("/staged/app"));
  EXPECT_LT(at("/staged/app"), at("/v/a"));
  EXPECT_EQ(a[at("/v/b") - 1], "--bind");
}

TEST_F(SandboxTest, RemovesOnlyInsideTheBase) {
  fs::create_directories(dir_ / "base/pod/x");
  EXPECT_FALSE(remove_inside(dir_ / "base", dir_));
  EXPECT_FALSE(remove_inside(dir_ / "base", dir_ / "base"));
  EXPECT_FALSE(remove_inside(dir_ / "base", dir_ / "base/../other"));
  EXPECT_TRUE(remove_inside(dir_ / "base", dir_ / "base/pod"));
  EXPECT_FALSE(fs::exists(dir_ / "base/pod"));
}

TEST(SubPath, OnlyRelativePathsWithoutParentReferences) {
  EXPECT_TRUE(safe_relative_path(""));
  EXPECT_TRUE(safe_relative_path("a/b"));
  EXPECT_FALSE(safe_relative_path("/a"));
  EXPECT_FALSE(safe_relative_path("a/../../b"));
}

TEST_F(SandboxTest, MissingSubPathDirectoriesTakeTheVolumesModeWhateverTheUmask) {
  fs::create_directory(dir_ / "pvc");
  fs::permissions(dir_ / "pvc", fs::perms::all);
  const auto old_umask = ::umask(022);
  auto made = make_mount_source(dir_ / "pvc/var/lib/app");
  ::umask(old_umask);
  ASSERT_TRUE(made) << made.error();
  for (const auto* d : {"pvc/var", "pvc/var/lib", "pvc/var/lib/app"}) {
    EXPECT_EQ(fs::status(dir_ / d).permissions(), fs::perms::all) << d;
  }
  // An existing directory keeps its mode.
  fs::create_directory(dir_ / "pvc/kept");
  fs::permissions(dir_ / "pvc/kept", fs::perms::owner_all);
  ASSERT_TRUE(make_mount_source(dir_ / "pvc/kept"));
  EXPECT_EQ(fs::status(dir_ / "pvc/kept").permissions(), fs::perms::owner_all);
}

}  // namespace
}  // namespace kstack::nodesim
