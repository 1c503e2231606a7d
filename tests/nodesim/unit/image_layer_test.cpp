// An image's files in a sandbox: private dirs get copies (with --chown/--chmod), the host's
// read-only areas get binds over a tmpfs that rebinds the host's entries, new top-level
// directories get plain binds; the WORKDIR is created.
#include "tests/nodesim/image_layer.h"

#include <algorithm>
#include <fstream>

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tests/nodesim/sandbox.h"

namespace kstack::nodesim {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

class ImageLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nodesim-layer-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    // A fake host: /usr/local/bin with one program, /bin -> usr/bin.
    write(host() / "usr/local/bin/tool", "tool");
    write(host() / "usr/bin/sh", "sh");
    fs::create_directory_symlink("usr/bin", host() / "bin");
    fs::create_symlink("tool", host() / "usr/local/bin/tool-link");
    write(context() / "entrypoint.sh", "#!/bin/sh\n");
    fs::permissions(context() / "entrypoint.sh", fs::perms::owner_all);
    write(context() / "conf/app.conf", "x=1\n");
    write(context() / "www/index.html", "hi\n");
    write(root() / "etc/passwd", "root:x:0:0:root:/root:/bin/sh\napp:x:1001:1002::/:/bin/sh\n");
    write(root() / "etc/group", "root:x:0:\napp:x:1002:\n");
    for (const auto& d : private_dirs()) fs::create_directories(root() / d);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static void write(const fs::path& p, const std::string& content) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << content;
  }
  fs::path host() const { return dir_ / "host"; }
  fs::path context() const { return dir_ / "context"; }
  fs::path root() const { return dir_ / "root"; }
  ImageCopy copy(std::vector<fs::path> sources, std::string dest) const {
    ImageCopy c;
    for (auto& s : sources) c.sources.push_back(context() / s);
    c.destination = std::move(dest);
    c.where = "Dockerfile:2";
    return c;
  }
  // The index of `value` in `args` (args.size() when absent).
  static std::size_t at(const Strings& args, const std::string& value) {
    return static_cast<std::size_t>(std::find(args.begin(), args.end(), value) - args.begin());
  }
  fs::path dir_;
};

TEST_F(ImageLayerTest, FilesForPrivateDirsAreCopiedWithOwnerAndMode) {
  Image image;
  auto c = copy({"conf"}, "/etc/app/");
  c.chown = "app";
  c.chmod = 0640;
  image.copies.push_back(c);
  image.copies.push_back(copy({"entrypoint.sh"}, "/opt/app/run.sh"));
  auto args = place_image_files(image, root(), host());
  ASSERT_TRUE(args) << args.error();
  EXPECT_TRUE(args->empty());
  struct stat st {};
  ASSERT_EQ(::stat((root() / "etc/app/app.conf").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1001u);
  EXPECT_EQ(st.st_gid, 1001u);  // Docker: a user without a group gives the uid as the gid
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  ASSERT_EQ(::stat((root() / "opt/app/run.sh").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 0700u);  // the source's mode
  EXPECT_FALSE(fs::exists(root() / "image/etc"));
}

TEST_F(ImageLayerTest, FilesUnderTheHostsUsrAreBoundOverATmpfsThatKeepsTheHostsEntries) {
  Image image;
  image.copies.push_back(copy({"entrypoint.sh"}, "/usr/local/bin/"));
  image.copies.push_back(copy({"entrypoint.sh"}, "/bin/start"));  // /bin -> usr/bin (exists)
  auto args = place_image_files(image, root(), host());
  ASSERT_TRUE(args) << args.error();
  const auto& a = *args;
  ASSERT_LT(at(a, "/usr/local/bin"), a.size());
  EXPECT_EQ(a[at(a, "/usr/local/bin") - 1], "--tmpfs");
  const std::string tool = (host() / "usr/local/bin/tool").string();
  ASSERT_LT(at(a, tool), a.size());
  EXPECT_EQ(a[at(a, tool) + 1], "/usr/local/bin/tool");
  EXPECT_EQ(a[at(a, "/usr/local/bin/tool-link") - 2], "--symlink");
  const std::string staged = (root() / "image/usr/local/bin/entrypoint.sh").string();
  ASSERT_LT(at(a, staged), a.size());
  EXPECT_EQ(a[at(a, staged) - 1], "--bind");
  EXPECT_EQ(a[at(a, staged) + 1], "/usr/local/bin/entrypoint.sh");
  EXPECT_GT(at(a, staged), at(a, tool));  // after the host's entries are back
  // /usr/bin exists on the host, /usr/bin/start does not: /usr/bin is shadowed too.
  EXPECT_EQ(a[at(a, (root() / "image/usr/bin/start").string()) + 1], "/usr/bin/start");
  EXPECT_LT(at(a, "/usr/bin"), a.size());
}

TEST_F(ImageLayerTest, NewTopLevelDirectoriesAreBoundAndTheWorkdirIsCreated) {
  Image image;
  image.copies.push_back(copy({"www"}, "/app/www"));
  image.working_dir = "/app/data";
  auto args = place_image_files(image, root(), host());
  ASSERT_TRUE(args) << args.error();
  EXPECT_EQ(*args, (Strings{"--bind", (root() / "image/app").string(), "/app"}));
  EXPECT_TRUE(fs::exists(root() / "image/app/www/index.html"));
  EXPECT_TRUE(fs::is_directory(root() / "image/app/data"));
}

TEST_F(ImageLayerTest, AnUnknownChownUserIsAnErrorNamingTheInstruction) {
  Image image;
  auto c = copy({"conf"}, "/etc/app/");
  c.chown = "ghost";
  image.copies.push_back(c);
  auto args = place_image_files(image, root(), host());
  ASSERT_FALSE(args);
  EXPECT_NE(args.error().find("Dockerfile:2: --chown=ghost: unable to find user ghost"),
            std::string::npos)
      << args.error();
}

}  // namespace
}  // namespace kstack::nodesim
