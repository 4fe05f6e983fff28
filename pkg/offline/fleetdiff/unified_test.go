package fleetdiff

import (
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	before := map[string]string{
		"Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"README.md": "same\n",
		"gone.yaml": "a: 1\n",
		"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n" +
			"spec:\n  replicas: 1\n  a: 1\n  b: 2\n  c: 3\n  d: 4\n  e: 5\n  f: 6\n  g: 7\n  h: 8\n  tail: x",
	}
	after := map[string]string{
		"Kptfile":   "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  namespace: prod\n",
		"README.md": "same\n",
		"new.yaml":  "b: 2\n",
		"deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n" +
			"spec:\n  replicas: 3\n  a: 1\n  b: 2\n  c: 3\n  d: 4\n  e: 5\n  f: 6\n  g: 7\n  h: 8\n  tail: y\n",
	}
	want := `--- a/Kptfile
+++ b/Kptfile
@@ -2,3 +2,4 @@
 kind: Kptfile
 metadata:
   name: app
+  namespace: prod
--- a/deployment.yaml
+++ b/deployment.yaml
@@ -3,7 +3,7 @@
 metadata:
   name: app
 spec:
-  replicas: 1
+  replicas: 3
   a: 1
   b: 2
   c: 3
@@ -12,4 +12,4 @@
   f: 6
   g: 7
   h: 8
-  tail: x
\ No newline at end of file
+  tail: y
--- a/gone.yaml
+++ /dev/null
@@ -1 +0,0 @@
-a: 1
--- /dev/null
+++ b/new.yaml
@@ -0,0 +1 @@
+b: 2
`
	if got := UnifiedDiff("a", "b", before, after); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := UnifiedDiff("a", "b", before, before); got != "" {
		t.Errorf("the same files differ:\n%s", got)
	}
}

// TestUnifiedDiffIsAPatch checks, on random files (with and without a
// final newline), that each file's diff applied to the old file gives the
// new one.
func TestUnifiedDiffIsAPatch(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := range 300 {
		a, b := randomFile(r), randomFile(r)
		d := UnifiedDiff("a", "b", map[string]string{"f": a}, map[string]string{"f": b})
		if (d == "") != (a == b) {
			t.Fatalf("case %d: diff %q of %q and %q", n, d, a, b)
		}
		if d == "" {
			continue
		}
		if got := applyPatch(t, d, a); got != b {
			t.Fatalf("case %d: the diff does not turn a into b:\na=%q\nb=%q\ngot=%q\n%s", n, a, b, got, d)
		}
	}
}

func randomFile(r *rand.Rand) string {
	var sb strings.Builder
	for range r.Intn(12) {
		sb.WriteString(string(rune('a' + r.Intn(4))))
		sb.WriteByte('\n')
	}
	s := sb.String()
	if s != "" && r.Intn(4) == 0 {
		s = strings.TrimSuffix(s, "\n")
	}
	return s
}

// applyPatch applies a one-file unified diff to old, as patch(1) would.
func applyPatch(t *testing.T, diff, old string) string {
	t.Helper()
	src := strings.SplitAfter(old, "\n")
	var out []string
	next := 0     // the next line of src not yet copied
	var prev byte // the kind of the line before
	for _, l := range strings.SplitAfter(diff, "\n")[2:] {
		switch {
		case l == "":
		case strings.HasPrefix(l, "@@ -"):
			start, _, _ := strings.Cut(strings.TrimPrefix(l, "@@ -"), ",")
			start, _, _ = strings.Cut(start, " ")
			n, err := strconv.Atoi(start)
			if err != nil {
				t.Fatalf("hunk header %q: %v", l, err)
			}
			if n > 0 && !strings.Contains(l, " -"+start+",0 ") {
				n-- // the first line of the hunk, 0-based
			}
			out = append(out, src[next:n]...)
			next = n
		case strings.HasPrefix(l, `\`):
			if prev != '-' { // the old file's last line is not in out
				out[len(out)-1] = strings.TrimSuffix(out[len(out)-1], "\n")
			}
		case l[0] == ' ':
			out = append(out, l[1:])
			next++
		case l[0] == '-':
			next++
		case l[0] == '+':
			out = append(out, l[1:])
		default:
			t.Fatalf("unexpected line %q in\n%s", l, diff)
		}
		if l != "" {
			prev = l[0]
		}
	}
	out = append(out, src[next:]...)
	return strings.Join(out, "")
}
