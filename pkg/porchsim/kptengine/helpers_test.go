package kptengine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
)

// The files under testdata are copied from the measured transcripts of real
// Porch (/tmp/porch-facts, see the README there):
//
//	upstream-app-v1             blueprints.app.v1 as published (09: response to prr9.json)
//	upstream-noctx-v1           blueprints.noctx.v1 as published (16 b2: response)
//	clone-deploy-app-east       the clone of app v1 into the deployment repository (12)
//	clone-blueprints-app-copy   the clone of app v1 into blueprints (16 a; only the files shown there)
//	clone-deploy-noctx          the clone of noctx v1 into deploy (16 b5; only the files shown there)
//	clone-blueprints-noctx-copy the clone of noctx v1 into blueprints (16 b6; only the files shown there)
//	render-set-namespace        PUT of prr1.json and what Porch stored and answered (04)
//	render-cloned-deployment    PUT of prr19b.json on the clone and what Porch stored and answered (19)
//	render-starlark-syntax-error PUT of prr7.json with push-on-render-failure: stored files and message (05, 07)
//	render-not-builtin-*        PUT of prr6a.json and prr6b.json and Porch's messages (06)
//
// Not measured (kpt's merge rules, read line by line):
//
//	upgrade-<case>/want         the files TestUpgrade's case must give
//	heal/old, heal/updated      a revision's files and an update that lost a comment
//	heal/want                   the update healed
//	render-*/want-kptfile-*     the end of the Kptfile a render must write

// readPackageDir reads a package from a testdata directory.
func readPackageDir(t testing.TB, dir string) map[string]string {
	t.Helper()
	files, err := readFiles(filepath.Join("testdata", dir))
	if err != nil {
		t.Fatalf("read testdata %s: %v", dir, err)
	}
	if len(files) == 0 {
		t.Fatalf("read testdata %s: no files", dir)
	}
	return files
}

// readTestdataFile reads one file under testdata.
func readTestdataFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read testdata: %v", err)
	}
	return string(b)
}

// readResults reads a FunctionResultList Porch returned.
func readResults(t *testing.T, name string) kptfilev1.ResultList {
	t.Helper()
	var rl kptfilev1.ResultList
	if err := json.Unmarshal([]byte(readTestdataFile(t, name)), &rl); err != nil {
		t.Fatalf("parse %s: %v", name, err)
	}
	return rl
}

// diffFiles compares packages file by file; with subset, only the files of
// want are compared (the transcript printed only those).
func diffFiles(want, got map[string]string, subset bool) string {
	if subset {
		picked := map[string]string{}
		for p := range want {
			if content, ok := got[p]; ok {
				picked[p] = content
			}
		}
		got = picked
	}
	return cmp.Diff(want, got)
}

// replaceOnce returns s with old replaced once, failing the test when old
// is not there (a test input edit that silently did nothing would prove
// nothing).
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("%q not found in %q", old, s)
	}
	return strings.Replace(s, old, new, 1)
}

// documentCount is the number of YAML documents in a file.
func documentCount(content string) int {
	n := 1
	for _, line := range strings.Split(content, "\n") {
		if line == "---" {
			n++
		}
	}
	return n
}
