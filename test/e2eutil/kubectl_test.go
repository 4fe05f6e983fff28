package e2eutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeKubectl writes a kubectl that echoes its arguments and stdin to
// stdout, warns on stderr, and fails when the first argument is "fail".
func fakeKubectl(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubectl")
	script := `#!/bin/sh
echo "args: $*"
echo "Warning: a warning" >&2
if [ "$3" = "fail" ] || [ "$1" = "fail" ]; then exit 1; fi
if [ "$1" = "apply" ] || [ "$3" = "apply" ]; then cat; fi
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKubectl(t *testing.T) {
	bin := fakeKubectl(t)
	cases := map[string]struct {
		kubectl    Kubectl
		stdin      string
		args       []string
		wantOut    string
		wantErrHas []string
	}{
		"stdout only, warnings left out": {
			kubectl: Kubectl{Path: bin},
			args:    []string{"get", "ns"},
			wantOut: "args: get ns\n",
		},
		"the kubeconfig goes first": {
			kubectl: Kubectl{Path: bin, Kubeconfig: "/tmp/admin.kubeconfig"},
			args:    []string{"get", "ns"},
			wantOut: "args: --kubeconfig /tmp/admin.kubeconfig get ns\n",
		},
		"stdin reaches kubectl": {
			kubectl: Kubectl{Path: bin},
			stdin:   "kind: Namespace\n",
			args:    []string{"apply", "-f", "-"},
			wantOut: "args: apply -f -\nkind: Namespace\n",
		},
		"a failure carries the command, stderr and stdout": {
			kubectl:    Kubectl{Path: bin},
			args:       []string{"fail", "now"},
			wantOut:    "args: fail now\n",
			wantErrHas: []string{"kubectl fail now: exit status 1", "Warning: a warning", "args: fail now"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, err := tc.kubectl.RunInput(tc.stdin, tc.args...)
			if out != tc.wantOut {
				t.Errorf("output %q, want %q", out, tc.wantOut)
			}
			if len(tc.wantErrHas) == 0 {
				if err != nil {
					t.Errorf("error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.wantErrHas {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}
