package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

func TestCheckNamesWhatIsOverItsLimit(t *testing.T) {
	root := t.TempDir()
	body := func(lines int) string { return strings.Repeat("\t_ = 0\n", lines) }
	files := map[string]string{
		// 82 lines from func to its closing brace: over.
		"pkg/a/long.go": "package a\n\nfunc long() {\n" + body(80) + "}\n",
		// 80 lines: at the limit.
		"pkg/a/fits.go": "package a\n\ntype T struct{}\n\nfunc (*T) fits() {\n" + body(78) + "}\n",
		// 506 lines of short functions: the file is over.
		"pkg/b/big.go": "package b\n" + strings.Repeat("\nfunc f() {\n\t_ = 0\n\t_ = 0\n}\n", 101),
		// Not counted: tests, generated code, testdata.
		"pkg/a/long_test.go":             "package a\n\nfunc longTest() {\n" + body(600) + "}\n",
		"pkg/a/zz_generated.deepcopy.go": "package a\n\nfunc gen() {\n" + body(600) + "}\n",
		"pkg/generated/x/x.go":           "package x\n\nfunc gen() {\n" + body(600) + "}\n",
		"pkg/a/testdata/t.go":            "package t\n\nfunc data() {\n" + body(600) + "}\n",
	}
	ctrlfixture.WriteFiles(t, root, files)
	problems, err := check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(root, "pkg/a/long.go") + ":3: long is 82 lines, over 80",
		filepath.Join(root, "pkg/b/big.go") + ": 506 lines, over 500",
	}
	if len(problems) != len(want) {
		t.Fatalf("problems:\n%s\nwant %d, starting with:\n%s", strings.Join(problems, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d = %q, want it to start with %q", i, problems[i], w)
		}
	}
}

func TestCheckRefusesGoItCannotParse(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "bad.go"), []byte("package a\nfunc {"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := check(root); err == nil || !strings.Contains(err.Error(), "bad.go") {
		t.Fatalf("check = %v, want an error naming bad.go", err)
	}
}
