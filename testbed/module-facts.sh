#!/usr/bin/env bash
# Lines of Java per Maven module (main and test sources git tracks, generated code not counted) and the ten
# largest main classes; docs/modules.md keeps the figures, dated. Usage: testbed/module-facts.sh [CHECKOUT]
set -u
cd "${1:-$(git -C "$(dirname "$0")" rev-parse --show-toplevel)}"
printf '%-55s %7s %7s\n' module main test
for pom in $(git ls-files '*pom.xml' | sort); do
  d=$(dirname "$pom")
  [ -d "$d/src" ] || continue
  m=$( (git ls-files "$d/src/main" | grep '\.java$' | xargs -r cat) | wc -l)
  t=$( (git ls-files "$d/src/test" | grep '\.java$' | xargs -r cat) | wc -l)
  a=$(sed -n '/<parent>/,/<\/parent>/d; s/.*<artifactId>\(.*\)<\/artifactId>.*/\1/p' "$pom" | head -1)
  printf '%-55s %7s %7s  (%s)\n' "$d" "$m" "$t" "$a"
done
echo; echo "largest main classes:"
git ls-files | grep 'src/main/java/.*\.java$' | xargs wc -l | grep -v ' total$' | sort -rn | head -10
