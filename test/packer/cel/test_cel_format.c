/*
 * The Kubernetes format library (format.named, format.dns1123Label(), ...,
 * validate) and map values (map literals, transformMap,
 * transformMapEntry), as the base environment offers them to DRA
 * selectors. Expected values follow apimachinery's validation rules and
 * cel-go's comprehension macros (ext/comprehensions.go's examples). Letters
 * as in cel_cases.h: Y, N, E (runtime error), U (unknown), C (DRA refuses
 * it), S (slicefit does not evaluate it).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cel_cases.h"
#include "slicefit/cel.h"

static sf_index_t *idx;
static sf_cel_cache_t *cache;
static sf_dev_id gpu;

#define NV "gpu.nvidia.com/"

/* One full GPU as the NVIDIA DRA driver publishes it (../shared/fixtures). */
static void setup(void)
{
  static const sf_attr_t a[] = {{NV "type", SF_ATTR_STRING, 0, "gpu"},
                                {NV "productName", SF_ATTR_STRING, 0, "NVIDIA A100-SXM4-40GB"},
                                {NV "uuid", SF_ATTR_STRING, 0,
                                 "GPU-4cf8db2d-06c0-7d70-1a51-e59b25b2c16c"},
                                {NV "index", SF_ATTR_INT, 0, NULL}};
  static const sf_capacity_t mem = {NV "memory", 40LL << 30, false, {0}};
  sf_device_spec_t dev[] = {{"gpu-0", a, 4, &mem, 1, NULL, 0, NULL, 0, false}};
  sf_node_spec_t node = {"nv", 0, 0};
  sf_node_id id;
  idx = sf_index_create();
  cache = sf_cel_cache_create();
  cr_assert_eq(sf_index_node_upsert(idx, &node, &id), 0);
  cr_assert_eq(sf_index_pool_set(idx, id, "gpu.nvidia.com", "nv", dev, 1, NULL, 0), 0);
  gpu = sf_index_dev_find(idx, "gpu.nvidia.com", "nv", "gpu-0");
}

static void teardown(void)
{
  sf_cel_cache_destroy(cache);
  sf_index_destroy(idx);
}

TestSuite(cel_format, .init = setup, .fini = teardown);

#define CHECK(cs) cel_check(cache, idx, cs, sizeof cs / sizeof cs[0], gpu, true)

Test(cel_format, labels_and_subdomains)
{
  static const case_t cs[] = {
      {"!format.dns1123Label().validate('my-label-name').hasValue()", 'Y'},
      {"format.dns1123Label().validate('My-Label').hasValue()", 'Y'},
      {"format.dns1123Label().validate('-a').hasValue()", 'Y'},
      {"format.dns1123Label().validate('a-').hasValue()", 'Y'},
      {"format.dns1123Label().validate('').hasValue()", 'Y'},
      {"format.dns1123Label().validate('a.b').value().size() == 1", 'Y'},
      {"!format.dns1123Label().validate('0').hasValue()", 'Y'},
      {"!format.dns1123Subdomain().validate('apiextensions.k8s.io').hasValue()", 'Y'},
      {"format.dns1123Subdomain().validate('a..b').hasValue()", 'Y'},
      {"format.dns1123Subdomain().validate('.a').hasValue()", 'Y'},
      {"format.dns1123Subdomain().validate('A.b').hasValue()", 'Y'},
      {"!format.dns1035Label().validate('my-label-name').hasValue()", 'Y'},
      {"format.dns1035Label().validate('1abc').hasValue()", 'Y'},
      {"!format.dns1123Label().validate('1abc').hasValue()", 'Y'},
      /* The prefix forms allow a trailing dash (apimachinery's maskTrailingDash). */
      {"!format.dns1123LabelPrefix().validate('my-label-prefix-').hasValue()", 'Y'},
      {"format.dns1123Label().validate('my-label-prefix-').hasValue()", 'Y'},
      {"!format.dns1123SubdomainPrefix().validate('mysubdomain.prefix.-').hasValue()", 'Y'},
      {"!format.dns1035LabelPrefix().validate('my-label-prefix-').hasValue()", 'Y'},
      /* maskTrailingDash drops the last two bytes for one "a": "1-" is checked as "a". */
      {"!format.dns1035LabelPrefix().validate('1-').hasValue()", 'Y'},
      {"format.dns1035LabelPrefix().validate('1a-').hasValue()", 'Y'},
      {"format.dns1123LabelPrefix().validate('-').hasValue()", 'U'},
      /* The product name as the NVIDIA driver publishes it is no label. */
      {"format.dns1123Label().validate(device.attributes['gpu.nvidia.com'].productName)"
       ".hasValue()",
       'Y'},
      {"!format.dns1123Label().validate(device.attributes['gpu.nvidia.com'].type).hasValue()", 'Y'},
  };
  CHECK(cs);
}

