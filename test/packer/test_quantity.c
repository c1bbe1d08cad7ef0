/*
 * Tests of packer/quantity.c: the resource.Quantity grammar, exactness,
 * range limits and canonical formatting (round trips, with a fixed seed).
 */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "slicefit/quantity.h"

#define KI 1024LL
#define MILLI 1000LL

static sf_milli_t q(const char *s)
{
  sf_milli_t v = 0x5eed;
  int rc = sf_quantity_parse(s, &v);
  cr_assert_eq(rc, 0, "parse(\"%s\") = %d (%s)", s, rc, sf_strerror(rc));
  return v;
}

static void bad(const char *s, int want)
{
  sf_milli_t v = 0x5eed;
  int rc = sf_quantity_parse(s, &v);
  cr_assert_eq(rc, want, "parse(\"%s\") = %d, want %d", s, rc, want);
  cr_assert_eq(v, 0x5eed, "parse(\"%s\") changed *out on error", s);
}

static const char *fmt(sf_milli_t v, int binary)
{
  static char buf[64];
  int n = sf_quantity_format(v, binary, buf, sizeof buf);
  cr_assert_eq((size_t)n, strlen(buf));
  return buf;
}

Test(quantity, plain_and_fractional)
{
  cr_assert_eq(q("0"), 0);
  cr_assert_eq(q("1"), 1000);
  cr_assert_eq(q("500m"), 500);
  cr_assert_eq(q("1m"), 1);
  cr_assert_eq(q("0.001"), 1);
  cr_assert_eq(q("1.5"), 1500);
  cr_assert_eq(q("+7"), 7000);
  cr_assert_eq(q("-2k"), -2000000);
  cr_assert_eq(q("007"), 7000);
  cr_assert_eq(q(".5"), 500);
  cr_assert_eq(q("5."), 5000);
  cr_assert_eq(q("1.000000000000000000000000000000"), 1000);
  cr_assert_eq(q("-0"), 0);
  cr_assert_eq(q("0.0000000000000000000001e22"), 1000);
}

Test(quantity, binary_vs_decimal)
{
  cr_assert_eq(q("1.5Gi"), q("1536Mi"));
  cr_assert_eq(q("1.5Gi"), 3 * KI * KI * KI / 2 * MILLI);
  cr_assert_eq(q("80G"), 80000000000LL * MILLI);
  cr_assert_eq(q("80Gi"), 80 * KI * KI * KI * MILLI);
  cr_assert_neq(q("80G"), q("80Gi"));
  /* 0.0005Ki is 0.512 bytes: exactly 512 milli. */
  cr_assert_eq(q("0.0005Ki"), 512);
  cr_assert_eq(q("0.5Ki"), 512 * MILLI);
}

Test(quantity, every_suffix)
{
  static const struct {
    const char *s;
    sf_milli_t v;
  } t[] = {
      {"3m", 3},
      {"3", 3 * MILLI},
      {"3k", 3000 * MILLI},
      {"3M", 3000000 * MILLI},
      {"3G", 3000000000LL * MILLI},
      {"3T", 3000000000000LL * MILLI},
      {"3P", 3000000000000000LL * MILLI},
      {"3E", 0}, /* checked below: does not fit */
      {"3Ki", 3 * KI * MILLI},
      {"3Mi", 3 * KI * KI * MILLI},
      {"3Gi", 3 * KI * KI * KI * MILLI},
      {"3Ti", 3 * KI * KI * KI * KI * MILLI},
      {"3Pi", 3 * KI * KI * KI * KI * KI * MILLI},
      {"0.001E", 1000000000000000LL * MILLI},
      {"0.001Ei", 1LL << 60}, /* 2^60 / 1000 bytes: exact in milli */
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    if (strcmp(t[i].s, "3E") == 0)
      continue;
    cr_assert_eq(q(t[i].s), t[i].v, "%s", t[i].s);
  }
  bad("3E", SF_ERANGE);
  bad("3Ei", SF_ERANGE);
  bad("0.125Ei", SF_ERANGE);
  bad("0.0001Ei", SF_EINVAL);
}

Test(quantity, exponents)
{
  cr_assert_eq(q("1e3"), 1000 * MILLI);
  cr_assert_eq(q("1E3"), 1000 * MILLI);
  cr_assert_eq(q("1e+3"), 1000 * MILLI);
  cr_assert_eq(q("1e-3"), 1);
  cr_assert_eq(q("12.5e-1"), 1250);
  cr_assert_eq(q("1e0"), 1000);
  cr_assert_eq(q("0e999999999999999999999999"), 0);
  cr_assert_eq(q("0e-999999999999999999999999"), 0);
  bad("1e-4", SF_EINVAL);
  bad("1e16", SF_ERANGE);
  bad("1e999999999999999999999999", SF_ERANGE);
  bad("1e-999999999999999999999999", SF_EINVAL);
  cr_assert_eq(q("9e15"), 9000000000000000000LL);
}

