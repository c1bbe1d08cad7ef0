#!/bin/sh
# san-reports.sh DIR: prints the sanitizer reports in DIR (ASAN_OPTIONS and
# UBSAN_OPTIONS log_path, set by make check) and exits 1 if there is any,
# leaving out only leaks whose every frame is inside libcriterion (or the C
# start-up): libcriterion's own. Its runner, which leaks such blocks, is not
# checked at all (test/lsan_runner.c); this is for any a worker shows. An LSan
# suppression cannot say "every frame": `leak:libcriterion.so` matches any
# frame, and every test's allocation has libcriterion below it, so it hid
# every leak of every test.
set -eu
dir=$1
found=0
for f in "$dir"/*; do
  [ -f "$f" ] || continue
  real=$(awk '
    /ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error:/ { other = 1 }
    /^(Direct|Indirect) leak of/ { if (inblock && ours) n++; inblock = 1; ours = 0; next }
    inblock && /^ *#[0-9]+ / {
      if ($1 == "#0") next
      if ($0 !~ /libcriterion\.so|libc_start|libc-start|in _start /) ours = 1
      next
    }
    inblock && /^ *$/ { if (ours) n++; inblock = 0; ours = 0 }
    END { if (inblock && ours) n++; print (other || n) ? 1 : 0 }' "$f")
  if [ "$real" = 1 ]; then
    echo "--- $f"
    cat "$f"
    found=1
  fi
done
if [ "$found" = 1 ]; then
  echo "sanitizer reports from processes of this suite (above, from $dir)"
  exit 1
fi