Test(cel_format, lengths_count_as_their_own_message)
{
  char *long_ok = cel_repeat("format.dns1123Label().validate('", "a", 64, "').value().size() == 1");
  char *long_bad = cel_repeat("format.dns1123Label().validate('", "A", 64, "').value().size() == 2");
  char *label63 = cel_repeat("!format.dns1123Label().validate('", "a", 63, "').hasValue()");
  char *value64 = cel_repeat("format.labelValue().validate('", "a", 64, "').value().size() == 1");
  char *sub254 = cel_repeat("format.dns1123Subdomain().validate('", "a.", 127, "').hasValue()");
  const case_t cs[] = {{long_ok, 'Y'}, {long_bad, 'Y'}, {label63, 'Y'}, {value64, 'Y'}, {sub254, 'Y'}};
  CHECK(cs);
  free(long_ok);
  free(long_bad);
  free(label63);
  free(value64);
  free(sub254);
}

Test(cel_format, qualified_names_and_label_values)
{
  static const case_t cs[] = {
      {"!format.qualifiedName().validate('apiextensions.k8s.io/v1beta1').hasValue()", 'Y'},
      {"!format.qualifiedName().validate('MyName').hasValue()", 'Y'},
      {"!format.qualifiedName().validate('my.name_2').hasValue()", 'Y'},
      {"format.qualifiedName().validate('a/b/c').value().size() == 1", 'Y'},
      /* An empty name part: "must be non-empty" and the pattern's message. */
      {"format.qualifiedName().validate('example.com/').value().size() == 2", 'Y'},
      {"format.qualifiedName().validate('/name').value().size() == 1", 'Y'},
      {"format.qualifiedName().validate('Example.com/name').value().size() == 1", 'Y'},
      {"format.qualifiedName().validate('_name').hasValue()", 'Y'},
      {"!format.labelValue().validate('').hasValue()", 'Y'},
      {"!format.labelValue().validate('NVIDIA_A100.40GB').hasValue()", 'Y'},
      {"format.labelValue().validate(device.attributes['gpu.nvidia.com'].productName).hasValue()",
       'Y'},
  };
  CHECK(cs);
}

Test(cel_format, uri_uuid_byte_date)
{
  static const case_t cs[] = {
      {"!format.uri().validate('http://example.com').hasValue()", 'Y'},
      {"!format.uri().validate('/a/path').hasValue()", 'Y'},
      {"format.uri().validate('example.com').hasValue()", 'Y'},
      {"!format.uuid().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()", 'Y'},
      {"!format.uuid().validate('123E4567E89B12D3A456426614174000').hasValue()", 'Y'},
      {"format.uuid().validate('123e4567-e89b-12d3-a456-42661417400').hasValue()", 'Y'},
      {"format.uuid().validate(device.attributes['gpu.nvidia.com'].uuid).hasValue()", 'Y'},
      {"!format.uuid().validate(device.attributes['gpu.nvidia.com'].uuid.substring(4))"
       ".hasValue()",
       'Y'},
      {"!format.byte().validate('aGVsbG8=').hasValue()", 'Y'},
      {"!format.byte().validate('aGk=').hasValue() && !format.byte().validate('aA==').hasValue()",
       'Y'},
      {"format.byte().validate('aGVsbG8').hasValue()", 'Y'},
      {"format.byte().validate('').hasValue()", 'Y'},
      {"format.byte().validate('a===').hasValue()", 'Y'},
      {"format.byte().validate('a=bc').hasValue()", 'Y'},
  };
  CHECK(cs);
}

