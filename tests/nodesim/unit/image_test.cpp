// The Dockerfile reader: the last stage's COPY/ADD, ENV, WORKDIR, USER, ENTRYPOINT and CMD;
// errors with file, line and instruction; users; Kubernetes' command/args rules.
#include "tests/nodesim/image.h"

#include <fstream>

#include <gtest/gtest.h>
#include <stdlib.h>

namespace kstack::nodesim {
namespace {

namespace fs = std::filesystem;
using Strings = std::vector<std::string>;

class ImageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/nodesim-image-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    write("entrypoint.sh", "#!/bin/sh\n");
    write("conf/app.conf", "x=1\n");
    write("conf/extra/more.conf", "y=2\n");
    write("a.txt", "a");
    write("b.txt", "b");
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& content) {
    fs::create_directories((dir_ / rel).parent_path());
    std::ofstream(dir_ / rel) << content;
  }
  tl::expected<Image, std::string> parse(const std::string& text) {
    return parse_dockerfile(text, dir_, "Dockerfile");
  }
  fs::path dir_;
};

TEST_F(ImageTest, OnlyTheLastStageCounts) {
  auto image = parse(
      "FROM golang AS build\nENV A=1\nCOPY a.txt /a\nENTRYPOINT [\"/build\"]\n"
      "FROM debian:bookworm-slim\nENV B=2\n");
  ASSERT_TRUE(image) << image.error();
  EXPECT_EQ(image->env, (std::vector<std::pair<std::string, std::string>>{{"B", "2"}}));
  EXPECT_TRUE(image->copies.empty());
  EXPECT_TRUE(image->entrypoint.empty());
}

TEST_F(ImageTest, ReadsCopyEnvWorkdirUserEntrypointAndCmd) {
  auto image = parse(
      "# syntax=docker/dockerfile:1\n"
      "FROM debian:bookworm-slim\n"
      "RUN apt-get update && \\\n"
      "    # a comment inside a continuation\n"
      "    apt-get install -y etcd-server\n"
      "ENV ETCD_DATA_DIR=/var/lib/etcd GREETING=\"hello world\"\n"
      "ENV LEGACY some value\n"
      "ARG VERSION=3.4\n"
      "WORKDIR /srv\n"
      "WORKDIR app\n"
      "COPY --chown=nobody:nogroup --chmod=0755 entrypoint.sh /usr/local/bin/\n"
      "COPY conf/ ${ETCD_DATA_DIR}/conf-$VERSION/\n"
      "ADD [\"a.txt\", \"b.txt\", \"rel/\"]\n"
      "EXPOSE 2379\nLABEL a=b\n"
      "USER nobody\n"
      "ENTRYPOINT [\"/usr/local/bin/entrypoint.sh\"]\n"
      "CMD [\"--name\", \"x\"]\n");
  ASSERT_TRUE(image) << image.error();
  EXPECT_EQ(image->env,
            (std::vector<std::pair<std::string, std::string>>{{"ETCD_DATA_DIR", "/var/lib/etcd"},
                                                              {"GREETING", "hello world"},
                                                              {"LEGACY", "some value"}}));
  EXPECT_EQ(image->working_dir, "/srv/app");
  EXPECT_EQ(image->user, "nobody");
  EXPECT_EQ(image->entrypoint, Strings{"/usr/local/bin/entrypoint.sh"});
  EXPECT_EQ(image->cmd, (Strings{"--name", "x"}));
  ASSERT_EQ(image->copies.size(), 3u);
  EXPECT_EQ(image->copies[0].sources, std::vector<fs::path>{dir_ / "entrypoint.sh"});
  EXPECT_EQ(image->copies[0].destination, "/usr/local/bin/");
  EXPECT_EQ(image->copies[0].chown, "nobody:nogroup");
  EXPECT_EQ(image->copies[0].chmod, 0755u);
  EXPECT_EQ(image->copies[0].where, "Dockerfile:11");
  EXPECT_EQ(image->copies[1].destination, "/var/lib/etcd/conf-3.4/");
  EXPECT_EQ(image->copies[1].sources, std::vector<fs::path>{dir_ / "conf"});
  EXPECT_EQ(image->copies[2].destination, "/srv/app/rel/");  // relative to WORKDIR
  EXPECT_EQ(image->copies[2].sources, (std::vector<fs::path>{dir_ / "a.txt", dir_ / "b.txt"}));
}

TEST_F(ImageTest, ShellFormsRunThroughTheShellAsDockerDoes) {
  auto image = parse("FROM x\nENTRYPOINT exec server --port 1\nCMD echo hi\n");
  ASSERT_TRUE(image) << image.error();
  EXPECT_EQ(image->entrypoint, (Strings{"/bin/sh", "-c", "exec server --port 1"}));
  EXPECT_EQ(image->cmd, (Strings{"/bin/sh", "-c", "echo hi"}));
  auto bash = parse("FROM x\nSHELL [\"/bin/bash\", \"-c\"]\nCMD echo hi\n");
  ASSERT_TRUE(bash) << bash.error();
  EXPECT_EQ(bash->cmd, (Strings{"/bin/bash", "-c", "echo hi"}));
}

TEST_F(ImageTest, WildcardsExpandInTheContext) {
  auto image = parse("FROM x\nCOPY *.txt /data/\n");
  ASSERT_TRUE(image) << image.error();
  ASSERT_EQ(image->copies.size(), 1u);
  EXPECT_EQ(image->copies[0].sources, (std::vector<fs::path>{dir_ / "a.txt", dir_ / "b.txt"}));
}

TEST_F(ImageTest, RunHeredocsAreSkipped) {
  auto image =
      parse("FROM x\nRUN <<EOF\napt-get install -y redis\nCOPY nothing /x\nEOF\nUSER 1000\n");
  ASSERT_TRUE(image) << image.error();
  EXPECT_TRUE(image->copies.empty());
  EXPECT_EQ(image->user, "1000");
}

