package offline

import (
	"fmt"
	"math/rand"
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

// TestEditScriptRebuildsTheTarget checks, on random files, that the edit
// script is a correct one: applied to a it yields b.
func TestEditScriptRebuildsTheTarget(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for n := range 300 {
		a := randomLines(r)
		b := randomLines(r)
		var got []line
		i, j := 0, 0
		for _, e := range editScript(a, b) {
			switch e.op {
			case ' ':
				if e.i != i || e.j != j || a[i] != b[j] {
					t.Fatalf("case %d: keep at %d,%d out of step (%d,%d)", n, e.i, e.j, i, j)
				}
				got = append(got, a[i])
				i++
				j++
			case '-':
				if e.i != i {
					t.Fatalf("case %d: delete at %d out of step (%d)", n, e.i, i)
				}
				i++
			case '+':
				if e.j != j {
					t.Fatalf("case %d: insert at %d out of step (%d)", n, e.j, j)
				}
				got = append(got, b[j])
				j++
			}
		}
		if i != len(a) || fmt.Sprint(got) != fmt.Sprint(b) {
			t.Fatalf("case %d: the script does not turn a into b:\na=%v\nb=%v\ngot=%v", n, a, b, got)
		}
	}
}

func randomLines(r *rand.Rand) []line {
	var sb strings.Builder
	for range r.Intn(12) {
		sb.WriteString(string(rune('a' + r.Intn(4))))
		sb.WriteByte('\n')
	}
	return splitLines(sb.String())
}