/*
 * format.date() is kube-openapi strfmt's IsDate: time.Parse with the layout
 * "2006-01-02". Its one message is the fixed "invalid date" (format.go).
 */
Test(cel_format, dates)
{
  static const case_t cs[] = {
      /* format.go's own example. */
      {"!format.date().validate('2021-01-01').hasValue()", 'Y'},
      /* time.Parse checks the day against the month's length, leap years included. */
      {"!format.date().validate('2024-02-29').hasValue()", 'Y'},
      {"format.date().validate('2023-02-29').hasValue()", 'Y'},
      {"format.date().validate('1900-02-29').hasValue()", 'Y'},
      {"!format.date().validate('2000-02-29').hasValue()", 'Y'},
      {"!format.date().validate('0000-02-29').hasValue()", 'Y'},
      {"format.date().validate('2024-04-31').hasValue()", 'Y'},
      {"!format.date().validate('2024-12-31').hasValue()", 'Y'},
      /* The month is 1..12 ("month out of range"), the day at least 1. */
      {"format.date().validate('2024-13-01').hasValue()", 'Y'},
      {"format.date().validate('2024-00-10').hasValue()", 'Y'},
      {"format.date().validate('2024-01-00').hasValue()", 'Y'},
      /* "01" and "02" take exactly two digits, "2006" exactly four. */
      {"format.date().validate('2024-1-01').hasValue()", 'Y'},
      {"format.date().validate('2024-01-1').hasValue()", 'Y'},
      {"format.date().validate('20240-01-01').hasValue()", 'Y'},
      {"format.date().validate('+024-01-01').hasValue()", 'Y'},
      {"format.date().validate('2024/01/01').hasValue()", 'Y'},
      {"format.date().validate('').hasValue()", 'Y'},
      /* Text after the day is "extra text". */
      {"format.date().validate('2024-01-01 ').hasValue()", 'Y'},
      {"format.date().validate('2021-01-01T00:00:00Z').hasValue()", 'Y'},
      /* The message is a fixed text, so reading it is certain. */
      {"format.date().validate('2024-13-01').value() == ['invalid date']", 'Y'},
      {"format.named('date').value().validate('x').orValue([]).size() == 1", 'Y'},
  };
  CHECK(cs);
}

/* Days since 0000-03-01 of a proleptic Gregorian date (era arithmetic, not a month table; floored
 * eras, so January and February of year 0 count back from -1). */
static long days_from_civil(long y, long m, long d)
{
  y -= m <= 2;
  long era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
  long doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy;
}

/* Whether y-m-d names a day: the date of its day count is itself. */
static bool civil(long y, long m, long d)
{
  if (m < 1 || m > 12 || d < 1)
    return false;
  long z = days_from_civil(y, m, d), era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
  long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  long doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  long dd = doy - (153 * mp + 2) / 5 + 1, mm = mp < 10 ? mp + 3 : mp - 9;
  return yoe + era * 400 + (mm <= 2) == y && mm == m && dd == d;
}

/*
 * Property: over months 00..13 and days 00..32 of years around every leap
 * rule, the days validate() accepts are exactly the days the calendar has,
 * computed by round-tripping a day count instead of a table of lengths.
 */
Test(cel_format, dates_agree_with_the_calendar)
{
  static const int years[] = {0,    1,    4,    99,   100,  399,  400,  1582, 1600, 1700,
                              1900, 1970, 1999, 2000, 2023, 2024, 2100, 2400, 9996, 9999};
  for (size_t k = 0; k < sizeof years / sizeof years[0]; k++)
    for (int m = 0; m <= 13; m++) {
      char want[160] = "[", expr[512];
      for (int d = 0; d <= 32; d++)
        if (civil(years[k], m, d))
          snprintf(want + strlen(want), sizeof want - strlen(want), "%s%d", want[1] ? ", " : "", d);
      strcat(want, "]");
      snprintf(expr, sizeof expr,
               "lists.range(33).filter(d, !format.date().validate('%04d-%02d-' + "
               "(d < 10 ? '0' : '') + string(d)).hasValue()) == %s",
               years[k], m, want);
      case_t c = {expr, 'Y'};
      cel_check(cache, idx, &c, 1, gpu, true);
    }
}

