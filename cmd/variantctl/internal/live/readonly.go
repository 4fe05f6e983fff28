package live

import (
	"fmt"
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// WriteRefusedError is what a read-only client answers to any request that
// could change the cluster. The request never leaves the process.
type WriteRefusedError struct {
	Method, URL string
}

func (e *WriteRefusedError) Error() string {
	return fmt.Sprintf("variantctl diff reads the cluster only: refused to send %s %s", e.Method, e.URL)
}

// Requests counts what a read-only client sent, for the diff's report of
// what it cost the cluster.
type Requests struct {
	sent atomic.Int64
}

// Sent is how many requests reached the transport (refused ones are not
// counted: they were never sent).
func (r *Requests) Sent() int64 {
	if r == nil {
		return 0
	}
	return r.sent.Load()
}

// ReadOnlyConfig returns a copy of cfg whose clients cannot change the
// cluster: every request goes through a transport that lets only GET and
// HEAD out (reads, lists and watches) and answers any other method with a
// WriteRefusedError without sending it. The guard sits below every client
// built from the config (typed, dynamic, discovery), so a write is
// impossible, not merely unused. Requests, when not nil, counts what is
// sent.
func ReadOnlyConfig(cfg *rest.Config, requests *Requests) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &readOnlyTransport{next: rt, requests: requests}
	})
	return out
}

type readOnlyTransport struct {
	next     http.RoundTripper
	requests *Requests
}

func (t *readOnlyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead:
	default:
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, &WriteRefusedError{Method: req.Method, URL: req.URL.Path}
	}
	if t.requests != nil {
		t.requests.sent.Add(1)
	}
	return t.next.RoundTrip(req)
}
