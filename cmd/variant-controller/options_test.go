package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

func TestEnabledReconcilers(t *testing.T) {
	cases := map[string]struct {
		flag    string
		flagSet bool
		env     map[string]string
		want    []string
		wantErr string
	}{
		"flag with one loop": {
			flag: "packagevariants", flagSet: true,
			want: []string{"packagevariants"},
		},
		"flag with both loops and spaces": {
			flag: " packagevariantsets , packagevariants ", flagSet: true,
			want: []string{"packagevariants", "packagevariantsets"},
		},
		"flag star enables all": {
			flag: "*", flagSet: true,
			want: []string{"packagevariants", "packagevariantsets"},
		},
		"flag wins over environment": {
			flag: "packagevariantsets", flagSet: true,
			env:  map[string]string{"ENABLE_PACKAGEVARIANTS": "true"},
			want: []string{"packagevariantsets"},
		},
		"flag given empty is an error": {
			flag: "", flagSet: true,
			wantErr: "--reconcilers is empty",
		},
		"unknown name names the valid ones": {
			flag: "packagevariants,fanout", flagSet: true,
			wantErr: `unknown reconciler "fanout"; valid names are packagevariants, packagevariantsets, or * for all`,
		},
		"environment true": {
			env:  map[string]string{"ENABLE_PACKAGEVARIANTS": "true"},
			want: []string{"packagevariants"},
		},
		"environment 1 and YES in any case": {
			env:  map[string]string{"ENABLE_PACKAGEVARIANTS": "1", "ENABLE_PACKAGEVARIANTSETS": "YES"},
			want: []string{"packagevariants", "packagevariantsets"},
		},
		"environment True mixed case": {
			env:  map[string]string{"ENABLE_PACKAGEVARIANTSETS": "True"},
			want: []string{"packagevariantsets"},
		},
		"environment false disables": {
			env:  map[string]string{"ENABLE_PACKAGEVARIANTS": "false", "ENABLE_PACKAGEVARIANTSETS": "1"},
			want: []string{"packagevariantsets"},
		},
		"environment garbage is an error naming the variable": {
			env:     map[string]string{"ENABLE_PACKAGEVARIANTS": "sure"},
			wantErr: `ENABLE_PACKAGEVARIANTS="sure": not a boolean`,
		},
		"nothing enabled is an error saying how to enable": {
			env:     map[string]string{"ENABLE_PACKAGEVARIANTS": "0"},
			wantErr: "no reconciler enabled: pass --reconcilers=packagevariants,packagevariantsets (or *), or set ENABLE_PACKAGEVARIANTS or ENABLE_PACKAGEVARIANTSETS to true",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := enabledReconcilers(tc.flag, tc.flagSet, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("enabled reconcilers (-want +got):\n%s", diff)
			}
		})
	}
}

// unreachableKubeconfig is a kubeconfig whose server nothing answers:
// enough for run to build its clients.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunExitCodes(t *testing.T) {
	cases := map[string]struct {
		args       []string
		env        map[string]string
		wantCode   int
		wantStdout []string
		wantStderr string
	}{
		"help lists every flag": {
			args:     []string{"--help"},
			wantCode: exitOK,
			wantStdout: []string{"--reconcilers", "--kubeconfig", "--workers", "--kube-api-qps", "--kube-api-burst",
				"--resync-period", "--leader-elect", "--leader-election-namespace", "--leader-election-id",
				"--health-probe-bind-address", "--metrics-bind-address", "--metrics-secure", "--metrics-cert-dir", "--namespace", "--default-service-account", "-v, --v"},
		},
		"bad default service account exits 2": {
			args:       []string{"--reconcilers=*", "--default-service-account=Not_A_Name"},
			wantCode:   exitUsage,
			wantStderr: `--default-service-account "Not_A_Name" is not a ServiceAccount name`,
		},
		"unknown reconciler exits 2": {
			args:       []string{"--reconcilers=foo"},
			wantCode:   exitUsage,
			wantStderr: "valid names are packagevariants, packagevariantsets",
		},
		"unknown flag exits 2": {
			args:       []string{"--no-such-flag"},
			wantCode:   exitUsage,
			wantStderr: "unknown flag: --no-such-flag",
		},
		"no reconciler exits 2": {
			wantCode:   exitUsage,
			wantStderr: "no reconciler enabled",
		},
		"bad workers exits 2": {
			args:       []string{"--reconcilers=*", "--workers=0"},
			wantCode:   exitUsage,
			wantStderr: "--workers must be at least 1",
		},
		// Durations client-go would refuse only later, once connected.
		"a negative shutdown grace period exits 2": {args: []string{"--reconcilers=*", "--shutdown-grace-period=-1s"},
			wantCode: exitUsage, wantStderr: "--shutdown-grace-period must not be negative, got -1s"},
		"a retry period of 0 exits 2": {args: []string{"--reconcilers=*", "--leader-election-retry-period=0"},
			wantCode: exitUsage, wantStderr: "--leader-election-retry-period must be positive, got 0s"},
		"a renew deadline within a retry period and its jitter exits 2": {args: []string{"--reconcilers=*", "--leader-election-retry-period=10s"}, wantCode: exitUsage,
			wantStderr: "--leader-election-renew-deadline (10s) must be longer than --leader-election-retry-period (10s) times 1.2, client-go's jitter: 12s"},
		"lease timings are not checked without leader election": {
			args: []string{"--reconcilers=*", "--leader-elect=false", "--leader-election-retry-period=0", "--kubeconfig=/nonexistent/kubeconfig",
				"--health-probe-bind-address=", "--metrics-bind-address="},
			wantCode: exitError, wantStderr: "load kubeconfig /nonexistent/kubeconfig",
		},
		"a certificate directory for plain HTTP exits 2": {
			args:       []string{"--reconcilers=*", "--metrics-secure=false", "--metrics-cert-dir=/etc/tls"},
			wantCode:   exitUsage,
			wantStderr: "--metrics-cert-dir (/etc/tls) is for HTTPS, but --metrics-secure=false serves plain HTTP; drop one of them",
		},
		"a certificate directory without a pair exits 1 naming the files": {
			args: []string{"--reconcilers=*", "--leader-elect=false", "--kubeconfig=" + unreachableKubeconfig(t),
				"--health-probe-bind-address=", "--metrics-bind-address=127.0.0.1:0", "--metrics-cert-dir=/nonexistent/tls"},
			wantCode:   exitError,
			wantStderr: "--metrics-cert-dir /nonexistent/tls: stat /nonexistent/tls/tls.crt: no such file or directory; stat /nonexistent/tls/tls.key: no such file or directory; it must hold tls.crt and tls.key",
		},
		"missing kubeconfig exits 1 naming the file": {
			args:       []string{"--reconcilers=*", "--leader-elect=false", "--kubeconfig=/nonexistent/kubeconfig", "--health-probe-bind-address=", "--metrics-bind-address="},
			wantCode:   exitError,
			wantStderr: "load kubeconfig /nonexistent/kubeconfig",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, func(k string) string { return tc.env[k] }, &stdout, &stderr)
			if code != tc.wantCode {
				t.Fatalf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, stdout.String(), stderr.String())
			}
			for _, want := range tc.wantStdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantStderr, stderr.String())
			}
		})
	}
}