/*
 * format.datetime() is strfmt's IsDateTime, not ParseDateTime's layouts: at
 * least 4 bytes; lowercased and split at each 't', the first part is an
 * IsDate date and the second matches
 * ^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$
 * with hour <= "23", minute and second <= "59". Its one message is the fixed
 * "invalid datetime" (format.go).
 */
Test(cel_format, datetimes)
{
  static const case_t cs[] = {
      /* format.go's own example, and each zone form the pattern takes. */
      {"!format.datetime().validate('2021-01-01T00:00:00Z').hasValue()", 'Y'},
      {"!format.datetime().validate('2024-02-29T23:59:59+07:00').hasValue()", 'Y'},
      {"!format.datetime().validate('2024-02-29T23:59:59-07:00').hasValue()", 'Y'},
      {"!format.datetime().validate('2024-02-29t23:59:59z').hasValue()", 'Y'},
      /* The zone's digits are not range-checked; "+0700" lacks the pattern's colon. */
      {"!format.datetime().validate('2024-01-01T10:00:00+99:99').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00+0700').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00+07').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00').hasValue()", 'Y'},
      /* Fractional seconds: one rune (the regexp's '.') then digits. */
      {"!format.datetime().validate('2024-01-01T10:00:00.123456789Z').hasValue()", 'Y'},
      {"!format.datetime().validate('2024-01-01T10:00:00,5+01:00').hasValue()", 'Y'},
      {"!format.datetime().validate('2024-01-01T10:00:0012Z').hasValue()", 'Y'},
      {"!format.datetime().validate('2024-01-01T10:00:00\\u00e95Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00\\u00e9\\u00e95Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00\\n5Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00.Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00.5x5Z').hasValue()", 'Y'},
      /* Hour, minute and second ranges; seconds are required, a leap second is not taken. */
      {"format.datetime().validate('2024-01-01T24:00:00Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T23:60:00Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T23:59:60Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T1:00:00Z').hasValue()", 'Y'},
      /* The date part follows IsDate. */
      {"format.datetime().validate('2023-02-29T10:00:00Z').hasValue()", 'Y'},
      {"format.datetime().validate('2024-1-01T10:00:00Z').hasValue()", 'Y'},
      /* Without a 't' there is no second part; parts after the second are never read. */
      {"format.datetime().validate('2024-01-01 10:00:00Z').hasValue()", 'Y'},
      {"!format.datetime().validate('2024-01-01T10:00:00ZT anything').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01T10:00:00T').hasValue()", 'Y'},
      {"format.datetime().validate('').hasValue()", 'Y'},
      {"format.datetime().validate('T').hasValue()", 'Y'},
      {"format.datetime().validate('2024-01-01').value() == ['invalid datetime']", 'Y'},
  };
  CHECK(cs);
}

Test(cel_format, named_messages_and_types)
{
  static const case_t cs[] = {
      {"format.named('dns1123Label').hasValue()", 'Y'},
      {"!format.named('dns1123label').hasValue()", 'Y'},
      {"format.named('uuid').value().validate('x').hasValue()", 'Y'},
      {"!format.named('labelValue').value().validate('ok').hasValue()", 'Y'},
      {"format.named('nope').orValue(format.uri()).validate('/x') == optional.none()", 'Y'},
      /* How many messages is certain; their text differs between releases. */
      {"format.dns1123Label().validate('A').value().size() == 1", 'Y'},
      {"format.dns1123Label().validate('A').value()[0].contains('RFC 1123')", 'U'},
      {"format.dns1123Label().validate('A').value().join('\\n') != ''", 'U'},
      {"format.dns1123Label().validate('A').value().exists(m, m.startsWith('a'))", 'U'},
      {"format.dns1123Label().validate('A').value().all(m, true)", 'Y'},
      {"format.dns1123Label().validate('A').orValue([]).size() == 1", 'Y'},
      {"format.dns1123Label().validate('a').orValue(['ok']) == ['ok']", 'Y'},
      {"format.dns1123Label().validate('A').value().sort().size() == 1", 'U'},
      /* What cel-go's checker refuses: DRA refuses the object. */
      {"format.dns1123Label().validate(1).hasValue()", 'C'},
      {"format.named('uuid').validate('x').hasValue()", 'C'},
      {"format.nope().validate('x').hasValue()", 'C'},
      {"format.dns1123Label.validate('x').hasValue()", 'C'},
      {"format.named(1).hasValue()", 'C'},
      {"format.dns1123Label('x').validate('x').hasValue()", 'C'},
      {"'x'.validate('x').hasValue()", 'C'},
      {"format.dns1123Label().validate('x')", 'C'},
      {"format.dns1123Label() == format.dns1123Label()", 'U'},
  };
  CHECK(cs);
}

