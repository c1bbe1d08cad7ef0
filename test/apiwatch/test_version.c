/* The Kubernetes version slicefit answers for: --kubernetes-version and /version's gitVersion. */
#include <criterion/criterion.h>
#include "slicefit/apiwatch.h"

Test(version, parses_minor_versions)
{
  static const struct {
    const char *text;
    int minor;
  } ok[] = {{"1.34", 34}, {"v1.35", 35}, {"v1.34.2", 34}, {"v1.33.5-gke.1200", 33}, {"1.36+", 36}};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    int m = -1;
    cr_assert_eq(sf_kube_version_parse(ok[i].text, &m), 0, "%s", ok[i].text);
    cr_assert_eq(m, ok[i].minor, "%s", ok[i].text);
  }
  static const char *const bad[] = {"", "34", "2.1", "1.", "1.x", "1.34x", "v", "1.1000", "11.2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int m = 7;
    cr_assert_eq(sf_kube_version_parse(bad[i], &m), SF_EINVAL, "%s", bad[i]);
    cr_assert_eq(m, 7, "unchanged on error: %s", bad[i]);
  }
}
