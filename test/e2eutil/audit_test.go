package e2eutil

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Lines as the kube-apiserver writes them (--audit-log-format=json, level
// Metadata), trimmed of annotations.
const (
	lineCreatePR       = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-1","stage":"ResponseComplete","requestURI":"/apis/porch.kpt.dev/v1alpha1/namespaces/smoke/packagerevisions","verb":"create","user":{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.2 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"packagerevisions","namespace":"smoke","apiGroup":"porch.kpt.dev","apiVersion":"v1alpha1"},"responseStatus":{"metadata":{},"code":201},"requestReceivedTimestamp":"2026-05-09T10:00:00.000000Z","stageTimestamp":"2026-05-09T10:00:00.120000Z"}`
	lineStatusUpdate   = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-2","stage":"ResponseComplete","requestURI":"/apis/config.porch.kpt.dev/v1alpha1/namespaces/smoke/packagevariants/app/status","verb":"update","user":{"username":"system:serviceaccount:variant-controller-system:variant-controller","uid":"u1","groups":["system:serviceaccounts","system:serviceaccounts:variant-controller-system","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"variant-controller","objectRef":{"resource":"packagevariants","namespace":"smoke","name":"app","apiGroup":"config.porch.kpt.dev","apiVersion":"v1alpha1","subresource":"status"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-05-09T10:00:01.000000Z","stageTimestamp":"2026-05-09T10:00:01.010000Z"}`
	lineConflict       = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-3","stage":"ResponseComplete","requestURI":"/apis/config.porch.kpt.dev/v1alpha1/namespaces/smoke/packagevariants/app/status","verb":"update","user":{"username":"system:serviceaccount:variant-controller-system:variant-controller"},"userAgent":"variant-controller","objectRef":{"resource":"packagevariants","namespace":"smoke","name":"app","apiGroup":"config.porch.kpt.dev","apiVersion":"v1alpha1","subresource":"status"},"responseStatus":{"metadata":{},"status":"Failure","message":"conflict","reason":"Conflict","code":409},"requestReceivedTimestamp":"2026-05-09T10:00:01.100000Z","stageTimestamp":"2026-05-09T10:00:01.110000Z"}`
	lineDiscovery      = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-4","stage":"ResponseComplete","requestURI":"/apis?timeout=32s","verb":"get","user":{"username":"system:serviceaccount:variant-controller-system:variant-controller"},"userAgent":"variant-controller","responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-05-09T10:00:02.000000Z","stageTimestamp":"2026-05-09T10:00:02.001000Z"}`
	lineListConfigMaps = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-5","stage":"ResponseComplete","requestURI":"/api/v1/configmaps?limit=500\u0026resourceVersion=0","verb":"list","user":{"username":"system:serviceaccount:variant-controller-system:variant-controller"},"userAgent":"variant-controller","objectRef":{"resource":"configmaps","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-05-09T10:00:02.100000Z","stageTimestamp":"2026-05-09T10:00:02.104000Z"}`
	// A watch: its ResponseStarted line comes when it opens, its
	// ResponseComplete line when it ends.
	lineWatchStarted = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-6","stage":"ResponseStarted","requestURI":"/apis/porch.kpt.dev/v1alpha1/packagerevisions?watch=true","verb":"watch","user":{"username":"system:serviceaccount:variant-controller-system:variant-controller"},"userAgent":"variant-controller","objectRef":{"resource":"packagerevisions","apiGroup":"porch.kpt.dev","apiVersion":"v1alpha1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-05-09T10:00:03.000000Z","stageTimestamp":"2026-05-09T10:00:03.002000Z"}`
	// A watch through the aggregator whose client went away: its final event
	// is Panic, not ResponseComplete.
	lineAbortedWatch = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-8","stage":"Panic","requestURI":"/apis/porch.kpt.dev/v1alpha1/packagerevisions?allowWatchBookmarks=true\u0026resourceVersionMatch=NotOlderThan\u0026sendInitialEvents=true\u0026timeout=5m48s\u0026timeoutSeconds=348\u0026watch=true","verb":"watch","user":{"username":"system:serviceaccount:variant-controller-system:variant-controller","uid":"06eb0544-6ea7-4ca2-a80a-b43c6bd12067","groups":["system:serviceaccounts","system:serviceaccounts:variant-controller-system","system:authenticated"]},"sourceIPs":["127.0.0.1"],"userAgent":"variant-controller","objectRef":{"resource":"packagerevisions","apiGroup":"porch.kpt.dev","apiVersion":"v1alpha1"},"responseStatus":{"metadata":{},"status":"Failure","message":"APIServer panic'd: net/http: abort Handler","reason":"InternalError","code":500},"requestReceivedTimestamp":"2026-05-09T10:00:05.000000Z","stageTimestamp":"2026-05-09T10:00:09.000000Z"}`
	lineMarker       = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"0b3c5a0e-7","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/default/configmaps/e2e-audit-flush-1-2-3","verb":"get","user":{"username":"kubernetes-admin"},"userAgent":"e2e.test","objectRef":{"resource":"configmaps","namespace":"default","name":"e2e-audit-flush-1-2-3","apiVersion":"v1"},"responseStatus":{"metadata":{},"status":"Failure","reason":"NotFound","code":404},"requestReceivedTimestamp":"2026-05-09T10:00:04.000000Z","stageTimestamp":"2026-05-09T10:00:04.001000Z"}`
)

func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

func auditIDs(events []auditv1.Event) []string {
	ids := []string{}
	for _, e := range events {
		ids = append(ids, string(e.AuditID))
	}
	return ids
}

func TestParseEntries(t *testing.T) {
	cases := map[string]struct {
		data    string
		base    Position
		wantIDs []string
		wantEnd Position
		wantErr string
	}{
		"complete lines are parsed, only final stages kept": {
			data:    lines(lineCreatePR, lineWatchStarted, lineStatusUpdate, lineAbortedWatch),
			wantIDs: []string{"0b3c5a0e-1", "0b3c5a0e-2", "0b3c5a0e-8"},
			wantEnd: Position(len(lines(lineCreatePR, lineWatchStarted, lineStatusUpdate, lineAbortedWatch))),
		},
		"a line being written is left for the next read": {
			data:    lines(lineCreatePR) + lineStatusUpdate[:50],
			wantIDs: []string{"0b3c5a0e-1"},
			wantEnd: Position(len(lines(lineCreatePR))),
		},
		"positions count from base": {
			data:    lines(lineCreatePR),
			base:    1000,
			wantIDs: []string{"0b3c5a0e-1"},
			wantEnd: 1000 + Position(len(lines(lineCreatePR))),
		},
		"empty lines are skipped": {
			data:    "\n" + lines(lineCreatePR),
			wantIDs: []string{"0b3c5a0e-1"},
			wantEnd: Position(1 + len(lines(lineCreatePR))),
		},
		"nothing complete": {
			data:    lineCreatePR[:10],
			wantIDs: []string{},
			wantEnd: 0,
		},
		"a complete line that is not JSON is an error with its position": {
			data:    lines(lineCreatePR, "{not json"),
			wantErr: "parse audit event at byte " + strconv.Itoa(len(lines(lineCreatePR))),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			entries, end, err := parseEntries([]byte(tc.data), tc.base)
			if !succeeded(t, err, tc.wantErr) {
				return
			}
			ids := []string{}
			for _, e := range entries {
				ids = append(ids, string(e.event.AuditID))
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if end != tc.wantEnd {
				t.Errorf("end %d, want %d", end, tc.wantEnd)
			}
		})
	}
}

func writeLog(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAuditLogRead(t *testing.T) {
	content := lines(lineCreatePR, lineStatusUpdate, lineMarker, lineConflict)
	afterFirst := Position(len(lines(lineCreatePR)))
	cases := map[string]struct {
		from, to Position
		wantIDs  []string
		wantErr  string
	}{
		"the whole log, without markers": {
			from: 0, to: -1,
			wantIDs: []string{"0b3c5a0e-1", "0b3c5a0e-2", "0b3c5a0e-3"},
		},
		"from a position to the end": {
			from: afterFirst, to: -1,
			wantIDs: []string{"0b3c5a0e-2", "0b3c5a0e-3"},
		},
		"between two positions": {
			from: 0, to: afterFirst,
			wantIDs: []string{"0b3c5a0e-1"},
		},
		"a range ending inside a line stops before it": {
			from: 0, to: afterFirst + 10,
			wantIDs: []string{"0b3c5a0e-1"},
		},
		"the end is empty": {
			from: Position(len(content)), to: -1,
			wantIDs: []string{},
		},
		"a position inside a line is refused": {
			from: 5, to: -1,
			wantErr: "not at the start of a line",
		},
		"a position past the end means the file was truncated or rotated": {
			from: Position(len(content)) + 1, to: -1,
			wantErr: "truncated or rotated",
		},
	}
	path := writeLog(t, content)
	l := NewAuditLog(path, nil)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			events, err := l.Read(tc.from, tc.to)
			if !succeeded(t, err, tc.wantErr) {
				return
			}
			if diff := cmp.Diff(tc.wantIDs, auditIDs(events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuditLogReadWhileWritten: a line half written when the log is read is
// not returned, and is returned whole by the next read.
func TestAuditLogReadWhileWritten(t *testing.T) {
	half := len(lineStatusUpdate) / 2
	path := writeLog(t, lines(lineCreatePR)+lineStatusUpdate[:half])
	l := NewAuditLog(path, nil)
	events, err := l.Read(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0b3c5a0e-1"}, auditIDs(events)); diff != "" {
		t.Fatalf("first read (-want +got):\n%s", diff)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(lineStatusUpdate[half:] + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	events, err = l.Read(0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"0b3c5a0e-1", "0b3c5a0e-2"}, auditIDs(events)); diff != "" {
		t.Fatalf("second read (-want +got):\n%s", diff)
	}
}

// fakeAuditedCluster is a clientset whose ConfigMap GETs are answered 404
// and written to an audit log, after delay (0: before the answer, as the
// blocking audit mode does; negative: never).
func fakeAuditedCluster(t *testing.T, path string, delay time.Duration) *fake.Clientset {
	t.Helper()
	var mu sync.Mutex
	write := func(name string) {
		mu.Lock()
		defer mu.Unlock()
		ev := auditv1.Event{
			Level: auditv1.LevelMetadata, AuditID: "marker", Stage: auditv1.StageResponseComplete,
			RequestURI: "/api/v1/namespaces/default/configmaps/" + name, Verb: "get",
			ObjectRef:      &auditv1.ObjectReference{Resource: "configmaps", Namespace: "default", Name: name, APIVersion: "v1"},
			ResponseStatus: &metav1.Status{Code: 404},
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Error(err)
			return
		}
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		if _, err := f.Write(append(b, '\n')); err != nil {
			t.Error(err)
		}
	}
	kube := fake.NewClientset()
	kube.PrependReactor("get", "configmaps", func(action clienttesting.Action) (bool, runtime.Object, error) {
		name := action.(clienttesting.GetAction).GetName()
		switch {
		case delay == 0:
			write(name)
		case delay > 0:
			go func() {
				time.Sleep(delay)
				write(name)
			}()
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	})
	return kube
}

func appendLines(t *testing.T, path string, ls ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines(ls...)); err != nil {
		t.Fatal(err)
	}
}

func TestAuditLogFlush(t *testing.T) {
	cases := map[string]struct {
		delay   time.Duration
		timeout time.Duration
		wantErr string
	}{
		"the marker is written before the answer (blocking mode)": {},
		"the marker is written later (batch mode)":                {delay: 300 * time.Millisecond},
		"the marker never comes": {
			delay: -1, timeout: 300 * time.Millisecond,
			wantErr: "is not in it after 300ms",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := writeLog(t, lines(lineCreatePR))
			l := NewAuditLog(path, fakeAuditedCluster(t, path, tc.delay))
			l.FlushTimeout = tc.timeout
			before, err := l.Flush(ctx)
			if !succeeded(t, err, tc.wantErr) {
				return
			}
			// A step: two requests.
			appendLines(t, path, lineStatusUpdate, lineConflict)
			events, after, err := l.Since(ctx, before)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"0b3c5a0e-2", "0b3c5a0e-3"}, auditIDs(events)); diff != "" {
				t.Errorf("events of the step (-want +got):\n%s", diff)
			}
			// Nothing since.
			events, _, err = l.Since(ctx, after)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != 0 {
				t.Errorf("events after the step: %v, want none", auditIDs(events))
			}
			// Before the first position: the line written before it.
			events, err = l.Read(0, before)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{"0b3c5a0e-1"}, auditIDs(events)); diff != "" {
				t.Errorf("events before the first flush (-want +got):\n%s", diff)
			}
		})
	}
}

func parse(t *testing.T, ls ...string) []auditv1.Event {
	t.Helper()
	entries, _, err := parseEntries([]byte(lines(ls...)), 0)
	if err != nil {
		t.Fatal(err)
	}
	var events []auditv1.Event
	for _, e := range entries {
		events = append(events, e.event)
	}
	return events
}

func TestRequestOf(t *testing.T) {
	cases := map[string]struct {
		line       string
		want       Request
		wantString string
		wantCode   int32
	}{
		"aggregated API": {
			line:       lineCreatePR,
			want:       Request{Verb: "create", Group: "porch.kpt.dev", Resource: "packagerevisions"},
			wantString: "create porch.kpt.dev/packagerevisions",
			wantCode:   201,
		},
		"subresource": {
			line:       lineConflict,
			want:       Request{Verb: "update", Group: "config.porch.kpt.dev", Resource: "packagevariants/status"},
			wantString: "update config.porch.kpt.dev/packagevariants/status",
			wantCode:   409,
		},
		"core group": {
			line:       lineListConfigMaps,
			want:       Request{Verb: "list", Resource: "configmaps"},
			wantString: "list configmaps",
			wantCode:   200,
		},
		"a watch the proxy aborted": {
			line:       lineAbortedWatch,
			want:       Request{Verb: "watch", Group: "porch.kpt.dev", Resource: "packagerevisions"},
			wantString: "watch porch.kpt.dev/packagerevisions",
			wantCode:   500,
		},
		"no resource: the path without the query": {
			line:       lineDiscovery,
			want:       Request{Verb: "get", Resource: "/apis"},
			wantString: "get /apis",
			wantCode:   200,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ev := parse(t, tc.line)[0]
			got := RequestOf(&ev)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("RequestOf (-want +got):\n%s", diff)
			}
			if s := got.String(); s != tc.wantString {
				t.Errorf("String() = %q, want %q", s, tc.wantString)
			}
			if c := CodeOf(&ev); c != tc.wantCode {
				t.Errorf("CodeOf = %d, want %d", c, tc.wantCode)
			}
		})
	}
}

func TestIsAbortedProxy(t *testing.T) {
	cases := map[string]struct {
		line string
		want bool
	}{
		"a watch whose client went away":   {line: lineAbortedWatch, want: true},
		"a completed request":              {line: lineCreatePR},
		"a failed request is not an abort": {line: lineConflict},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ev := parse(t, tc.line)[0]
			if got := IsAbortedProxy(&ev); got != tc.want {
				t.Errorf("IsAbortedProxy = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	events := parse(t, lineCreatePR, lineStatusUpdate, lineConflict, lineDiscovery, lineListConfigMaps)
	cases := map[string]struct {
		filters []Filter
		wantIDs []string
	}{
		"no filter selects all": {
			wantIDs: []string{"0b3c5a0e-1", "0b3c5a0e-2", "0b3c5a0e-3", "0b3c5a0e-4", "0b3c5a0e-5"},
		},
		"the controller's requests": {
			filters: []Filter{ByUser(ControllerUser)},
			wantIDs: []string{"0b3c5a0e-2", "0b3c5a0e-3", "0b3c5a0e-4", "0b3c5a0e-5"},
		},
		"kubectl's requests": {
			filters: []Filter{ByUserAgentPrefix("kubectl/")},
			wantIDs: []string{"0b3c5a0e-1"},
		},
		"the controller's writes to config.porch.kpt.dev": {
			filters: []Filter{ByUser(ControllerUser), ByGroup("config.porch.kpt.dev"), ByVerb("create", "update", "patch", "delete")},
			wantIDs: []string{"0b3c5a0e-2", "0b3c5a0e-3"},
		},
		"the core group excludes requests without a resource": {
			filters: []Filter{ByGroup("")},
			wantIDs: []string{"0b3c5a0e-5"},
		},
		"namespaced requests in one namespace": {
			filters: []Filter{ByNamespace("smoke"), Not(ByVerb("create"))},
			wantIDs: []string{"0b3c5a0e-2", "0b3c5a0e-3"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantIDs, auditIDs(Select(events, tc.filters...))); diff != "" {
				t.Errorf("selected (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize(parse(t, lineCreatePR, lineStatusUpdate, lineConflict, lineStatusUpdate, lineDiscovery))
	if s.Total != 5 {
		t.Errorf("Total = %d, want 5", s.Total)
	}
	if got := s.Count("update", "config.porch.kpt.dev", "packagevariants/status"); got != 3 {
		t.Errorf("status updates = %d, want 3", got)
	}
	if got := s.CountCode("update", "config.porch.kpt.dev", "packagevariants/status", 409); got != 1 {
		t.Errorf("status update conflicts = %d, want 1", got)
	}
	if got := s.CountCode("create", "porch.kpt.dev", "packagerevisions", 201); got != 1 {
		t.Errorf("packagerevision creates with 201 = %d, want 1", got)
	}
	if diff := cmp.Diff(map[int32]int{200: 3, 201: 1, 409: 1}, s.ByCode); diff != "" {
		t.Errorf("ByCode (-want +got):\n%s", diff)
	}
	want := "" +
		"1  get /apis                                           200:1\n" +
		"3  update config.porch.kpt.dev/packagevariants/status  200:2 409:1\n" +
		"1  create porch.kpt.dev/packagerevisions               201:1\n" +
		"5  total                                               200:3 201:1 409:1\n"
	if diff := cmp.Diff(want, s.String()); diff != "" {
		t.Errorf("String() (-want +got):\n%s", diff)
	}
}

// succeeded fails the test unless err contains wantErr, or is nil when
// wantErr is "", and reports whether there is a result to check.
func succeeded(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	if wantErr == "" {
		if err != nil {
			t.Fatal(err)
		}
		return true
	}
	if err == nil || !strings.Contains(err.Error(), wantErr) {
		t.Fatalf("error %v, want one containing %q", err, wantErr)
	}
	return false
}