Test(cel_format, versions_and_cost)
{
  cr_expect_eq(sf_cel_function_minor("format.dns1123Label"), 31);
  cr_expect_eq(sf_cel_function_minor("format.named"), 31);
  cr_expect_eq(sf_cel_function_minor("validate"), 31);
  const sf_cel_prog_t *p = sf_cel_compile(cache, "format.uuid().validate('x').hasValue()");
  cr_expect_eq(sf_cel_prog_min_minor(p), 31);
  /* 300 validations of a 6,000-byte text, ceil(6001 / 10) * ceil(30 / 4) each: past 1e6. */
  char *big = cel_repeat("cel.bind(s, '", "a", 6000,
                         "', lists.range(300).exists(i, !format.dns1123Label().validate(s)"
                         ".hasValue()) || true)");
  char why[256];
  cr_expect_eq(cel_outcome(cache, idx, big, gpu, why, sizeof why, true), 'E');
  cr_expect(strstr(why, "cost limit") != NULL, "%s", why);
  free(big);
}

/* ---- map values ---- */

Test(cel_format, map_literals)
{
  static const case_t cs[] = {
      {"{'a': 1, 'b': 2}['b'] == 2", 'Y'},
      {"{'a': 1}.a == 1", 'Y'},
      {"{'a': 1}['c'] == 1", 'E'},
      {"{'a': 1}[?'c'].orValue(0) == 0", 'Y'},
      {"{'a': 1}[?'a'].value() == 1", 'Y'},
      {"{'a': 1}.?a.orValue(0) == 1", 'Y'},
      {"has({'a': 1}.a) && !has({'a': 1}.b)", 'Y'},
      {"'a' in {'a': 1} && !('b' in {'a': 1})", 'Y'},
      {"size({'a': 1, 'b': 2}) == 2 && {}.size() == 0", 'Y'},
      {"{1: 'x'}[1.0] == 'x' && {1: 'x'}[1u] == 'x'", 'Y'},
      {"{1: 'x'}[1.5] == 'x'", 'E'},
      {"{true: 1}[true] == 1", 'Y'},
      {"{'a': 1, 'b': [2]} == {'b': [2], 'a': 1}", 'C'},
      {"{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", 'Y'},
      {"{'a': 1} == {'a': 2}", 'N'},
      {"{'a': 1} == {'b': 1}", 'N'},
      {"{'a': 1} != {'a': 1, 'b': 2}", 'Y'},
      {"{'a': 1} == 1", 'N'},
      {"{'a': 1} == device.attributes['gpu.nvidia.com']", 'U'},
      {"{'a': 1, 'a': 2}.size() == 2", 'E'},
      {"{'a': 1, 2: 'b'}.size() == 2", 'C'},
      {"{'a': 1, 'b': 'c'}.size() == 2", 'C'},
      {"{dyn('a'): 1, dyn(2): 'b'}.size() == 2", 'C'},
      {"{dyn('a'): 1, dyn(2): dyn('b')}.size() == 2", 'Y'},
      {"{[1]: 1}.size() == 1", 'U'},
      {"{'a': 1 / 0}.size() == 1", 'E'},
      {"{?'a': 1}.size() == 1", 'S'},
      {"{'k': device.attributes['gpu.nvidia.com'].type}.k == 'gpu'", 'Y'},
      {"{'a': 1}.exists(k, k == 'a') && {'a': 1, 'b': 2}.all(k, v, v > 0)", 'Y'},
      {"{'a': 1, 'b': 2}.map(k, k) == ['a', 'b']", 'Y'},
      {"{'a': 1, 'b': 2}.filter(k, k != 'a') == ['b']", 'Y'},
      {"{'a': 1, 'b': 2}.transformList(k, v, v * 10) == [10, 20]", 'Y'},
      {"{'a': 1} < {'b': 1}", 'C'},
      {"{'a': 1} + {'b': 1}", 'C'},
  };
  CHECK(cs);
}

