/* The tests of manifests/: the fake kube-apiserver of test/tools, driven through its stdin. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "manifests.h"

void mf_fake_start(mf_fake_t *f, const char *flag)
{
  char tool[PATH_MAX + 32];
  ssize_t n = readlink("/proc/self/exe", tool, PATH_MAX - 1);
  cr_assert_gt(n, 0);
  tool[n] = '\0';
  strcpy(strrchr(tool, '/'), "/tools/fake-apiserver");
  int in[2], out[2];
  cr_assert(pipe(in) == 0 && pipe(out) == 0);
  f->pid = fork();
  if (f->pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    execl(tool, tool, flag, (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  f->in = in[1];
  f->out = fdopen(out[0], "r");
  char line[64] = "";
  cr_assert(fgets(line, sizeof line, f->out) && sscanf(line, "port %u", &f->port) == 1,
            "%s did not start", tool);
}

void mf_fake_cmd(mf_fake_t *f, const char *cmd)
{
  dprintf(f->in, "%s\n", cmd);
  char line[512] = "";
  cr_assert(fgets(line, sizeof line, f->out) && strncmp(line, "ok", 2) == 0, "%.200s: %s", cmd, line);
}

void mf_fake_stop(mf_fake_t *f)
{
  if (f->pid <= 0)
    return;
  close(f->in); /* end of its commands: it stops */
  waitpid(f->pid, NULL, 0);
  fclose(f->out);
  f->pid = 0;
}

void mf_kubeconfig_write(const char *path, unsigned port, const char *token)
{
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "%s", path);
  fprintf(f,
          "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n"
          "    server: http://127.0.0.1:%u\nusers:\n- name: u\n  user: {%s%s}\ncontexts:\n"
          "- name: fake\n  context:\n    cluster: fake\n    user: u\ncurrent-context: fake\n",
          port, token ? "token: " : "", token ? token : "");
  fclose(f);
}
