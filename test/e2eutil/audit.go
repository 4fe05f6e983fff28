package e2eutil

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"
)

// Users of the local cluster, as the audit log names them.
const (
	// ControllerUser is variant-controller running with its ServiceAccount's
	// token (ServiceAccountKubeconfig).
	ControllerUser = "system:serviceaccount:variant-controller-system:variant-controller"
	// AdminUser is the local cluster's admin certificate: the tests, kubectl,
	// and also the Porch server and porchsim-apiserver (both run with the
	// admin kubeconfig; tell them apart by user agent).
	AdminUser = "kubernetes-admin"
)

// Audit markers: Flush makes a request that names a ConfigMap that does not
// exist, unique per Flush, and waits until that request is in the log.
const (
	markerNamespace = "default"
	markerPrefix    = "e2e-audit-flush-"
)

// DefaultFlushTimeout bounds how long Flush waits for its marker. With
// --audit-log-mode=blocking (hack/local-cluster.sh) the marker is in the file
// before the request returns, so the first look finds it; the bound is for a
// cluster that writes its log asynchronously (batch mode), or not at all.
const DefaultFlushTimeout = 60 * time.Second

// Position is a byte offset in the audit log at the start of a line: what a
// test takes before a step, to read only the events of the step afterwards.
// The zero Position is the start of the log.
type Position int64

// AuditLog reads the kube-apiserver's audit log (hack/local-cluster.sh with
// APISERVER_AUDIT_POLICY: JSON, one event per line, never rotated) so that a
// test can count the requests a step made: by whom, which verb on which
// resource, with which response code.
//
// Only complete lines are read: the apiserver may be writing one while it is
// read, and a partial line is left for the next read. Only the final event
// of each request is returned (every request has exactly one), and Flush's
// own marker requests are left out. The final event is ResponseComplete, or
// Panic when the handler panicked: the aggregator's proxy ends a streamed
// response (a watch on porch.kpt.dev) whose client went away by panicking
// with http.ErrAbortHandler, so such a watch is recorded as Panic with code
// 500 ("APIServer panic'd: net/http: abort Handler") and never as
// ResponseComplete. IsAbortedProxy tells them apart from real failures.
type AuditLog struct {
	path string
	kube kubernetes.Interface
	// FlushTimeout bounds Flush's wait (default DefaultFlushTimeout).
	FlushTimeout time.Duration

	mu sync.Mutex
	// scanned is where Flush starts looking for its next marker: the end of
	// the last marker found, a line boundary. Everything before it has been
	// searched already.
	scanned Position
}

// markerSeq makes marker names unique within the test binary.
var markerSeq atomic.Int64

// NewAuditLog reads the audit log at path. kube (the admin's clientset: its
// requests must be audited) makes Flush's marker requests.
func NewAuditLog(path string, kube kubernetes.Interface) *AuditLog {
	return &AuditLog{path: path, kube: kube}
}

// Path is the audit log's file.
func (l *AuditLog) Path() string { return l.path }

