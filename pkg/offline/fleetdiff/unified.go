package fleetdiff

import (
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// UnifiedDiff returns the difference between two versions of a package's
// files in unified format (as diff -u and git print it), file by file in
// path order, with three lines of context; "" when they are the same.
// aName and bName prefix the paths in the --- and +++ lines; a file only
// on one side is compared with /dev/null. The line diff is go-udiff's (the
// Go tools' Myers diff).
func UnifiedDiff(aName, bName string, a, b map[string]string) string {
	paths := make([]string, 0, len(a)+len(b))
	for p := range a {
		paths = append(paths, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	var out strings.Builder
	for _, p := range paths {
		before, inA := a[p]
		after, inB := b[p]
		if inA && inB && before == after {
			continue
		}
		from, to := aName+"/"+p, bName+"/"+p
		if !inA {
			from = "/dev/null"
		}
		if !inB {
			to = "/dev/null"
		}
		out.WriteString(udiff.Unified(from, to, before, after))
	}
	return out.String()
}