TEST_F(ImageTest, ErrorsNameTheFileLineAndInstruction) {
  auto from = parse("FROM x\nRUN true\nCOPY --from=build /out /out\n");
  ASSERT_FALSE(from);
  EXPECT_NE(from.error().find("Dockerfile:3: COPY: --from=build is not supported"),
            std::string::npos)
      << from.error();
  auto missing = parse("FROM x\nCOPY missing.sh /usr/local/bin/\n");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("Dockerfile:2: COPY: source missing.sh not found"),
            std::string::npos)
      << missing.error();
  auto outside = parse("FROM x\nCOPY ../etc/passwd /x\n");
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().find("outside the build context"), std::string::npos);
  auto url = parse("FROM x\nADD https://example.com/a.tgz /x\n");
  ASSERT_FALSE(url);
  EXPECT_NE(url.error().find("Dockerfile:2: ADD: remote source"), std::string::npos);
  auto unknown = parse("FROM x\nFETCH a b\n");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error(), "Dockerfile:2: FETCH: unknown instruction");
  auto before = parse("ENV A=1\nFROM x\n");
  ASSERT_FALSE(before);
  EXPECT_EQ(before.error(), "Dockerfile:1: ENV: instruction before the first FROM");
  auto chmod = parse("FROM x\nCOPY --chmod=rwx a.txt /a\n");
  ASSERT_FALSE(chmod);
  EXPECT_NE(chmod.error().find("--chmod=rwx: expected an octal mode"), std::string::npos);
  EXPECT_FALSE(parse("RUN true\n"));
}

TEST_F(ImageTest, ReadImageReadsTheContextsDockerfile) {
  write("Dockerfile", "FROM x\nCMD [\"true\"]\n");
  auto image = read_image("kstack/x:1", dir_);
  ASSERT_TRUE(image) << image.error();
  EXPECT_EQ(image->ref, "kstack/x:1");
  EXPECT_EQ(image->cmd, Strings{"true"});
  auto none = read_image("kstack/y:1", dir_ / "nowhere");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("image kstack/y:1: cannot read"), std::string::npos);
}

TEST(ImageRefs, AreComparedAsARuntimeNormalizesThem) {
  EXPECT_EQ(normalize_image_ref("kstack/etcd:3.4.23"), "kstack/etcd:3.4.23");
  EXPECT_EQ(normalize_image_ref("docker.io/kstack/etcd:3.4.23"), "kstack/etcd:3.4.23");
  EXPECT_EQ(normalize_image_ref("docker.io/library/busybox"), "busybox:latest");
  EXPECT_EQ(normalize_image_ref("localhost:5000/app"), "localhost:5000/app:latest");
  ImageSet set;
  Image image;
  image.ref = "kstack/redis:7.0.15";
  set.add(image);
  EXPECT_NE(set.find("docker.io/kstack/redis:7.0.15"), nullptr);
  EXPECT_EQ(set.find("kstack/redis:7.0.16"), nullptr);
}

TEST_F(ImageTest, UsersResolveAgainstPasswdAndGroup) {
  write("etc/passwd", "root:x:0:0:root:/root:/bin/sh\napp:x:1001:1002::/home/app:/bin/sh\n");
  write("etc/group", "root:x:0:\napp:x:1002:\nstaff:x:50:\n");
  const fs::path etc = dir_ / "etc";
  auto root = resolve_user("", etc);
  ASSERT_TRUE(root);
  EXPECT_EQ(root->uid, 0u);
  EXPECT_EQ(root->home, "/root");
  auto app = resolve_user("app", etc);
  ASSERT_TRUE(app) << app.error();
  EXPECT_EQ(app->uid, 1001u);
  EXPECT_EQ(app->gid, 1002u);
  EXPECT_EQ(app->home, "/home/app");
  auto staff = resolve_user("app:staff", etc);
  ASSERT_TRUE(staff) << staff.error();
  EXPECT_EQ(staff->gid, 50u);
  auto numeric = resolve_user("1001", etc);
  ASSERT_TRUE(numeric);
  EXPECT_EQ(numeric->gid, 1002u);  // from the uid's entry
  auto unknown_uid = resolve_user("4242:7", etc);
  ASSERT_TRUE(unknown_uid);
  EXPECT_EQ(unknown_uid->uid, 4242u);
  EXPECT_EQ(unknown_uid->gid, 7u);
  EXPECT_EQ(unknown_uid->home, "/");
  auto missing = resolve_user("ghost", etc);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error(), "unable to find user ghost: no matching entries in passwd file");
  EXPECT_FALSE(resolve_user("app:ghosts", etc));
}

TEST(ImageProcess, FollowsKubernetesCommandAndArgsRules) {
  Image image;
  image.entrypoint = {"/entry.sh"};
  image.cmd = {"--default"};
  EXPECT_EQ(image_process(image, {}, {}), (Strings{"/entry.sh", "--default"}));
  EXPECT_EQ(image_process(image, {}, {"--mine"}), (Strings{"/entry.sh", "--mine"}));
  EXPECT_EQ(image_process(image, {"sh", "-c"}, {}), (Strings{"sh", "-c"}));  // CMD dropped
  EXPECT_EQ(image_process(image, {"sh"}, {"-c", "x"}), (Strings{"sh", "-c", "x"}));
  Image cmd_only;
  cmd_only.cmd = {"redis-server"};
  EXPECT_EQ(image_process(cmd_only, {}, {}), Strings{"redis-server"});
  EXPECT_TRUE(image_process(Image{}, {}, {}).empty());
}

}  // namespace
}  // namespace kstack::nodesim