// Flush makes sure every request answered before the call is in the log, and
// returns the Position after them: it sends a marker request (a GET of a
// ConfigMap that does not exist, with a unique name) and waits until the
// marker's event is in the log. With the blocking audit mode every request's
// event is written before its response is finished, so everything answered
// before the marker was sent precedes the marker's line (the mode also makes
// the marker's own line present at once; the wait is for other modes).
// Requests still in flight when Flush is called (another process's, an open
// watch) may land on either side of the Position.
func (l *AuditLog) Flush(ctx context.Context) (Position, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	name := fmt.Sprintf("%s%d-%d-%d", markerPrefix, os.Getpid(), time.Now().UnixNano(), markerSeq.Add(1))
	_, err := l.kube.CoreV1().ConfigMaps(markerNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return 0, fmt.Errorf("send audit marker request: %w", err)
	}
	timeout := l.FlushTimeout
	if timeout <= 0 {
		timeout = DefaultFlushTimeout
	}
	deadline := time.Now().Add(timeout)
	for {
		entries, end, err := l.read(l.scanned, -1)
		if err != nil {
			return 0, err
		}
		for _, e := range entries {
			if isMarker(&e.event) && e.event.ObjectRef.Name == name {
				l.scanned = e.end
				return e.end, nil
			}
		}
		// Complete lines without the marker need no second look.
		l.scanned = end
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("flush audit log %s: the marker request (GET configmap %s/%s) is not in it after %s; "+
				"does the apiserver audit with hack/e2e/audit-policy.yaml?", l.path, markerNamespace, name, timeout)
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("flush audit log %s: %w", l.path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Read returns the final events (ResponseComplete, Panic) of the complete
// lines between from and to (to < 0: the end of the file), without Flush's
// markers.
func (l *AuditLog) Read(from, to Position) ([]auditv1.Event, error) {
	entries, _, err := l.read(from, to)
	if err != nil {
		return nil, err
	}
	var events []auditv1.Event
	for _, e := range entries {
		if !isMarker(&e.event) {
			events = append(events, e.event)
		}
	}
	return events, nil
}

// Since flushes the log and returns the events after from and the Position
// after them: the requests a step made, when from was taken (by Flush or
// Since) before the step.
func (l *AuditLog) Since(ctx context.Context, from Position) ([]auditv1.Event, Position, error) {
	to, err := l.Flush(ctx)
	if err != nil {
		return nil, 0, err
	}
	events, err := l.Read(from, to)
	return events, to, err
}

// entry is a request's final event and the Position after its line.
type entry struct {
	event auditv1.Event
	end   Position
}

// read parses the complete lines between from and to (to < 0: the end of
// the file) and returns their final events and the Position after the last
// complete line.
func (l *AuditLog) read(from, to Position) ([]entry, Position, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, 0, fmt.Errorf("open audit log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("stat audit log: %w", err)
	}
	size := Position(st.Size())
	if from < 0 || from > size {
		return nil, 0, fmt.Errorf("read audit log %s from %d: the file has only %d bytes (truncated or rotated?)", l.path, from, size)
	}
	if to < 0 || to > size {
		to = size
	}
	if to < from {
		return nil, 0, fmt.Errorf("read audit log %s: range %d-%d is backwards", l.path, from, to)
	}
	// One byte before from, to check that from is at the start of a line.
	start := from
	if from > 0 {
		start = from - 1
	}
	data := make([]byte, to-start)
	if _, err := f.ReadAt(data, int64(start)); err != nil && err != io.EOF {
		return nil, 0, fmt.Errorf("read audit log %s: %w", l.path, err)
	}
	if from > 0 {
		if data[0] != '\n' {
			return nil, 0, fmt.Errorf("read audit log %s: position %d is not at the start of a line", l.path, from)
		}
		data = data[1:]
	}
	return parseEntries(data, from)
}

// parseEntries decodes the complete lines of data, which starts at Position
// base, one JSON audit event each. Bytes after the last newline (a line being
// written) are left alone; the Position after the last complete line is
// returned. Events of other stages than the final ones (ResponseComplete,
// Panic) are skipped.
func parseEntries(data []byte, base Position) ([]entry, Position, error) {
	var entries []entry
	pos := 0
	for {
		nl := bytes.IndexByte(data[pos:], '\n')
		if nl < 0 {
			break
		}
		line := data[pos : pos+nl]
		lineStart := base + Position(pos)
		pos += nl + 1
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var ev auditv1.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, 0, fmt.Errorf("parse audit event at byte %d: %w", lineStart, err)
		}
		if ev.Stage != auditv1.StageResponseComplete && ev.Stage != auditv1.StagePanic {
			continue
		}
		entries = append(entries, entry{event: ev, end: base + Position(pos)})
	}
	return entries, base + Position(pos), nil
}

func isMarker(ev *auditv1.Event) bool {
	return ev.ObjectRef != nil && ev.ObjectRef.Resource == "configmaps" && ev.ObjectRef.APIGroup == "" &&
		ev.ObjectRef.Namespace == markerNamespace && strings.HasPrefix(ev.ObjectRef.Name, markerPrefix)
}

// abortHandlerMessage is what the audit records for a handler that panicked
// with http.ErrAbortHandler.
const abortHandlerMessage = "APIServer panic'd: net/http: abort Handler"

// IsAbortedProxy reports whether the event is a request the aggregator's
// proxy aborted because its client went away (see AuditLog): a watch that
// ended, not a server error, although its code is 500.
func IsAbortedProxy(e *auditv1.Event) bool {
	return e.Stage == auditv1.StagePanic && e.ResponseStatus != nil && e.ResponseStatus.Message == abortHandlerMessage
}

// A Filter selects audit events.
type Filter func(*auditv1.Event) bool

// ByUser selects the requests of one user (e.g. ControllerUser).
func ByUser(username string) Filter {
	return func(e *auditv1.Event) bool { return e.User.Username == username }
}

// ByUserAgentPrefix selects requests whose user agent starts with prefix:
// the Porch server, porchsim-apiserver, kubectl and the tests all use the
// admin's identity, and only their user agents tell them apart.
func ByUserAgentPrefix(prefix string) Filter {
	return func(e *auditv1.Event) bool { return strings.HasPrefix(e.UserAgent, prefix) }
}

// ByGroup selects requests for resources of an API group ("" is the core
// group; requests that name no resource, like discovery, have none).
func ByGroup(group string) Filter {
	return func(e *auditv1.Event) bool { return e.ObjectRef != nil && e.ObjectRef.APIGroup == group }
}

// ByNamespace selects requests in one namespace.
func ByNamespace(namespace string) Filter {
	return func(e *auditv1.Event) bool { return e.ObjectRef != nil && e.ObjectRef.Namespace == namespace }
}

// ByVerb selects requests with one of verbs (Kubernetes verbs: get, list,
// watch, create, update, patch, delete, deletecollection).
func ByVerb(verbs ...string) Filter {
	return func(e *auditv1.Event) bool {
		for _, v := range verbs {
			if e.Verb == v {
				return true
			}
		}
		return false
	}
}

// Not selects the events f does not.
func Not(f Filter) Filter {
	return func(e *auditv1.Event) bool { return !f(e) }
}

// Select returns the events every filter selects, in order.
func Select(events []auditv1.Event, filters ...Filter) []auditv1.Event {
	var out []auditv1.Event
next:
	for i := range events {
		for _, f := range filters {
			if !f(&events[i]) {
				continue next
			}
		}
		out = append(out, events[i])
	}
	return out
}

// Request is what requests are counted by: a verb on a resource.
type Request struct {
	Verb string
	// Group is the API group: "" for the core group and for requests that
	// name no resource.
	Group string
	// Resource is the resource and its subresource ("packagevariants/status",
	// "packagerevisions/approval"), or, for a request that names no resource
	// (discovery, /openapi), its path.
	Resource string
}

// RequestOf is the Request an event records.
func RequestOf(e *auditv1.Event) Request {
	if e.ObjectRef == nil || e.ObjectRef.Resource == "" {
		path, _, _ := strings.Cut(e.RequestURI, "?")
		return Request{Verb: e.Verb, Resource: path}
	}
	r := Request{Verb: e.Verb, Group: e.ObjectRef.APIGroup, Resource: e.ObjectRef.Resource}
	if e.ObjectRef.Subresource != "" {
		r.Resource += "/" + e.ObjectRef.Subresource
	}
	return r
}

// String is "verb group/resource" ("update config.porch.kpt.dev/packagevariants/status"),
// or "verb resource" for the core group and for paths ("get configmaps",
// "get /apis").
func (r Request) String() string {
	if r.Group == "" {
		return r.Verb + " " + r.Resource
	}
	return r.Verb + " " + r.Group + "/" + r.Resource
}

// CodeOf is an event's response code (0 when it has none).
func CodeOf(e *auditv1.Event) int32 {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// Summary counts requests.
type Summary struct {
	Total int
	// ByRequest counts requests by verb and resource.
	ByRequest map[Request]int
	// ByCode counts requests by response code.
	ByCode map[int32]int
	// ByRequestCode counts requests by verb and resource, then response code.
	ByRequestCode map[Request]map[int32]int
}

// Summarize counts events.
func Summarize(events []auditv1.Event) Summary {
	s := Summary{ByRequest: map[Request]int{}, ByCode: map[int32]int{}, ByRequestCode: map[Request]map[int32]int{}}
	for i := range events {
		r, code := RequestOf(&events[i]), CodeOf(&events[i])
		s.Total++
		s.ByRequest[r]++
		s.ByCode[code]++
		if s.ByRequestCode[r] == nil {
			s.ByRequestCode[r] = map[int32]int{}
		}
		s.ByRequestCode[r][code]++
	}
	return s
}

// Count is the number of requests with verb on group/resource (resource
// with its subresource, as in Request).
func (s Summary) Count(verb, group, resource string) int {
	return s.ByRequest[Request{Verb: verb, Group: group, Resource: resource}]
}

// CountCode is the number of requests with verb on group/resource that got
// code.
func (s Summary) CountCode(verb, group, resource string, code int32) int {
	return s.ByRequestCode[Request{Verb: verb, Group: group, Resource: resource}][code]
}

// String is a table, one line per request kind (sorted by resource, then
// verb) with its count and its response codes, then the total; for reports
// and failure messages.
func (s Summary) String() string {
	reqs := make([]Request, 0, len(s.ByRequest))
	for r := range s.ByRequest {
		reqs = append(reqs, r)
	}
	sort.Slice(reqs, func(i, j int) bool {
		a, b := reqs[i], reqs[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Verb < b.Verb
	})
	type row struct{ count, request, codes string }
	rows := make([]row, 0, len(reqs)+1)
	for _, r := range reqs {
		rows = append(rows, row{fmt.Sprint(s.ByRequest[r]), r.String(), codes(s.ByRequestCode[r])})
	}
	rows = append(rows, row{fmt.Sprint(s.Total), "total", codes(s.ByCode)})
	countWidth, requestWidth := 0, 0
	for _, r := range rows {
		countWidth = max(countWidth, len(r.count))
		requestWidth = max(requestWidth, len(r.request))
	}
	var out strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&out, "%*s  %-*s  %s\n", countWidth, r.count, requestWidth, r.request, r.codes)
	}
	return out.String()
}

// codes is "200:3 404:1", sorted by code.
func codes(byCode map[int32]int) string {
	cs := make([]int32, 0, len(byCode))
	for c := range byCode {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%d:%d", c, byCode[c])
	}
	return strings.Join(parts, " ")
}