Test(cel_format, transform_map_and_entry)
{
  static const case_t cs[] = {
      /* cel-go's examples (ext/comprehensions.go). */
      {"[1, 2, 3].transformMap(i, v, (i * v) + v) == {0: 1, 1: 4, 2: 9}", 'Y'},
      {"[1, 2, 3].transformMap(i, v, i % 2 == 0, (i * v) + v) == {0: 1, 2: 9}", 'Y'},
      {"{'greeting': 'hello'}.transformMap(k, v, v + '!') == {'greeting': 'hello!'}", 'Y'},
      {"{'greeting': 'hello'}.transformMapEntry(k, v, {v: k}) == {'hello': 'greeting'}", 'Y'},
      {"[1, 2, 3].transformMapEntry(i, v, {v: i}) == {1: 0, 2: 1, 3: 2}", 'Y'},
      {"{'greeting': 'aloha', 'farewell': 'aloha'}.transformMapEntry(k, v, {v: k}).size() == 1", 'E'},
      {"[1, 2].transformMapEntry(i, v, i > 0, {v: i, 'x': i}) == {2: 1, 'x': 1}", 'C'},
      {"[1, 2].transformMapEntry(i, v, i > 0, {dyn(v): i, dyn('x'): i}) == "
       "{dyn(2): 1, dyn('x'): 1}",
       'Y'},
      {"[1, 2].transformMapEntry(i, v, {'k': i}).size() == 1", 'E'},
      {"[1, 2].transformMapEntry(i, v, i)", 'C'},
      {"[1, 2].transformMapEntry(i, v, dyn(i)).size() == 2", 'E'},
      {"[1, 2].transformMap(i, v, 1 / (v - 1)).size() == 2", 'E'},
      {"[1, 2].transformMap(i, v, 'x', v).size() == 2", 'E'},
      {"[].transformMap(i, v, v) == {}", 'Y'},
      /* The device's attributes of one domain, by name. */
      {"device.attributes['gpu.nvidia.com'].transformMap(k, v, k != 'index', string(v))"
       ".type == 'gpu'",
       'Y'},
      {"device.attributes['gpu.nvidia.com'].transformMap(k, v, v).size() == 4", 'Y'},
      {"device.attributes['gpu.nvidia.com'].transformMap(k, v, k.size()).exists(k, v, "
       "k == 'productName' && v == 11)",
       'Y'},
      {"device.attributes['gpu.nvidia.com'].transformMapEntry(k, v, k == 'type', {v: k}).gpu == "
       "'type'",
       'Y'},
      {"device.attributes.transformMap(k, v, v).size() == 1", 'U'},
      {"1.transformMap(i, v, v)", 'C'},
      {"[1].transformMap(i, v, v)[0] == 1", 'Y'},
  };
  CHECK(cs);
}

Test(cel_format, maps_grow_past_other_values_and_stop_at_the_arena)
{
  /* Each entry's transform allocates a list: the map moves above it and stays whole. */
  static const case_t cs[] = {
      {"lists.range(20).transformMap(i, v, [v, v]).all(k, l, l == [k, k])", 'Y'},
      {"lists.range(20).transformMapEntry(i, v, {v: [v]}).size() == 20", 'Y'},
      {"lists.range(400).transformMap(i, v, v).size() == 400", 'U'},
  };
  CHECK(cs);
  cr_expect_eq(sf_cel_function_minor("transformMap"), 32);
  cr_expect_eq(sf_cel_function_minor("transformMapEntry"), 32);
}