Test(quantity, precision_finer_than_milli)
{
  bad("0.0001", SF_EINVAL);
  bad("1.0001", SF_EINVAL);
  bad("0.5m", SF_EINVAL);
  bad("0.0001Ki", SF_EINVAL); /* 102.4 milli */
  bad("1u", SF_EINVAL);
  bad("1n", SF_EINVAL);
}

Test(quantity, range)
{
  bad("9223372036854775807", SF_ERANGE);
  bad("9223372036854775.808", SF_ERANGE);
  bad("9223372036854775808m", SF_ERANGE);
  bad("-9223372036854775.809", SF_ERANGE);
  bad("99999999999999999999999999999999999999999", SF_ERANGE);
  /* Too large beats too precise. */
  bad("9223372036854775807.0001", SF_ERANGE);
  cr_assert_eq(q("9223372036854775.807"), INT64_MAX);
  cr_assert_eq(q("9223372036854775807m"), INT64_MAX);
  cr_assert_eq(q("-9223372036854775.808"), INT64_MIN);
  cr_assert_eq(q("-9223372036854775808m"), INT64_MIN);
  /* (2^63 - 1) / 1000 / 2^40 = 8388.6: the largest whole Ti that fits. */
  cr_assert_eq(q("8388Ti"), 8388 * KI * KI * KI * KI * MILLI);
  bad("8389Ti", SF_ERANGE);
}

/* Near the limits, too large wins over too precise, and only exactly. */
Test(quantity, range_before_precision)
{
  bad("9223372036854775.8079", SF_ERANGE);
  bad("9223372036854775.8069", SF_EINVAL);
  bad("-9223372036854775.8081", SF_ERANGE);
  bad("-9223372036854775.8079", SF_EINVAL);
  bad("8388.6084Ti", SF_ERANGE);
  bad("0.00001Ki", SF_EINVAL);
}

/* Inputs longer than the 80 digits the parser keeps. */
Test(quantity, long_inputs)
{
  char buf[400];
  snprintf(buf, sizeof buf, "9223372036854775.806%0100d", 0);
  cr_assert_eq(q(buf), INT64_MAX - 1);
  memset(buf, '9', 300);
  memcpy(buf, "9223372036854775.806", 20);
  buf[300] = '\0';
  bad(buf, SF_EINVAL); /* just below INT64_MAX, not whole */
  memcpy(buf, "9223372036854775.807", 20);
  bad(buf, SF_ERANGE); /* just above */
  snprintf(buf, sizeof buf, "0.%0200d1e204", 0);
  cr_assert_eq(q(buf), 1000000);
  snprintf(buf, sizeof buf, "%0300d", 7);
  cr_assert_eq(q(buf), 7000);
  snprintf(buf, sizeof buf, "1%0100de-100", 0);
  cr_assert_eq(q(buf), 1000);
  snprintf(buf, sizeof buf, "0.%0100d5Ki", 0); /* 5e-101 KiB: nonzero, below milli */
  bad(buf, SF_EINVAL);
}

