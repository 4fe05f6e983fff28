package soak

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
)

// logVerbosity is the most verbose level of the controllers' logs the
// soak keeps: their decisions (V(2)) and the actions of each plan (V(4)).
const logVerbosity = 4

// logSink files the controllers' log lines under the objects they name,
// in the monitor (monitor.logged), so that a violation's report shows
// what the controllers decided beside what happened to the objects. The
// event handlers' lines are left out: they would crowd out the rest.
type logSink struct {
	mon    *monitor
	values []any
}

// objectKeys are the log keys whose klog.ObjectRef names an object the
// monitor follows, by the kind it files them under.
var objectKeys = map[string]string{
	"packageVariant":    "PackageVariant",
	"packageVariantSet": "PackageVariantSet",
	"packageRevision":   "PackageRevision",
}

// loopKinds are the kinds whose work loop logs a sync's "key".
var loopKinds = map[string]string{
	packagevariant.ControllerName:    "PackageVariant",
	packagevariantset.ControllerName: "PackageVariantSet",
}

func (s *logSink) Init(logr.RuntimeInfo) {}

func (s *logSink) Enabled(level int) bool { return level <= logVerbosity }

func (s *logSink) Info(_ int, msg string, kv ...any) { s.keep(msg, kv) }

func (s *logSink) Error(err error, msg string, kv ...any) {
	s.keep("error: "+msg, append([]any{"err", err}, kv...))
}

func (s *logSink) WithValues(kv ...any) logr.LogSink {
	return &logSink{mon: s.mon, values: append(slices.Clip(s.values), kv...)}
}

func (s *logSink) WithName(string) logr.LogSink { return s }

func (s *logSink) keep(msg string, kv []any) {
	if strings.HasSuffix(msg, " event") {
		return
	}
	all := append(slices.Clip(s.values), kv...)
	var objects []string
	var loop, key string
	line := "log: " + msg
	for i := 0; i+1 < len(all); i += 2 {
		k := fmt.Sprint(all[i])
		switch v := all[i+1].(type) {
		case klog.ObjectRef:
			if kind := objectKeys[k]; kind != "" && v.Name != "" {
				objects = append(objects, kind+" "+v.Name)
			}
		case string:
			switch k {
			case "controller":
				loop = v
			case "key":
				key = v
			}
		}
		line += fmt.Sprintf(" %s=%v", k, all[i+1])
	}
	if kind := loopKinds[loop]; kind != "" && key != "" {
		_, name, _ := strings.Cut(key, "/")
		objects = append(objects, kind+" "+name)
	}
	if len(objects) > 0 {
		s.mon.logged(objects, line)
	}
}

// loggedLine is a log line of the controllers, and how many lines of its
// object's history were noted before it.
type loggedLine struct {
	after int
	line  string
}

// logged keeps a log line of the controllers under each object it names.
func (m *monitor) logged(objects []string, line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	line = m.stamp() + " " + line
	for _, o := range slices.Compact(slices.Sorted(slices.Values(objects))) {
		l := append(m.logs[o], loggedLine{after: m.noted[o], line: line})
		if len(l) > historyLen {
			l = l[len(l)-historyLen:]
		}
		m.logs[o] = l
	}
}

// timelineLocked is what happened to object and what the controllers
// logged of it, in the order it happened.
func (m *monitor) timelineLocked(object string) []string {
	h, l := m.history[object], m.logs[object]
	n := m.noted[object] - len(h) // lines of history noted before h[0]
	out := make([]string, 0, len(h)+len(l))
	for len(h) > 0 || len(l) > 0 {
		if len(l) > 0 && l[0].after <= n {
			out, l = append(out, l[0].line), l[1:]
			continue
		}
		out, h, n = append(out, h[0]), h[1:], n+1
	}
	return out
}

func TestLogSinkFilesLinesUnderTheirObjects(t *testing.T) {
	m := newMonitor(time.Now(), nil)
	m.mu.Lock()
	m.noteLocked("PackageRevision d1", "#1 ADDED Draft")
	m.mu.Unlock()
	logger := logr.New(&logSink{mon: m}).WithValues("controller", packagevariant.ControllerName)
	logger.WithValues("key", "ns/v1").V(2).Info("Sync failed; retrying", "err", errors.New("the server is busy"))
	logger.V(4).Info("Acting on the plan", "action", "write", "packageRevision", klog.KRef("ns", "d1"))
	logger.V(4).Info("PackageRevision event", "packageRevision", klog.KRef("ns", "d1"))
	logger.V(5).Info("Too verbose", "packageRevision", klog.KRef("ns", "d1"))
	logger.Error(errors.New("conflict"), "Could not write status", "packageVariant", klog.KRef("ns", "v1"))
	m.mu.Lock()
	m.noteLocked("PackageRevision d1", "#2 MODIFIED Draft")
	m.mu.Unlock()

	m.mu.Lock()
	defer m.mu.Unlock()
	unstamped := func(lines []string) []string {
		var out []string
		for _, l := range lines {
			_, rest, _ := strings.Cut(strings.TrimSpace(l), "s ")
			out = append(out, rest)
		}
		return out
	}
	want := map[string][]string{
		"PackageVariant v1": {
			"log: Sync failed; retrying controller=packagevariants key=ns/v1 err=the server is busy",
			"log: error: Could not write status controller=packagevariants err=conflict packageVariant=ns/v1",
		},
		"PackageRevision d1": {
			"#1 ADDED Draft",
			"log: Acting on the plan controller=packagevariants action=write packageRevision=ns/d1",
			"#2 MODIFIED Draft",
		},
	}
	for object, lines := range want {
		if diff := cmp.Diff(lines, unstamped(m.timelineLocked(object))); diff != "" {
			t.Errorf("timeline of %s (-want +got):\n%s", object, diff)
		}
	}
}