Test(quantity, bad_syntax)
{
  static const char *const t[] = {
      "",    "+",   "-",   ".",    "-.",   "1.2.3", "Gi",    "1 Gi", " 1",   "1 ",  "1KiB",
      "1ki", "1K",  "1g",  "1e",   "1e+",  "1E-",   "1e1.5", "1ee3", "1Gi3", "1mm", "1x",
      "--1", "+-1", "1,5", "0x10", "1Gi ", "1e3k",  "1.Gi.", "e3",   "∞",
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    bad(t[i], SF_EINVAL);
}

Test(quantity, parse_n_reads_only_len_bytes)
{
  sf_milli_t v = 0;
  cr_assert_eq(sf_quantity_parse_n("1.5Gi trailing", 5, &v), 0);
  cr_assert_eq(v, q("1.5Gi"));
  cr_assert_eq(sf_quantity_parse_n("12", 1, &v), 0);
  cr_assert_eq(v, 1000);
  cr_assert_eq(sf_quantity_parse_n("1\0"
                                   "5",
                                   3, &v),
               SF_EINVAL);
  cr_assert_eq(sf_quantity_parse_n(NULL, 0, &v), SF_EINVAL);
}

Test(quantity, format_canonical)
{
  cr_assert_str_eq(fmt(q("1.5Gi"), 1), "1536Mi");
  cr_assert_str_eq(fmt(q("1.5"), 0), "1500m");
  cr_assert_str_eq(fmt(q("1.5"), 1), "1500m");
  cr_assert_str_eq(fmt(2000 * MILLI, 0), "2k");
  cr_assert_str_eq(fmt(q("80Gi"), 1), "80Gi");
  cr_assert_str_eq(fmt(q("80Gi"), 0), "85899345920");
  cr_assert_str_eq(fmt(q("80G"), 0), "80G");
  /* 80e9 bytes is 78125000 * 1024: whole KiB, so the binary family holds it. */
  cr_assert_str_eq(fmt(q("80G"), 1), "78125000Ki");
  cr_assert_str_eq(fmt(q("3k"), 1), "3k"); /* not divisible by 1024 */
  cr_assert_str_eq(fmt(q("4864Mi"), 1), "4864Mi");
  cr_assert_str_eq(fmt(q("1Ki"), 1), "1Ki");
  cr_assert_str_eq(fmt(q("1536"), 1), "1536");
  cr_assert_str_eq(fmt(q("1e3"), 0), "1k");
  cr_assert_str_eq(fmt(q("1e15"), 0), "1P");
  cr_assert_str_eq(fmt(0, 0), "0");
  cr_assert_str_eq(fmt(0, 1), "0");
  cr_assert_str_eq(fmt(-2000000, 0), "-2k");
  cr_assert_str_eq(fmt(-2000000000, 0), "-2M");
  cr_assert_str_eq(fmt(-1536 * KI * MILLI, 1), "-1536Ki");
  cr_assert_str_eq(fmt(INT64_MAX, 0), "9223372036854775807m");
  cr_assert_str_eq(fmt(INT64_MIN, 1), "-9223372036854775808m");
  cr_assert_str_eq(fmt(8191 * KI * KI * KI * KI * MILLI, 1), "8191Ti");
}

Test(quantity, format_truncates_like_snprintf)
{
  char buf[4] = "xyz";
  cr_assert_eq(sf_quantity_format(1536 * KI * MILLI, 1, buf, sizeof buf), 6);
  cr_assert_str_eq(buf, "153");
  cr_assert_eq(sf_quantity_format(1, 0, NULL, 0), 2);
  cr_assert_eq(sf_quantity_format(5000, 0, buf, 1), 1);
  cr_assert_str_eq(buf, "");
}

static void roundtrip(sf_milli_t v)
{
  char buf[64];
  for (int binary = 0; binary <= 1; binary++) {
    sf_milli_t back = 0;
    sf_quantity_format(v, binary, buf, sizeof buf);
    cr_assert_eq(sf_quantity_parse(buf, &back), 0, "parse(format(%" PRId64 ")) \"%s\"", v, buf);
    cr_assert_eq(back, v, "\"%s\" gave %" PRId64 ", want %" PRId64, buf, back, v);
  }
}

/* xorshift64*: a fixed seed, so a failure reproduces. */
static uint64_t next(uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

Test(quantity, format_roundtrips)
{
  static const sf_milli_t fixed[] = {
      0,
      1,
      -1,
      999,
      1000,
      1001,
      1024000,
      1023000,
      1000000,
      INT64_MAX,
      INT64_MIN,
      INT64_MAX - 999,
      INT64_MIN + 1,
      1024LL * 1024 * 1024 * 1024 * 1024 * 1000,
      1000000000000000000LL,
  };
  uint64_t seed = 0x51ce0f17ULL;
  for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
    roundtrip(fixed[i]);
  for (int i = 0; i < 100000; i++) {
    uint64_t r = next(&seed);
    int shape = (int)(r & 3);
    sf_milli_t v = (sf_milli_t)(r >> 2);
    /* Mix arbitrary values with whole binary and decimal multiples. */
    if (shape == 1)
      v = (sf_milli_t)((r >> 20) % 8000000) * 1024 * 1024 * MILLI;
    else if (shape == 2)
      v = (sf_milli_t)((r >> 20) % 9000000) * 1000000 * MILLI;
    if (r & (1ULL << 63))
      v = -v;
    roundtrip(v);
  }
}

/* Parses a rendered value at every suffix and compares with integer math. */
Test(quantity, random_values_exact)
{
  uint64_t seed = 42;
  for (int i = 0; i < 20000; i++) {
    char buf[64];
    unsigned k = (unsigned)(next(&seed) % 5);
    uint64_t n = next(&seed) % (k == 4 ? 8388 : 1000000);
    sf_milli_t want = (sf_milli_t)n * MILLI << (10 * k);
    static const char *const bin[] = {"", "Ki", "Mi", "Gi", "Ti"};
    snprintf(buf, sizeof buf, "%" PRIu64 "%s", n, bin[k]);
    cr_assert_eq(q(buf), want, "%s", buf);
    /* The same bytes as an exact fraction of the next unit up (n/1024). */
    if (k > 0) {
      snprintf(buf, sizeof buf, "%" PRIu64 ".%010" PRIu64 "%s", n / 1024, n % 1024 * 9765625, bin[k]);
      cr_assert_eq(q(buf), (sf_milli_t)n * MILLI << (10 * (k - 1)), "%s", buf);
    }
  }
}
